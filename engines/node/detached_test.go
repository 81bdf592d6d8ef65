package node

import (
	"fmt"

	"github.com/code-runner-go/code-runner/internal/procfs"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// spinLater leaves a callback behind that spins forever once the guest's
// refused call settles, after the run has returned.
const spinLater = `iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => { for (;;) {} }); return 1`

// A kept runtime its own detached work destroyed answers expired on every
// later call (contract §22a.9) — never `engine` with "retry" — whether the
// call arrives while the detached work still spins, after the host is
// gone but before the worker has heard of it, or later.
func TestARuntimeItsDetachedWorkDestroyedExpires(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	t.Run("a call while the detached work spins", func(t *testing.T) {
		k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": 1000, "code": spinLater})
		time.Sleep(300 * time.Millisecond) // the callback is spinning, 700 ms left of its deadline
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 2", "timeout_ms": 5000}); err == nil || err.Code != core.CodeExpired {
			t.Fatalf("%v", err)
		}
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 2"}); err == nil || err.Code != core.CodeExpired {
			t.Fatalf("then: %v", err)
		}
	})
	t.Run("a call after the host died, before the worker heard", func(t *testing.T) {
		k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": 1000, "code": spinLater})
		p := keptHost(t, r, k.RuntimeID).host()
		p.mu.Lock()
		heard := p.onExit
		p.onExit = func() { time.Sleep(500 * time.Millisecond); heard() }
		p.mu.Unlock()
		<-p.exited
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 2"}); err == nil || err.Code != core.CodeExpired {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a call long after", func(t *testing.T) {
		k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": 1000, "code": spinLater})
		waitExpired(t, r, k.RuntimeID, 20*time.Second)
	})
}

// A namespace runtime whose detached work overran restarts with replay; an
// invocation that was waiting for the host when it was killed never ran,
// so it is run on the restarted runtime instead of failing.
func TestANamespaceCallWaitingBehindDetachedWorkRunsAfterTheRestart(t *testing.T) {
	r, bus := newBusRig(t, func(c *configsvc.Config) { c.DefaultTimeoutMS = 1000 })
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "dd::f", "lang": "node",
		"source": "let n = 0; function handler(p) { n++; if (p.spin) iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => { for (;;) {} }); return n }"}); err != nil {
		t.Fatal(err)
	}
	if v, err := bus.Invoke(t, "dd::f", `{"spin":true}`); err != nil || string(v) != "1" {
		t.Fatalf("%s %v", v, err)
	}
	// The detached work keeps the 1 s budget of the call that left it;
	// the next calls get room for a restart under the race detector.
	cfg := r.cfg
	cfg.DefaultTimeoutMS = 20000
	r.router.Swap(r.router.Provision(cfg, "test"))
	r.eng.Commit(r.router.Live())
	time.Sleep(200 * time.Millisecond)
	if v, err := bus.Invoke(t, "dd::f", `{}`); err != nil || string(v) != "1" { // replayed: a fresh count
		t.Fatalf("during the spin: %s %v", v, err)
	}
	if v, err := bus.Invoke(t, "dd::f", `{}`); err != nil || string(v) != "2" {
		t.Fatalf("after: %s %v", v, err)
	}
}

// A one-shot never waits for another tenant's host to finish its detached
// work: the host that does not reset promptly is killed, and the one-shot
// gets another. A's detached work would run 30 s; B's budget is 2 s.
func TestAOneShotDoesNotWaitBehindAnotherTenantsDetachedWork(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.WarmPoolNode = 1 })
	for end := time.Now().Add(30 * time.Second); r.eng.Parked() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the pool never held a host")
		}
	}
	// The refusal reaches the host while A still computes, so the host
	// reads it — and starts spinning — before the worker asks for a reset.
	mustRun(t, r, map[string]any{"lang": "node", "timeout_ms": 30000, "code": `const p = iii.trigger({ function_id: 'state::claim-namespace' });
		const t0 = Date.now(); while (Date.now() - t0 < 300) {}
		p.catch(() => { for (;;) {} }); return 1`})
	time.Sleep(100 * time.Millisecond)
	done := make(chan *core.RunResponse, 1)
	go func() {
		res, _ := r.run(t, map[string]any{"lang": "node", "timeout_ms": 2000, "code": "return 2"})
		done <- res
	}()
	select {
	case res := <-done:
		if res == nil || string(res.Result) != "2" {
			t.Fatalf("%+v", res)
		}
	case <-time.After(7 * time.Second): // far past B's 2 s; a recycle once waited 10 s for a busy host
		t.Fatal("the one-shot waited for another tenant's detached work")
	}
}

// Detached work is bounded in total (contract §22a.7): what a kept
// runtime's callbacks, intervals and bridge replies use between two of its
// calls counts against one budget, the last call's. Each case leaves work
// that would run far past that budget one entry at a time; the runtime
// must end expired, and its host must have used no more CPU after the call
// answered than the budget and a tolerance (the CPU is sampled every 20 ms
// while the host lives, so the last sample under-reads by at most that).
func TestDetachedWorkIsBoundedInTotal(t *testing.T) {
	const budget = 300 * time.Millisecond
	const tolerance = 250 * time.Millisecond
	cases := []struct{ name, code string }{
		{"an interval of long entries", `setInterval(() => { const t = Date.now(); while (Date.now() - t < 150) {} }, 1).unref(); return 1`},
		{"an interval of short entries", `setInterval(() => { const t = Date.now(); while (Date.now() - t < 5) {} }, 1).unref(); return 1`},
		{"a chain of bridge replies", `function loop() { iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => { const t = Date.now(); while (Date.now() - t < 20) {} loop(); }); }
			loop(); return 1`},
	}
	r, _ := newLoopRig(t, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": budget.Milliseconds(), "code": c.code})
			p := keptHost(t, r, k.RuntimeID).host()
			start := procfs.CPU(p.pid)
			last := start
			for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, state := r.reg.Lookup(k.RuntimeID); state == core.StateTombstoned {
					break
				}
				if cpu := procfs.CPU(p.pid); cpu > 0 {
					last = cpu
				}
				if used := last - start; used > budget+tolerance {
					t.Fatalf("the host used %v of CPU after the call answered; its detached budget is %v", used, budget)
				}
				if time.Now().After(end) {
					t.Fatalf("the runtime still lives 20 s later (its host used %v of CPU)", last-start)
				}
			}
			if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 2"}); err == nil || err.Code != core.CodeExpired {
				t.Fatalf("a call after the detached work overran: %v", err)
			}
		})
	}
	t.Run("work inside the budget keeps the runtime, and each call renews it", func(t *testing.T) {
		spin := func(ms int) string {
			return fmt.Sprintf(`setTimeout(() => { const t = Date.now(); while (Date.now() - t < %d) {} }, 1).unref(); return 1`, ms)
		}
		// Twice 120 ms of 300 after the first call; 200 ms after each later
		// one: beyond one budget in all, inside it between any two calls.
		k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": budget.Milliseconds(),
			"code": `for (let i = 0; i < 2; i++) setTimeout(() => { const t = Date.now(); while (Date.now() - t < 120) {} }, 5 + i).unref(); return 1`})
		for i := 0; i < 3; i++ {
			time.Sleep(400 * time.Millisecond)
			res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "timeout_ms": budget.Milliseconds(), "code": spin(200)})
			if err != nil || string(res.Result) != "1" {
				t.Fatalf("call %d: %+v %v", i+2, res, err)
			}
		}
	})
}
