package node

import (
	"context"
	"time"

	"github.com/code-runner-go/code-runner/internal/warmpool"
)

// newPool keeps up to warm_pool_node booted hosts (isolate, context and
// prelude built) with the live heap cap and iii.files setting.
func newPool(e *Engine) *warmpool.Pool[*hostProc] {
	return warmpool.New(warmpool.Config[*hostProc]{
		Boot: func(ctx context.Context) (*hostProc, error) {
			cfg := e.opts.Live()
			return e.spawn(ctx, cfg.HeapMB, cfg.ScratchMB > 0)
		},
		Discard: func(h *hostProc) { h.kill("destroy") },
		Want:    func() int { return int(e.opts.Live().WarmPoolNode) },
		Usable: func(h *hostProc) bool {
			cfg := e.opts.Live()
			return !h.dead() && h.heapMB == cfg.HeapMB && h.filesOn == (cfg.ScratchMB > 0)
		},
		Log: e.log,
	})
}

// recycleWait is how long a one-shot waits for a loaned host to come back
// before spawning one. Measured with 8 concurrent callers in-engine: 50 ms
// let most waits time out under load, and each timeout spawned a process
// that was killed when the pool had no room for it (52 spawns per 249
// calls, ~60 calls/s); 250 ms: 26 per 307 (~73/s); 1 s: 9 per 387 (~95/s),
// at the price of up to a second's wait when every host is busy with a
// long run.
const recycleWait = 250 * time.Millisecond

// take hands out a pooled host with heap cap heapMB and iii.files as asked.
// A loan (one-shot runtimes) is expected back through give; with every host
// out on loan, one coming back within recycleWait (a recycled host is a new
// isolate, a few ms) beats spawning a process.
func (e *Engine) take(ctx context.Context, heapMB int64, filesOn, loan bool) *hostProc {
	match := func(h *hostProc) bool { return h.heapMB == heapMB && h.filesOn == filesOn }
	var h *hostProc
	var ok bool
	if loan {
		h, ok = e.pool.BorrowWait(ctx, match, recycleWait)
	} else {
		h, ok = e.pool.Take(match)
	}
	if !ok {
		return nil
	}
	return h
}

// give takes back a host whose runtime ended: a healthy one is reset to a
// fresh isolate and parked when the pool has room; otherwise it is killed.
// loan settles a take(…, loan=true).
func (e *Engine) give(h *hostProc, healthy, loan bool) {
	cfg := e.opts.Live()
	reusable := healthy && e.pool.Room() && h.recycle(cfg.HeapMB, cfg.ScratchMB > 0)
	parked := false
	switch {
	case loan && reusable:
		parked = e.pool.Settle(&h)
	case loan:
		e.pool.Settle(nil)
	case reusable:
		parked = e.pool.Put(h)
	}
	if !parked {
		h.kill("destroy")
	}
}
