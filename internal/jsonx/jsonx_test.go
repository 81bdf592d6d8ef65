package jsonx

import (
	"encoding/json"
	"testing"
)

func TestMarshalKeepsCharactersRaw(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"html characters", "<&>", `"<&>"`},
		{"separators", "a\u2028b\u2029c", "\"a\u2028b\u2029c\""},
		{"raw message inside a struct", struct {
			R json.RawMessage `json:"r"`
		}{json.RawMessage(`"<a>&` + "\u2028" + `"`)}, `{"r":"<a>&` + "\u2028" + `"}`},
		{"escaped backslash before u2028 text", `\u2028`, `"\\u2028"`},
		{"control characters stay escaped", "\x01\n", `"\u0001\n"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got %s want %s", b, tc.want)
			}
			if !json.Valid(b) {
				t.Fatalf("invalid JSON %s", b)
			}
		})
	}
}
