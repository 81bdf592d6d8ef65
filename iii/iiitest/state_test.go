package iiitest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"
)

// The state module answers iii's shapes and keeps values for the engine's
// life; without it every state::* is function_not_found.
func TestStateModule(t *testing.T) {
	e, err := New(Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	call := func(fn string, in any) string {
		t.Helper()
		out, eb, err := e.Invoke(ctx, fn, in, nil)
		if err != nil {
			t.Fatal(err)
		}
		if eb != nil {
			return "error " + eb.Code
		}
		return string(out)
	}
	steps := []struct {
		fn   string
		in   any
		want string
	}{
		{"state::get", map[string]any{"scope": "s", "key": "a"}, `null`},
		{"state::set", map[string]any{"scope": "s", "key": "a", "value": map[string]any{"n": 1}}, `{"new_value":{"n":1}}`},
		{"state::set", map[string]any{"scope": "s", "key": "b", "value": "x"}, `{"new_value":"x"}`},
		{"state::set", map[string]any{"scope": "s", "key": "a", "value": map[string]any{"n": 2}}, `{"new_value":{"n":2},"old_value":{"n":1}}`},
		{"state::get", map[string]any{"scope": "s", "key": "a"}, `{"n":2}`},
		{"state::list", map[string]any{"scope": "s"}, `[{"n":2},"x"]`},
		{"state::list", map[string]any{"scope": "other"}, `[]`},
		{"state::update", map[string]any{"scope": "s", "key": "a", "ops": []any{
			map[string]any{"type": "increment", "path": "n", "by": 5},
			map[string]any{"type": "append", "path": "tags", "value": "t"},
			map[string]any{"type": "merge", "path": []string{"deep", "er"}, "value": map[string]any{"k": true}},
			map[string]any{"type": "set", "path": "gone", "value": 1},
			map[string]any{"type": "remove", "path": "gone"},
			map[string]any{"type": "merge", "value": 3},
		}}, `{"errors":[{"op_index":5,"code":"merge.value.not_object","message":"merge takes an object value"}],"new_value":{"deep":{"er":{"k":true}},"n":7,"tags":"t"},"old_value":{"n":2}}`},
		{"state::delete", map[string]any{"scope": "s", "key": "b"}, `{"old_value":"x"}`},
		{"state::delete", map[string]any{"scope": "s", "key": "b"}, `{}`},
		{"state::set", map[string]any{"key": "a", "value": 1}, `error deserialization_error`},
	}
	for i, s := range steps {
		if got := call(s.fn, s.in); got != s.want {
			t.Fatalf("step %d %s: %s, want %s", i, s.fn, got, s.want)
		}
	}
	if v, ok := e.State.Value("s", "a"); !ok || !json.Valid(v) {
		t.Fatalf("stored %s", v)
	}
	e.State.SetAvailable(false)
	if got := call("state::get", map[string]any{"scope": "s", "key": "a"}); got != "error function_not_found" {
		t.Fatalf("without the module: %s", got)
	}
}
