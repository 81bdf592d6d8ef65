package core

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
)

var uuidV4 = regexp.MustCompile(`^rt-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// A tagged runtime id is still "rt-" + a UUID v4 — its tag in the first four
// hex digits, every other random bit left — and the tag reads back.
func TestTaggedRuntimeIDs(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewTaggedRuntimeID("a1b2")
		if !uuidV4.MatchString(id) || RuntimeTag(id) != "a1b2" || seen[id] {
			t.Fatalf("%q", id)
		}
		if _, err := uuid.Parse(id[3:]); err != nil {
			t.Fatal(err)
		}
		seen[id] = true
	}
	if id := NewTaggedRuntimeID(""); !uuidV4.MatchString(id) {
		t.Fatalf("%q", id)
	}
	for _, bad := range []string{"", "rt-", "x-12345678", "rt-12"} {
		if RuntimeTag(bad) != "" {
			t.Fatalf("RuntimeTag(%q) = %q", bad, RuntimeTag(bad))
		}
	}
}

type recordForward struct {
	got []string
	res json.RawMessage
	err error
}

func (f *recordForward) Forward(ctx context.Context, functionID string, payload json.RawMessage, timeout time.Duration) (json.RawMessage, error) {
	f.got = append(f.got, functionID)
	return f.res, f.err
}

// Only a call on the shared id for a runtime this worker does not know,
// minted under another tag, is forwarded — to that tag's per-worker id; a
// worker that answers it serves no such id means the runtime expired.
func TestOnlyForeignRuntimesAreForwarded(t *testing.T) {
	reg := NewRegistry(nil)
	reg.Tag = "aaaa"
	fw := &recordForward{res: json.RawMessage(`{"stdout":"","stderr":"","exit_code":0,"success":true,"duration_ms":1,"result":7}`)}
	s := &RunService{Registry: reg, Forward: fw}
	foreign := NewTaggedRuntimeID("bbbb")
	mine := NewTaggedRuntimeID("aaaa")
	for _, tc := range []struct {
		fn, id, want string
	}{
		{FnRun, foreign, "code-runner::run@bbbb"},
		{WorkerID(FnRun, "aaaa"), foreign, ""}, // arrived on a per-worker id: served here
		{FnRun, mine, ""},
	} {
		fw.got = nil
		call := &Call{FunctionID: tc.fn}
		if got := s.forwardFor(call, FnRun, tc.id); got != tc.want {
			t.Fatalf("%s %s: forward to %q, want %q", tc.fn, tc.id, got, tc.want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := s.forward(ctx, &Call{FunctionID: FnRun}, "code-runner::run@bbbb", foreign, time.Second)
	if err != nil || string(res) != string(fw.res) {
		t.Fatalf("%s %v", res, err)
	}
	fw.err = &RemoteError{Code: "function_not_found", Message: "Function code-runner::run@bbbb not found"}
	if _, err := s.forward(ctx, &Call{FunctionID: FnRun}, "code-runner::run@bbbb", foreign, time.Second); err == nil || err.Error() != ErrExpired(foreign).Error() {
		t.Fatalf("a departed worker's runtime: %v", err)
	}
	// A tag no worker was ever seen with: the id was never issued.
	s.PeerSeen = func(tag string) bool { return tag == "aaaa" }
	if _, err := s.forward(ctx, &Call{FunctionID: FnRun}, "code-runner::run@bbbb", foreign, time.Second); err == nil || err.Error() != ErrUnknownRuntime(foreign).Error() {
		t.Fatalf("a never-seen worker's id: %v", err)
	}
	// Ids not in the minted form are nobody's: never forwarded.
	for _, id := range []string{"rt-does-not-exist", "rt-x", "rt-BBBB0000-0000-4000-8000-000000000000"} {
		if got := s.forwardFor(&Call{FunctionID: FnRun}, FnRun, id); got != "" {
			t.Fatalf("%q forwarded to %q", id, got)
		}
	}
	fw.err = &RemoteError{Code: "code-runner::timeout", Message: "code-runner::timeout: execution exceeded its deadline"}
	if _, err := s.forward(ctx, &Call{FunctionID: FnRun}, "code-runner::run@bbbb", foreign, time.Second); err == nil || err.Error() != "code-runner::timeout: execution exceeded its deadline" {
		t.Fatalf("a remote code-runner error: %v", err)
	}
}
