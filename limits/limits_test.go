package limits

import (
	"testing"
)

// TestLimitTextsAreTheContractsWords pins the two size-refusal shapes every
// engine builds its texts from, with the limits they are used with.
func TestLimitTextsAreTheContractsWords(t *testing.T) {
	tests := []struct{ got, want string }{
		{OverLimit("function id", 513, MaxFunctionIDBytes), "function id is 513 bytes; the limit is 512"},
		{OverLimit("description", 4097, MaxDescriptionBytes), "description is 4097 bytes; the limit is 4096"},
		{OverLimit("payload", 1048577, MaxPayloadBytes), "payload is 1048577 bytes; the limit is 1048576"},
		{OverLimit("action", 600, MaxActionBytes), "action is 600 bytes; the limit is 512"},
		{OverLimit("trigger config", 1048580, MaxTriggerConfigBytes), "trigger config is 1048580 bytes; the limit is 1048576"},
		{OverMax("function_id", 513, MaxFunctionIDBytes), "function_id is 513 bytes; max 512"},
		{OverMax("code", 1048577, MaxCodeBytes), "code is 1048577 bytes; max 1048576"},
		{OverMax("source", 1048577, MaxCodeBytes), "source is 1048577 bytes; max 1048576"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
