package python

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/code-runner-go/code-runner/internal/tuning"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"
)

// The host function guest Python calls at intervals: our CPython build
// imports it and calls it every 1024th eval-breaker check (backward jumps
// and calls, deps/cpython/build.sh), and the engine rewrites python.wasm so
// every loop — C loops included — calls it every loopTickInterval
// iterations (internal/wasmloops).
const (
	tickModule       = "code_runner"
	tickName         = "tick"
	loopTickInterval = 1 << 16
)

// yieldEvery is how long an interpreter computes between yields of its P.
// Ticks come far more often (every ~100 µs in a bytecode loop), and each
// runtime.Gosched with an idle P besides wakes a thread that finds nothing
// to do and sleeps again: yielding at every tick cost a computing guest
// 5–10 % (docs/architecture.md, "Why does a computing guest yield only
// every millisecond?"). A millisecond still leaves the worker's other
// goroutines the thread ten times as often as Go's own preemption would.
const yieldEvery = time.Millisecond

// instantiateTick provides code_runner.tick. Compiled wasm never reaches a
// Go preemption point by itself, and the engine compiles python.wasm
// without wazero's kill checks (an exit to Go at every loop header, 3.8×
// the cost of the code), so the tick is both the kill and the yield:
//
//   - when the interpreter's context is done (a kill: deadline, budget,
//     teardown) it ends the instance, as WASI's proc_exit does;
//   - otherwise, once yieldEvery has passed since it last did, it yields
//     the P, so a guest computing on every P still leaves the bus, node
//     calls and timers their turn.
func instantiateTick(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder(tickModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, _ []uint64) {
			q := adoptExec(ctx, mod) // the instance's snapshotter, for its resets (rewind.go)
			if ctx.Err() != nil {
				_ = mod.CloseWithExitCode(ctx, sys.ExitCodeContextCanceled)
				panic(sys.NewExitError(sys.ExitCodeContextCanceled))
			}
			if q == nil {
				runtime.Gosched()
			} else if q.yieldDue(time.Now()) {
				q.yieldP()
			}
		}), nil, nil).
		Export(tickName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiate code_runner host module: %w", err)
	}
	return nil
}

// yieldDue reports whether the interpreter's tick at now should yield its
// P: if it never has, or once yieldEvery has passed since it got the P
// back from its last yield. Only the interpreter's own goroutine calls it
// (from its ticks).
func (q *stdinQueue) yieldDue(now time.Time) bool {
	return q.yielded.IsZero() || now.Sub(q.yielded) >= yieldEvery
}

// yieldP yields the interpreter's P and notes when it got it back. The
// clock starts after the yield, not before: guests sharing a P then get
// a millisecond each, however long each waited for its turn. It first
// wakes the runtime's monitor (tuning.WakeMonitor): on one P it is what
// reads the bus while the guest computes.
func (q *stdinQueue) yieldP() {
	tuning.WakeMonitor()
	runtime.Gosched()
	q.yielded = time.Now()
}
