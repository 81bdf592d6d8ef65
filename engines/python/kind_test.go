package python

import (
	"encoding/json"
	"strings"
	"testing"
)

// kindOf reads the wrapper's events from their prefix and anything else in
// full; both ways give the kind a full parse gives, for every shape the
// wrapper writes and for forgeries that do not start as the wrapper does.
func TestKindOf(t *testing.T) {
	for _, tc := range []struct{ ev, want string }{
		// The wrapper's own events (json.dumps with separators=(',', ':')).
		{`{"kind":"ready"}`, "ready"},
		{`{"kind":"turn_done","envelope":{"ok":true,"result":1}}`, "turn_done"},
		{`{"kind":"turn_done"}`, "turn_done"},
		{`{"kind":"trigger","function_id":"a::b","payload":"{}","timeout_ms":0}`, "trigger"},
		{`{"kind":"sleep","seconds":0.5}`, "sleep"},
		// Not the wrapper's shape: parsed in full.
		{`{ "kind": "trigger" }`, "trigger"},
		{`{"envelope":{},"kind":"turn_done"}`, "turn_done"},
		{`{"kind":"turn\u005fdone"}`, "turn_done"},
		{`{"kind":"tu\"rn"}`, `tu"rn`},
		{`{"kind":""}`, ""},
		{`{"kind":"` + strings.Repeat("k", maxKindLen+1) + `"}`, strings.Repeat("k", maxKindLen+1)},
		{`{"kind":5}`, ""},
		{`not json`, ""},
		{``, ""},
	} {
		if got := kindOf([]byte(tc.ev)); got != tc.want {
			t.Errorf("kindOf(%s) = %q, want %q", tc.ev, got, tc.want)
		}
		var full struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal([]byte(tc.ev), &full) == nil && full.Kind != tc.want {
			t.Errorf("%s: the table says %q, a full parse %q", tc.ev, tc.want, full.Kind)
		}
	}
}

// BenchmarkKindOf is the kind of a turn_done that carries a 1 MiB result.
func BenchmarkKindOf(b *testing.B) {
	ev := []byte(`{"kind":"turn_done","envelope":{"ok":true,"result":"` + strings.Repeat("x", 1<<20) + `"}}`)
	for b.Loop() {
		if kindOf(ev) != "turn_done" {
			b.Fatal("wrong kind")
		}
	}
}
