package python

import (
	"context"
	"fmt"
	"runtime"

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

// instantiateTick provides code_runner.tick. Compiled wasm never reaches a
// Go preemption point by itself, and the engine compiles python.wasm
// without wazero's kill checks (an exit to Go at every loop header, 3.8×
// the cost of the code), so the tick is both the kill and the yield:
//
//   - when the interpreter's context is done (a kill: deadline, budget,
//     teardown) it ends the instance, as WASI's proc_exit does;
//   - otherwise it yields the P, so a guest computing on every P still
//     leaves the bus, node calls and timers their turn.
func instantiateTick(ctx context.Context, rt wazero.Runtime) error {
	_, err := rt.NewHostModuleBuilder(tickModule).
		NewFunctionBuilder().
		WithGoModuleFunction(api.GoModuleFunc(func(ctx context.Context, mod api.Module, _ []uint64) {
			adoptExec(ctx, mod) // the instance's snapshotter, for its resets (rewind.go)
			if ctx.Err() != nil {
				_ = mod.CloseWithExitCode(ctx, sys.ExitCodeContextCanceled)
				panic(sys.NewExitError(sys.ExitCodeContextCanceled))
			}
			runtime.Gosched()
		}), nil, nil).
		Export(tickName).
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiate code_runner host module: %w", err)
	}
	return nil
}
