package capsfilter

import "testing"

func TestRedactRuntimeIDs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"unknown runtime_id rt-3f9a1c2e-1b2c-4d5e-8f90-123456789abc", "unknown runtime_id <redacted>"},
		{"RT-3F9A1C2E-1B2C-4D5E-8F90-123456789ABC upper", "<redacted> upper"},
		{"two rt-00000000-0000-4000-8000-000000000000,rt-11111111-1111-4111-8111-111111111111", "two <redacted>,<redacted>"},
		{"rt-does-not-exist stays", "rt-does-not-exist stays"},
		{"no id", "no id"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := RedactRuntimeIDs(tc.in); got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
			if ContainsRuntimeID(tc.in) != (tc.in != tc.want) {
				t.Fatalf("ContainsRuntimeID disagrees with redaction")
			}
		})
	}
}
