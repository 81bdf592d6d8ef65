package python

import (
	"context"

	"github.com/code-runner-go/code-runner/internal/warmpool"
)

// newPool keeps up to warm_pool_python interpreters booted (default memory,
// each with its own empty /work) and parked before their first turn.
func newPool(e *Engine) *warmpool.Pool[*interp] {
	return warmpool.New(warmpool.Config[*interp]{
		Boot: func(ctx context.Context) (*interp, error) {
			dir, err := e.newWorkDir()
			if err != nil {
				return nil, err
			}
			ip, err := e.bootInterp(ctx, defaultMemMB, dir)
			if err != nil {
				e.removeWorkDir(dir)
			}
			return ip, err
		},
		Discard: func(ip *interp) {
			// An interpreter that never served, and its /work.
			ip.dispose()
			e.removeWorkDir(ip.workDir)
		},
		Want:   func() int { return int(e.opts.Live().WarmPoolPython) },
		Usable: func(ip *interp) bool { return !ip.dead() },
		Log:    e.log,
	})
}
