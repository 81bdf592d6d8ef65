package core

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
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

type fixedPeers []string

func (p fixedPeers) Peers(context.Context) ([]string, error) { return p, nil }

// New work this worker has no slot for goes once to the least-loaded other
// worker's per-worker id (contract §24.3); what arrived on a per-worker id
// is never spread again, and without another worker — or when that worker
// is full too — the answer is capacity.
func TestNewWorkWithoutAFreeSlotIsSpreadOnce(t *testing.T) {
	full := func(c *configsvc.Config) { c.MaxRuntimes = 0 }
	for _, tc := range []struct {
		name  string
		fn    string
		peers fixedPeers
		fwErr error
		want  string // forwarded-to id, "" when none
		code  Code   // "" for the forwarded answer
	}{
		{"spread to the least loaded", FnRun, fixedPeers{"bbbb", "cccc"}, nil, "code-runner::run@bbbb", ""},
		{"own tag skipped", FnRun, fixedPeers{"aaaa", "cccc"}, nil, "code-runner::run@cccc", ""},
		{"arrived on a per-worker id", WorkerID(FnRun, "aaaa"), fixedPeers{"bbbb"}, nil, "", CodeCapacity},
		{"no other worker", FnRun, nil, nil, "", CodeCapacity},
		{"the other is full too", FnRun, fixedPeers{"bbbb"}, &RemoteError{Code: string(CodeCapacity), Message: "code-runner::capacity: all 3 runtime slots are in use"}, "code-runner::run@bbbb", CodeCapacity},
		{"the other left", FnRun, fixedPeers{"bbbb"}, &RemoteError{Code: "function_not_found", Message: "gone"}, "code-runner::run@bbbb", CodeCapacity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, full)
			h.reg.Tag = "aaaa"
			fw := &recordForward{res: json.RawMessage(`{"stdout":"","stderr":"","exit_code":0,"success":true,"duration_ms":1,"result":9}`), err: tc.fwErr}
			svc := &RunService{Registry: h.reg, Engines: map[Lang]Engine{LangNode: h.node}, Forward: fw, Spread: tc.peers}
			h.router.Handle(tc.fn, Route{Decode: decodeRunCall, Terminal: svc.Handle, Stages: RunStages()})
			res, err := h.router.Invoke(context.Background(), tc.fn, json.RawMessage(`{"lang":"node","code":"return 9"}`), nil)
			if len(fw.got) > 1 || tc.want == "" && len(fw.got) != 0 || tc.want != "" && (len(fw.got) != 1 || fw.got[0] != tc.want) {
				t.Fatalf("forwarded to %v, want %q", fw.got, tc.want)
			}
			var ce *Error
			errors.As(err, &ce)
			switch {
			case tc.code == "" && (err != nil || res.(*RunResponse).Result == nil):
				t.Fatalf("%v %v", res, err)
			case tc.code != "" && (ce == nil || ce.Code != tc.code):
				t.Fatalf("answered %v, want %s", err, tc.code)
			}
			if h.node.created.Load() != 0 {
				t.Fatal("a runtime was made here without a slot")
			}
		})
	}
}

type listTransport string

func (l listTransport) Invoke(context.Context, Invocation) (json.RawMessage, error) {
	return json.RawMessage(l), nil
}

// On a 0.23 engine functions are keyed by (namespace, id): the same id
// served in another namespace is no owner of this worker's, and a row of
// this worker's namespace is ("" meaning "default"); a 0.22 engine's rows
// carry no namespace and all count.
func TestEngineOwnersCompareNamespaceAndID(t *testing.T) {
	rows := `{"functions":[{"function_id":"app::f","worker_name":"w-x","namespace":"team-x"},{"function_id":"app::g","worker_name":"w-d","namespace":"default"},{"function_id":"app::h","worker_name":"w-old"}]}`
	for _, tc := range []struct {
		ns, id, want string
	}{
		{"", "app::f", ""},
		{"", "app::g", "w-d"},
		{"team-x", "app::f", "w-x"},
		{"team-x", "app::g", ""},
		{"team-x", "app::h", "w-old"},
		{"", "app::h", "w-old"},
	} {
		o := &EngineOwners{Transport: listTransport(rows), Self: "me", Namespace: tc.ns}
		got, err := o.FunctionWorker(context.Background(), tc.id)
		if err != nil || got != tc.want {
			t.Fatalf("namespace %q, %s: owner %q %v, want %q", tc.ns, tc.id, got, err, tc.want)
		}
	}
}
