package python

import (
	"context"
	"time"

	"github.com/code-runner-go/code-runner/internal/warmpool"
)

// demandAfter is how long a one-shot waits for a lent interpreter before
// it counts towards the pool's growth (warmpool.Config.DemandAfter).
const demandAfter = 5 * time.Millisecond

// newPool keeps up to warm_pool_python interpreters booted (default memory,
// each with its own empty /work) and parked before their first turn.
func newPool(e *Engine) *warmpool.Pool[*interp] {
	return warmpool.New(warmpool.Config[*interp]{
		OnBoot: e.opts.OnPoolBoot,
		Boot: func(ctx context.Context) (*interp, error) {
			defer e.busy(1)() // the boot and the snapshot's warm-up turns
			dir, err := e.newWorkDir(e.config())
			if err != nil {
				return nil, err
			}
			ip, err := e.bootInterp(ctx, defaultMemMB, dir)
			if err != nil {
				e.removeWorkDir(dir)
				return nil, err
			}
			// A pooled interpreter records its parked memory so a one-shot
			// can give it back reset instead of booting a replacement.
			if err := ip.takeSnapshot(ctx); err != nil {
				if ip.dead() { // a check turn failed: unusable (see takeSnapshot)
					e.removeWorkDir(dir)
					return nil, err
				}
				e.log.Debug("python interpreter without a snapshot; one-shots will not recycle it", "err", err)
			}
			return ip, nil
		},
		Discard: func(ip *interp) {
			// An interpreter that never served, and its /work.
			ip.dispose()
			e.removeWorkDir(ip.workDir)
		},
		Want: func() int { return int(e.config().WarmPoolPython) },
		// An interpreter booted with another python_path is not handed out:
		// the path applies to interpreters started after a change.
		Usable: func(ip *interp) bool { return !ip.dead() && ip.pathKey == pathKey(e.config().PythonPath) },
		Log:    e.log,
		// A one-shot's interpreter comes back reset in well under a
		// millisecond; a boot is ~0.3 s of CPU. A caller counts towards
		// growing the pool only once no interpreter came back for it
		// within demandAfter.
		DemandAfter: demandAfter,
	})
}

// recycle settles a one-shot's loan: an interpreter that is still parked
// and was snapshotted is reset to its snapshot — memory, /work and /out as
// they were when it first parked — and goes back to the pool; anything else
// (killed, dead, grown, a descriptor replaced, no room) is disposed of, with the
// one-shot's /work. ip is nil when the one-shot's interpreter was killed.
func (e *Engine) recycle(ip *interp, workDir string, returning func()) {
	defer returning() // one-shots queued for an interpreter wait for this one (Destroy counted it)
	var err error
	if ip != nil && ip.workDir == workDir {
		err = ip.reset(context.Background(), e.pagemap.get())
	}
	if err != nil {
		e.log.Debug("python interpreter not recycled", "err", err)
	}
	if ip != nil && ip.workDir == workDir && err == nil {
		if e.pool.Settle(&ip) {
			return
		}
	} else {
		e.pool.Settle(nil)
	}
	if ip != nil {
		ip.dispose()
	}
	e.removeWorkDir(workDir)
}

// recycleKept offers the interpreter of a kept or namespace runtime that
// ended back to the pool when it came from there (it has a snapshot), is
// still parked and the pool has room — as it has when kept runtimes are
// being created faster than the pool boots: reset exactly as after a
// one-shot, it saves a boot (~0.3 s of CPU). It reports whether the pool
// took it; if not, the caller disposes of it.
func (e *Engine) recycleKept(ip *interp, workDir string) bool {
	if ip == nil || ip.workDir != workDir || e.pool == nil || !e.pool.Room(false) {
		return false
	}
	if err := ip.reset(context.Background(), e.pagemap.get()); err != nil {
		e.log.Debug("python interpreter not recycled", "err", err)
		return false
	}
	return e.pool.Put(ip)
}
