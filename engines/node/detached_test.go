package node

import (
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
