package python

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// instantiateTick provides code_runner.tick, which the interpreter calls
// every 1024th eval-breaker check (backward jumps and calls; our CPython
// build adds the call, see deps/cpython/build.sh). Compiled wasm reaches Go
// only through the kill checks at loop headers, where the scheduler
// preempts a goroutine that has run for 10 ms or more: two guests computing
// on two Ps left the rest of the worker — the bus, node calls — waiting in
// 10 ms slices. Each tick yields the P and counts in ticks.
func instantiateTick(ctx context.Context, rt wazero.Runtime, ticks *atomic.Int64) error {
	_, err := rt.NewHostModuleBuilder("code_runner").
		NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {
			ticks.Add(1)
			runtime.Gosched()
		}), nil, nil).
		Export("tick").
		Instantiate(ctx)
	if err != nil {
		return fmt.Errorf("instantiate code_runner host module: %w", err)
	}
	return nil
}
