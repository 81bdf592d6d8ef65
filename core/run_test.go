package core

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/code-runner-go/code-runner/limits"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/internal/jsonx"
)

type harness struct {
	reg    *Registry
	node   *fakeEngine
	py     *fakeEngine
	router *Router
	tr     *recordingTransport
}

func newHarness(t *testing.T, mut func(*configsvc.Config)) *harness {
	h := &harness{reg: NewRegistry(nil), node: &fakeEngine{lang: LangNode}, py: &fakeEngine{lang: LangPython}, tr: &recordingTransport{}}
	svc := &RunService{Registry: h.reg, Engines: map[Lang]Engine{LangNode: h.node, LangPython: h.py}}
	h.router = NewRouter(snapWith(mut).Config, "test", h.tr, nil)
	h.router.Handle(FnRun, Route{Decode: decodeRunCall, Terminal: svc.Handle, Stages: RunStages()})
	return h
}

func (h *harness) run(t *testing.T, payload string) (*RunResponse, *Error) {
	t.Helper()
	res, err := h.router.Invoke(context.Background(), FnRun, json.RawMessage(payload), nil)
	if err != nil {
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("non-wire error %v", err)
		}
		return nil, ce
	}
	return res.(*RunResponse), nil
}

func TestRunOneShot(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.run(t, `{"lang":"node","code":"return 4"}`)
	if err != nil {
		t.Fatal(err)
	}
	res.DurationMS = 0 // wall-clock time; the wire shape is what is compared
	b, _ := json.Marshal(res)
	if string(b) != `{"stdout":"","stderr":"","exit_code":0,"success":true,"duration_ms":0,"result":4}` {
		t.Fatalf("wire %s", b)
	}
	if h.node.destroyed.Load() != 1 || h.reg.SlotsInUse() != 0 {
		t.Fatal("one-shot runtime not destroyed or slot kept")
	}
	res, _ = h.run(t, `{"lang":"python","code":"throw boom"}`)
	res.DurationMS = 0
	b, _ = json.Marshal(res)
	if string(b) != `{"stdout":"","stderr":"boom\n","exit_code":1,"success":false,"duration_ms":0,"result":null}` {
		t.Fatalf("failure wire %s", b)
	}
}

func TestRunKeepLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.run(t, `{"lang":"python","code":"set kept","keep":true}`)
	if err != nil || res.RuntimeID == "" {
		t.Fatalf("%+v %v", res, err)
	}
	id := res.RuntimeID
	res, err = h.run(t, `{"runtime_id":"`+id+`","code":"get"}`)
	if err != nil || string(res.Result) != `"kept"` || res.RuntimeID != id {
		t.Fatalf("reuse %+v %v", res, err)
	}
	if _, err := h.run(t, `{"runtime_id":"`+id+`","lang":"node","code":"get"}`); err == nil ||
		err.Error() != "code-runner::invalid_request: this runtime runs python; omit `lang` or pass the matching one — languages cannot be mixed in one runtime" {
		t.Fatalf("lang mismatch: %v", err)
	}
	if _, err := h.run(t, `{"runtime_id":"`+id+`","code":"get","memory_mb":64}`); err == nil ||
		err.Error() != "code-runner::invalid_request: `memory_mb` is fixed when a runtime is created; omit it when passing `runtime_id`" {
		t.Fatalf("memory_mb with runtime_id: %v", err)
	}
	// A tenant failure on a kept runtime echoes the id and keeps the runtime.
	res, err = h.run(t, `{"runtime_id":"`+id+`","code":"throw x"}`)
	if err != nil || res.RuntimeID != id || res.ExitCode != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	// A kill tombstones it: held callers get expired.
	if _, err := h.run(t, `{"runtime_id":"`+id+`","code":"kill"}`); err == nil || err.Code != CodeTimeout {
		t.Fatalf("kill: %v", err)
	}
	if _, err := h.run(t, `{"runtime_id":"`+id+`","code":"get"}`); err == nil || err.Error() != ErrExpired(id).Error() {
		t.Fatalf("after kill: %v", err)
	}
	if h.reg.SlotsInUse() != 0 {
		t.Fatal("killed runtime still holds its slot")
	}
}

func TestRunKeepFailureLeavesNothing(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.run(t, `{"lang":"node","code":"throw no","keep":true}`)
	if err != nil || res.RuntimeID != "" {
		t.Fatalf("%+v %v", res, err)
	}
	if len(h.reg.Kept()) != 0 || h.reg.SlotsInUse() != 0 || h.node.destroyed.Load() != 1 {
		t.Fatal("failed keep left something behind")
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), "runtime_id") {
		t.Fatalf("runtime_id must be absent: %s", b)
	}
}

// A keep run whose runtime dies between the run's end and its adoption
// never answers success without an id: it fails, and leaves nothing behind.
func TestRunKeepRuntimeDeadAtAdoptionFails(t *testing.T) {
	h := newHarness(t, nil)
	res, err := h.run(t, `{"lang":"node","code":"dieafter","keep":true}`)
	if err == nil || err.Error() != ErrLostMidRun().Error() {
		t.Fatalf("got %+v, %v; want %v", res, err, ErrLostMidRun())
	}
	if len(h.reg.Kept()) != 0 || h.reg.SlotsInUse() != 0 || h.node.destroyed.Load() != 1 {
		t.Fatalf("dead keep left something behind: kept %d slots %d destroyed %d", len(h.reg.Kept()), h.reg.SlotsInUse(), h.node.destroyed.Load())
	}
}

func TestRunValidationOrder(t *testing.T) {
	h := newHarness(t, nil)
	tests := []struct{ payload, want string }{
		{`{"code":"x"}`, "code-runner::invalid_request: `lang` is required when there is no `runtime_id`: \"node\" or \"python\""},
		{`{"code":"x","runtime_id":"rt-does-not-exist"}`, "code-runner::runtime_not_found: unknown runtime_id rt-does-not-exist"},
		{`{"code":"` + strings.Repeat("a", limits.MaxCodeBytes+1) + `","lang":"node"}`, "code-runner::invalid_request: code is 1048577 bytes; max 1048576"},
	}
	for _, tc := range tests {
		if _, err := h.run(t, tc.payload); err == nil || err.Error() != tc.want {
			t.Fatalf("got %v want %s", err, tc.want)
		}
	}
	h.py.unavail = errors.New("no wasm")
	if _, err := h.run(t, `{"code":"x","lang":"python"}`); err == nil ||
		err.Error() != "code-runner::engine: the python engine failed to start on this worker; check its boot logs" {
		t.Fatalf("python unavailable: %v", err)
	}
}

func TestRunCapacitySharedByBothLanguages(t *testing.T) {
	h := newHarness(t, func(c *configsvc.Config) { c.MaxRuntimes = 2 })
	if _, err := h.run(t, `{"lang":"node","code":"return 1","keep":true}`); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run(t, `{"lang":"python","code":"return 1","keep":true}`); err != nil {
		t.Fatal(err)
	}
	for _, lang := range []string{"node", "python"} {
		if _, err := h.run(t, `{"lang":"`+lang+`","code":"return 1"}`); err == nil || err.Error() != "code-runner::capacity: all 2 runtime slots are in use" {
			t.Fatalf("%s third runtime: %v", lang, err)
		}
	}
	// The live value applies on the next call.
	reconfigure(h.router, snapWith(func(c *configsvc.Config) { c.MaxRuntimes = 3 }))
	if _, err := h.run(t, `{"lang":"node","code":"return 1"}`); err != nil {
		t.Fatalf("after raising max_runtimes: %v", err)
	}
}

func TestRunTimeoutFromLiveConfig(t *testing.T) {
	h := newHarness(t, func(c *configsvc.Config) { c.DefaultTimeoutMS = 30; c.MaxTimeoutMS = 60 })
	start := time.Now()
	if _, err := h.run(t, `{"lang":"node","code":"block","timeout_ms":0}`); err == nil || err.Code != CodeTimeout {
		t.Fatalf("%v", err)
	}
	// timeout_ms 100000 is clamped to max_timeout_ms (60 ms): the run ends,
	// which is the behaviour asserted (no wall-clock bound).
	if _, err := h.run(t, `{"lang":"node","code":"block","timeout_ms":100000}`); err == nil || err.Code != CodeTimeout {
		t.Fatalf("%v", err)
	}
	_ = start
	cfg := configsvc.Defaults()
	cfg.DefaultTimeoutMS, cfg.MaxTimeoutMS = 5000, 300
	if got := RunBudget(0, &cfg); got != 300*time.Millisecond {
		t.Fatalf("default above max not clamped: %v", got)
	}
	if got := RunBudget(40, &cfg); got != 40*time.Millisecond {
		t.Fatalf("%v", got)
	}
	cfg.MaxTimeoutMS = 0
	if got := RunBudget(40, &cfg); got != time.Millisecond {
		t.Fatalf("floor of 1 ms: %v", got)
	}
}

func TestGuestTimeout(t *testing.T) {
	cfg := configsvc.Defaults()
	now := time.Now()
	tests := []struct {
		name     string
		req      uint64
		deadline time.Time
		want     time.Duration
	}{
		{"default when absent", 0, time.Time{}, 5 * time.Second},
		{"clamped to max", 60000, time.Time{}, 30 * time.Second},
		{"clamped to remaining minus 200ms", 30000, now.Add(time.Second), 800 * time.Millisecond},
		{"at least 1 ms", 30000, now.Add(100 * time.Millisecond), time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := GuestTimeout(tc.req, tc.deadline, now, &cfg); got != tc.want {
				t.Fatalf("got %v want %v", got, tc.want)
			}
		})
	}
}

func TestRunOutputCapsAndBridgePolicy(t *testing.T) {
	h := newHarness(t, func(c *configsvc.Config) { c.MaxStreamBytes = 60; c.MaxResultBytes = 10 })
	res, err := h.run(t, `{"lang":"node","code":"print `+strings.Repeat("x", 500)+`"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stdout) != 60 || !strings.Contains(res.Stdout, "[…stdout truncated: was ~0 KB; middle omitted]") || !res.Success {
		t.Fatalf("stdout not capped: %q", res.Stdout)
	}
	res, _ = h.run(t, `{"lang":"node","code":"return [1,2,3,4,5,6,7,8]"}`)
	if !strings.Contains(string(res.Result), "(8 array elements)") {
		t.Fatalf("result not capped: %s", res.Result)
	}
}

func TestRunBridgePolicy(t *testing.T) {
	h := newHarness(t, nil)
	// A denied id never reaches the transport; an allowed look-alike does.
	res, _ := h.run(t, `{"lang":"node","code":"trigger harness::state::get"}`)
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "operator-only function `harness::state::get` is not available through code-runner") {
		t.Fatalf("%+v", res)
	}
	res, _ = h.run(t, `{"lang":"node","code":"trigger state::get"}`)
	if string(res.Result) != `"reached state::get"` {
		t.Fatalf("%+v", res)
	}
	if len(h.tr.calls) != 1 || h.tr.calls[0].FunctionID != "state::get" {
		t.Fatalf("transport saw %+v", h.tr.calls)
	}
	if h.tr.calls[0].Timeout <= 0 {
		t.Fatal("guest call carries no timeout")
	}
}

func TestRedactionForUnheldCallers(t *testing.T) {
	id := NewRuntimeID()
	terminal := func(ctx context.Context, c *Call) (any, error) { return nil, ErrExpired(id) }
	p := Route{Terminal: terminal, Stages: RunStages()}
	_, err := p.Serve(context.Background(), snapWith(nil), &Call{})
	if err == nil || err.Error() != "code-runner::engine: the run's runtime was reaped or lost mid-run; retry" {
		t.Fatalf("unheld: %v", err)
	}
	_, err = p.Serve(context.Background(), snapWith(nil), &Call{Held: id})
	if err == nil || err.Error() != ErrExpired(id).Error() {
		t.Fatalf("held: %v", err)
	}
	terminal2 := func(ctx context.Context, c *Call) (any, error) {
		return nil, Errorf(CodeEngine, "lost %s", id)
	}
	p2 := Route{Terminal: terminal2, Stages: RunStages()}
	_, err = p2.Serve(context.Background(), snapWith(nil), &Call{})
	if err == nil || capsfilter.ContainsRuntimeID(err.Error()) {
		t.Fatalf("an id reached an unheld caller: %v", err)
	}
}

func TestTeardownRuntime(t *testing.T) {
	h := newHarness(t, nil)
	svc := &RunService{Registry: h.reg, Engines: map[Lang]Engine{LangNode: h.node}}
	res, _ := h.run(t, `{"lang":"node","code":"return 1","keep":true}`)
	td, err := svc.TeardownRuntime(context.Background(), res.RuntimeID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(td)
	if string(b) != `{"runtime_id":"`+res.RuntimeID+`","torn_down":true,"unregistered":["a::one","b::two"]}` {
		t.Fatalf("%s", b)
	}
	// Explicit teardown does not tombstone: the id is simply unknown now.
	if _, err := svc.TeardownRuntime(context.Background(), res.RuntimeID); err == nil || err.Error() != ErrUnknownRuntime(res.RuntimeID).Error() {
		t.Fatalf("second teardown: %v", err)
	}
}

func TestRunResponseKeepsHTMLCharacters(t *testing.T) {
	b, err := jsonx.Marshal(&RunResponse{Stdout: "<a&b>\u2028", Result: json.RawMessage(`"<x>\u2029"`)})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); !strings.Contains(got, `"stdout":"<a&b>`+"\u2028"+`"`) || !strings.Contains(got, `"result":"<x>`+"\u2029"+`"`) {
		t.Fatalf("%s", got)
	}
	e, _ := jsonx.Marshal(Errorf(CodeHandlerError, "<&>"))
	if string(e) != `{"code":"code-runner::handler_error","message":"code-runner::handler_error: <&>"}` {
		t.Fatalf("%s", e)
	}
}

// TestRunNotesLanguageAndMode: the run service tells the call's notes the
// language and kind of runtime — a kept runtime's language from the
// registry when the request names only its id — and says nothing for a
// request it refused before knowing them.
func TestRunNotesLanguageAndMode(t *testing.T) {
	h := newHarness(t, nil)
	invoke := func(payload string) (string, any) {
		var got string
		ctx := WithCallNotes(context.Background(), func(l Lang, m string) { got = string(l) + "/" + m })
		res, err := h.router.Invoke(ctx, FnRun, json.RawMessage(payload), nil)
		if err != nil {
			return got, err
		}
		return got, res
	}
	if got, _ := invoke(`{"lang":"python","code":"return 1"}`); got != "python/one-shot" {
		t.Fatalf("one-shot noted %q", got)
	}
	got, res := invoke(`{"lang":"node","code":"return 1","keep":true}`)
	if got != "node/kept" {
		t.Fatalf("keep noted %q", got)
	}
	id := res.(*RunResponse).RuntimeID
	if got, _ := invoke(`{"runtime_id":"` + id + `","code":"return 2"}`); got != "node/kept" {
		t.Fatalf("a kept runtime's turn noted %q", got)
	}
	if got, _ := invoke(`{"code":"return 1"}`); got != "" {
		t.Fatalf("a request refused for its missing lang noted %q", got)
	}
}
