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
	p := NewPipeline(snapWith(nil), terminal, rec("a"), rec("b"), rec("c"))
	if _, err := p.Serve(context.Background(), &Call{}); err != nil {
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
	p := NewPipeline(snapWith(func(c *configsvc.Config) { c.MaxStreamBytes = 10 }), terminal, RunStages()...)
	res, err := p.Serve(context.Background(), &Call{TimeoutMS: 1234})
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

// TestPipelineSwapWhileCallsInFlight installs new configurations while calls
// are running: each call must see exactly the snapshot of the chain it
// started on, never a mix, and calls started after a swap see the new one.
func TestPipelineSwapWhileCallsInFlight(t *testing.T) {
	release := make(chan struct{})
	started := make(chan int64, 64)
	terminal := func(ctx context.Context, c *Call) (any, error) {
		started <- c.Config.MaxResultBytes
		<-release
		// Read twice, after the swap happened: still the same snapshot.
		return [2]int64{c.Config.MaxResultBytes, c.Config.MaxStreamBytes}, nil
	}
	p := NewPipeline(snapWith(func(c *configsvc.Config) { c.MaxResultBytes, c.MaxStreamBytes = 1, 1 }), terminal, RunStages()...)

	var wg sync.WaitGroup
	results := make(chan [2]int64, 64)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := p.Serve(context.Background(), &Call{})
			results <- res.([2]int64)
		}()
	}
	for i := 0; i < 8; i++ {
		if v := <-started; v != 1 {
			t.Fatalf("call started on snapshot %d", v)
		}
	}
	// Swap while all eight are parked in the terminal handler.
	p.Install(snapWith(func(c *configsvc.Config) { c.MaxResultBytes, c.MaxStreamBytes = 2, 2 }))
	var stop sync.WaitGroup
	stopCh := make(chan struct{})
	stop.Add(1)
	go func() { // keep swapping during the whole test, under -race
		defer stop.Done()
		for n := int64(3); ; n++ {
			select {
			case <-stopCh:
				return
			default:
			}
			p.Install(snapWith(func(c *configsvc.Config) { c.MaxResultBytes, c.MaxStreamBytes = n, n }))
		}
	}()
	close(release)
	wg.Wait()
	close(results)
	for r := range results {
		if r != [2]int64{1, 1} {
			t.Fatalf("in-flight call finished on %v, want the chain it started with", r)
		}
	}
	// A new call sees a later snapshot, whole.
	release2 := make(chan struct{})
	close(release2)
	for i := 0; i < 50; i++ {
		go func() { <-started }()
		res, _ := p.Serve(context.Background(), &Call{})
		r := res.([2]int64)
		if r[0] == 1 || r[0] != r[1] {
			t.Fatalf("new call saw %v", r)
		}
	}
	close(stopCh)
	stop.Wait()
}

func TestRouter(t *testing.T) {
	r := NewRouter(nil, nil)
	snap := snapWith(nil)
	r.Handle("x::ok", Route{Pipeline: NewPipeline(snap, func(ctx context.Context, c *Call) (any, error) { return "fine", nil })})
	r.Handle("x::panics", Route{Pipeline: NewPipeline(snap, func(ctx context.Context, c *Call) (any, error) { panic("boom") })})
	r.Handle(FnRun, Route{Decode: DecodeRunCall, Pipeline: NewPipeline(snap, func(ctx context.Context, c *Call) (any, error) { return nil, nil })})

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
// Reconfigure returns every route serves the new one. (Before, routes were
// switched one by one: a call to a route already switched and a call to
// one not yet switched could be served at the same moment.)
func TestRouterReconfiguresEveryRouteAtOnce(t *testing.T) {
	r := NewRouter(nil, nil)
	old := snapWith(func(c *configsvc.Config) { c.MaxResultBytes = 1000 })
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
		r.Handle(id, Route{Pipeline: NewPipeline(old, served, probe)})
	}
	during = nil // the probes also ran while the routes were first built
	r.Reconfigure(next)
	if len(during) > 0 {
		t.Fatalf("routes %v served the new snapshot before every route's chain was built", during)
	}
	for _, id := range r.IDs() {
		if got, err := r.Invoke(context.Background(), id, nil, nil); err != nil || got != int64(2000) {
			t.Fatalf("%s after Reconfigure: %v %v, want 2000", id, got, err)
		}
	}
}
