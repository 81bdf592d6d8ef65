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
		OnBoot: e.opts.OnPoolBoot,
		Boot: func(ctx context.Context) (*hostProc, error) {
			cfg := e.config()
			return e.spawn(ctx, cfg.HeapMB, cfg.ScratchMB > 0, e.kinds.rich())
		},
		Discard: func(h *hostProc) { h.kill("destroy") },
		Want:    func() int { return int(e.config().WarmPoolNode) },
		Usable: func(h *hostProc) bool {
			cfg := e.config()
			return !h.dead() && h.heapMB == cfg.HeapMB && h.filesOn == (cfg.ScratchMB > 0)
		},
		Log: e.log,
	})
}

// recycleWait is how long a one-shot waits for a loaned host to come back
// before spawning one, when no host is being recycled (while one is, the
// wait goes on: see warmpool.Pool.BorrowWait). Spawning under load was the
// worst thing a waiting caller could do: with 8 concurrent callers it cost
// ~30 ms of CPU per process on a machine already out of CPU, and the pool
// then killed the extra processes for lack of room (24 spawns per 400
// calls, p99 ~0.9 s); waiting for recycling hosts, with the pool following
// the callers' peak, spawns none.
const recycleWait = 250 * time.Millisecond

// maxLoanWait bounds a one-shot's whole wait for a loaned host.
const maxLoanWait = time.Second

// take hands out a pooled host with heap cap heapMB and iii.files as asked.
// A loan (one-shot runtimes) is expected back through give; with every host
// out on loan, one coming back within recycleWait (a recycled host is a new
// isolate, a few ms) beats spawning a process.
func (e *Engine) take(ctx context.Context, heapMB int64, filesOn, loan bool, budget time.Duration) *hostProc {
	match := func(h *hostProc) bool { return h.heapMB == heapMB && h.filesOn == filesOn }
	var h *hostProc
	var ok bool
	if loan {
		// Never wait for a loan longer than maxLoanWait or the call's own
		// budget: then boot a fresh host.
		wait := maxLoanWait
		if budget > 0 && budget < wait {
			wait = budget
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		h, ok = e.pool.BorrowWait(wctx, match, recycleWait)
		cancel()
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
// loan settles a take(…, loan=true), which the caller has marked as
// returning (warmpool.Pool.Returning) since the runtime ended.
func (e *Engine) give(h *hostProc, healthy, loan bool) {
	cfg := e.config()
	reusable := healthy && e.pool.Room(loan) && h.recycle(cfg.HeapMB, cfg.ScratchMB > 0, e.kinds.rich())
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
