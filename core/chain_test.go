package core

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

func snapWith(mut func(*configsvc.Config)) *configsvc.Snapshot {
	c := configsvc.Defaults()
	if mut != nil {
		mut(&c)
	}
	return &configsvc.Snapshot{Config: c, Source: "test"}
}

func TestChainRunsStagesInOrder(t *testing.T) {
	var mu sync.Mutex
	var events []string
	rec := func(name string) Stage {
		return func(next Handler) Handler {
			return func(ctx context.Context, c *Call) (any, error) {
				mu.Lock()
				events = append(events, "in:"+name)
				mu.Unlock()
				res, err := next(ctx, c)
				mu.Lock()
				events = append(events, "out:"+name)
				mu.Unlock()
				return res, err
			}
		}
	}
	terminal := func(ctx context.Context, c *Call) (any, error) {
		events = append(events, "engine")
		return nil, nil
	}
	p := Route{Terminal: terminal, Stages: []Stage{rec("a"), rec("b"), rec("c")}}
	if _, err := p.Serve(context.Background(), snapWith(nil), &Call{}); err != nil {
		t.Fatal(err)
	}
	want := []string{"in:a", "in:b", "in:c", "engine", "out:c", "out:b", "out:a"}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("events %v want %v", events, want)
	}
}

// TestRunStagesOrder checks the run pipeline's effective order: bridge policy
// and timeout clamp before the engine; output cap, then redaction after it.
func TestRunStagesOrder(t *testing.T) {
	var sawBridge, sawBudget bool
	terminal := func(ctx context.Context, c *Call) (any, error) {
		sawBridge = c.Bridge != nil
		sawBudget = c.Budget == 1234*time.Millisecond
		// A response whose stdout quotes an id and is over the cap: the cap
		// must run (it sees the raw text) and redaction must not touch the
		// response body, only errors.
		return &RunResponse{Stdout: "0123456789abcdefghij", Result: json.RawMessage("1")}, nil
	}
	p := Route{Terminal: terminal, Stages: RunStages()}
	res, err := p.Serve(context.Background(), snapWith(func(c *configsvc.Config) { c.MaxStreamBytes = 10 }), &Call{TimeoutMS: 1234})
	if err != nil {
		t.Fatal(err)
	}
	if !sawBridge || !sawBudget {
		t.Fatalf("bridge attached=%v budget clamped=%v before the engine", sawBridge, sawBudget)
	}
	if got := res.(*RunResponse).Stdout; got == "0123456789abcdefghij" {
		t.Fatal("output cap did not run on the way out")
	}
}

// TestSwapWhileCallsInFlight swaps new configurations into the router while
// calls are running: each call must see exactly the snapshot of the table
// it started on, never a mix, and calls started after a swap see the new
// one.
func TestSwapWhileCallsInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int64, 64)
	terminal := func(ctx context.Context, c *Call) (any, error) {
		started <- c.Config.MaxResultBytes
		<-release
		// Read twice, after the swap happened: still the same snapshot.
		return [2]int64{c.Config.MaxResultBytes, c.Config.MaxStreamBytes}, nil
	}
	r := NewRouter(snapWith(func(c *configsvc.Config) { c.MaxResultBytes, c.MaxStreamBytes = 1, 1 }).Config, "test", nil, nil)
	r.Handle("x::f", Route{Terminal: terminal, Stages: RunStages()})
	invoke := func() [2]int64 {
		res, err := r.Invoke(context.Background(), "x::f", nil, nil)
		if err != nil {
			t.Error(err)
			return [2]int64{}
		}
		return res.([2]int64)
	}

	var wg sync.WaitGroup
	results := make(chan [2]int64, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- invoke()
		}()
	}
	for i := 0; i < 8; i++ {
		if v := <-started; v != 1 {
			t.Fatalf("call started on snapshot %d", v)
		}
	}
	// Swap while all eight are parked in the terminal handler.
	reconfigure(r, snapWith(func(c *configsvc.Config) { c.MaxResultBytes, c.MaxStreamBytes = 2, 2 }))
	var stop sync.WaitGroup
	stopCh := make(chan struct{})
	stop.Add(1)
	var lastSeq uint64
	go func() { // keep swapping during the whole test, under -race
		defer stop.Done()
		for n := int64(3); ; n++ {
			select {
			case <-stopCh:
				return
			default:
			}
			old, live := r.Swap(r.Provision(snapWith(func(c *configsvc.Config) { c.MaxResultBytes, c.MaxStreamBytes = n, n }).Config, "test"))
			if live.Seq != old.Seq+1 || live.Seq <= lastSeq {
				t.Errorf("seq went from %d to %d (last %d)", old.Seq, live.Seq, lastSeq)
				return
			}
			lastSeq = live.Seq
		}
	}()
	close(release)
	wg.Wait()
	close(results)
	for res := range results {
		if res != [2]int64{1, 1} {
			t.Fatalf("in-flight call finished on %v, want the table it started with", res)
		}
	}
	// A new call sees a later snapshot, whole.
	for i := 0; i < 50; i++ {
		go func() { <-started }()
		res := invoke()
		if res[0] == 1 || res[0] != res[1] {
			t.Fatalf("new call saw %v", res)
		}
	}
	close(stopCh)
	stop.Wait()
}

// TestAProvisionedTableIsNotLiveUntilSwapped: Provision changes nothing;
// Swap makes it live; a table provisioned before a route was added (or
// another swap) is provisioned again on the current table, so the route
// stays and Seq never repeats.
func TestAProvisionedTableIsNotLiveUntilSwapped(t *testing.T) {
	r := NewRouter(configsvc.Defaults(), "defaults", nil, nil)
	served := func(ctx context.Context, c *Call) (any, error) { return c.Config.MaxResultBytes, nil }
	r.Handle("x::a", Route{Terminal: served})
	c := configsvc.Defaults()
	c.MaxResultBytes = 7
	next := r.Provision(c, "reload")
	if got, _ := r.Invoke(context.Background(), "x::a", nil, nil); got == int64(7) || r.Live().Config.MaxResultBytes == 7 {
		t.Fatal("Provision made the new value live")
	}
	r.Handle("x::b", Route{Terminal: served}) // added after the provision
	old, live := r.Swap(next)
	if old.Seq != 1 || live.Seq != 2 || r.Live() != live || live.Source != "reload" {
		t.Fatalf("swap: old %+v live %+v", old, live)
	}
	for _, id := range []string{"x::a", "x::b"} {
		if got, err := r.Invoke(context.Background(), id, nil, nil); err != nil || got != int64(7) {
			t.Fatalf("%s after the swap: %v %v, want 7", id, got, err)
		}
	}
}

// TestStagesFollowTheSnapshot: a route whose stages depend on the
// configuration (a hook) gets the stages of each snapshot it is compiled
// for, and a swap changes them.
func TestStagesFollowTheSnapshot(t *testing.T) {
	r := NewRouter(configsvc.Defaults(), "defaults", nil, nil)
	tagStage := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (any, error) { return "staged", nil }
	}
	r.Handle("x::hook", Route{
		Terminal: func(context.Context, *Call) (any, error) { return "terminal", nil },
		StagesFor: func(s *configsvc.Snapshot) []Stage {
			if s.Config.InjectGuidance {
				return []Stage{tagStage}
			}
			return nil
		},
	})
	if got, _ := r.Invoke(context.Background(), "x::hook", nil, nil); got != "staged" {
		t.Fatalf("with inject_guidance on: %v", got)
	}
	off := configsvc.Defaults()
	off.InjectGuidance = false
	r.Swap(r.Provision(off, "test"))
	if got, _ := r.Invoke(context.Background(), "x::hook", nil, nil); got != "terminal" {
		t.Fatalf("after the swap to inject_guidance off: %v", got)
	}
}

func TestRouter(t *testing.T) {
	r := NewRouter(configsvc.Defaults(), "defaults", nil, nil)
	r.Handle("x::ok", Route{Terminal: func(ctx context.Context, c *Call) (any, error) { return "fine", nil }})
	r.Handle("x::panics", Route{Terminal: func(ctx context.Context, c *Call) (any, error) { panic("boom") }})
	r.Handle(FnRun, Route{Decode: decodeRunCall, Terminal: func(ctx context.Context, c *Call) (any, error) { return nil, nil }})

	if res, err := r.Invoke(context.Background(), "x::ok", nil, nil); err != nil || res != "fine" {
		t.Fatalf("%v %v", res, err)
	}
	if _, err := r.Invoke(context.Background(), "x::missing", nil, nil); err != ErrFunctionNotFound {
		t.Fatalf("unknown id: %v", err)
	}
	_, err := r.Invoke(context.Background(), "x::panics", nil, nil)
	if err == nil || err.Error() != "code-runner::engine: internal error while handling x::panics; see the worker logs" {
		t.Fatalf("panic: %v", err)
	}
	_, err = r.Invoke(context.Background(), FnRun, json.RawMessage(`[]`), nil)
	if err == nil || err.Error() != "code-runner::invalid_request: invalid request: expected a JSON object" {
		t.Fatalf("decode: %v", err)
	}
	r.Remove("x::ok")
	if _, err := r.Invoke(context.Background(), "x::ok", nil, nil); err != ErrFunctionNotFound {
		t.Fatalf("removed id: %v", err)
	}
}

// A reconfiguration is one step for every route: while the new chains are
// being built, every route still serves the old snapshot, and once
// Swap returns every route serves the new one. (Before, routes were
// switched one by one: a call to a route already switched and a call to
// one not yet switched could be served at the same moment.)
func TestASwapMovesEveryRouteAtOnce(t *testing.T) {
	old := snapWith(func(c *configsvc.Config) { c.MaxResultBytes = 1000 })
	r := NewRouter(old.Config, "test", nil, nil)
	next := snapWith(func(c *configsvc.Config) { c.MaxResultBytes = 2000 })
	served := func(ctx context.Context, c *Call) (any, error) { return c.Config.MaxResultBytes, nil }
	const n = 8
	var during []string
	for i := 0; i < n; i++ {
		id := "x::" + string(rune('a'+i))
		// Building this route's chain (its stage runs at build time) asks
		// every route which snapshot it serves right now.
		probe := func(next Handler) Handler {
			for _, other := range r.IDs() {
				if got, err := r.Invoke(context.Background(), other, nil, nil); err == nil && got != int64(1000) {
					during = append(during, other)
				}
			}
			return next
		}
		r.Handle(id, Route{Terminal: served, Stages: []Stage{probe}})
	}
	during = nil // the probes also ran while the routes were first built
	reconfigure(r, next)
	if len(during) > 0 {
		t.Fatalf("routes %v served the new snapshot before every route's chain was built", during)
	}
	for _, id := range r.IDs() {
		if got, err := r.Invoke(context.Background(), id, nil, nil); err != nil || got != int64(2000) {
			t.Fatalf("%s after the swap: %v %v, want 2000", id, got, err)
		}
	}
}

// TestTheDoorSeesEveryCallOnce: the door's stages run once for every call —
// answered, failed, panicked, decoded badly, of a guest route or of an id
// with no route — outermost first, and Admit's end comes before the
// answer: when the caller has it the call is no longer counted.
func TestTheDoorSeesEveryCallOnce(t *testing.T) {
	var inFlight, admitted, ended, traced int
	var order []string
	admit := Admit(func() func() {
		inFlight++
		admitted++
		order = append(order, "admit")
		return func() { inFlight--; ended++ }
	})
	trace := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (any, error) {
			traced++
			order = append(order, "trace")
			return next(ctx, c)
		}
	}
	r := NewRouter(configsvc.Defaults(), "defaults", nil, nil, DoorStages(admit, trace)...)
	r.Handle("x::ok", Route{Terminal: func(context.Context, *Call) (any, error) { return 1, nil }})
	r.Handle("x::fail", Route{Terminal: func(context.Context, *Call) (any, error) { return nil, ErrTimeout() }})
	r.Handle("x::panic", Route{Terminal: func(context.Context, *Call) (any, error) { panic("boom") }})
	r.Handle(FnRun, Route{Decode: decodeRunCall, Terminal: func(context.Context, *Call) (any, error) { return nil, nil }})
	r.HandleCurrent("g::f", func(context.Context, *Call) (any, error) { return json.RawMessage("2"), nil })
	calls := []struct {
		id, payload string
		fails       bool
	}{{"x::ok", `{}`, false}, {"x::fail", `{}`, true}, {"x::panic", `{}`, true}, {FnRun, `[]`, true}, {"g::f", `{}`, false}, {"x::none", `{}`, true}}
	for _, c := range calls {
		order = nil
		_, err := r.Invoke(context.Background(), c.id, json.RawMessage(c.payload), nil)
		if (err != nil) != c.fails {
			t.Fatalf("%s: %v", c.id, err)
		}
		if inFlight != 0 {
			t.Fatalf("%s answered while still counted in flight", c.id)
		}
		if !reflect.DeepEqual(order, []string{"admit", "trace"}) {
			t.Fatalf("%s passed the door as %v", c.id, order)
		}
	}
	if admitted != len(calls) || ended != len(calls) || traced != len(calls) {
		t.Fatalf("admitted %d, ended %d, traced %d, calls %d", admitted, ended, traced, len(calls))
	}
	if _, err := r.Invoke(context.Background(), "x::none", nil, nil); err != ErrFunctionNotFound {
		t.Fatalf("an id with no route: %v", err)
	}
}

// TestAPanicInTheDoorIsAnAnswer: a door stage that panics (telemetry fed a
// caller's strange trace context, say) is answered with the internal
// engine error, and the stages outside it still end: admission is
// released.
func TestAPanicInTheDoorIsAnAnswer(t *testing.T) {
	inFlight := 0
	admit := Admit(func() func() { inFlight++; return func() { inFlight-- } })
	broken := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (any, error) { panic("trace context") }
	}
	r := NewRouter(configsvc.Defaults(), "defaults", nil, nil, DoorStages(admit, broken)...)
	r.Handle("x::ok", Route{Terminal: func(context.Context, *Call) (any, error) { return 1, nil }})
	_, err := r.Invoke(context.Background(), "x::ok", nil, nil)
	if err == nil || err.Error() != "code-runner::engine: internal error while handling x::ok; see the worker logs" {
		t.Fatalf("a panicking door stage: %v", err)
	}
	if inFlight != 0 {
		t.Fatal("the call stayed admitted after the panic")
	}
}
