// Package gopool runs functions on goroutines that outlive one function, so
// the stack one call grew serves the next instead of being grown again.
//
// A goroutine starts with a small stack and copies it to a larger one each
// time a call runs out of room (runtime.morestack). A worker's request path
// — the bus, the chain of stages, JSON by reflection, an engine — runs a few
// tens of KiB deep, and a goroutine per request grew its stack from scratch
// every time: under 8 callers of python one-shots, ~4 % of the worker's CPU
// was in the runtime's stack copying (docs/architecture.md, "Why do
// requests run on kept goroutines?").
package gopool

import "sync/atomic"

// Pool hands each function to an idle goroutine of its own or, when none is
// idle, to a new goroutine that stays for more once it is done. At most
// maxIdle goroutines wait; the rest end after their function. A waiting
// goroutine blocks on a channel: it costs no wake-ups, only its stack,
// which the garbage collector shrinks when it is mostly unused.
//
// A kept goroutine carries nothing from one function to the next but its
// stack's size: Go has no goroutine-local values. What a function could
// leave on its goroutine — a thread locked with runtime.LockOSThread and
// not unlocked, profiler labels set with pprof.SetGoroutineLabels — it must
// not: nothing in this module does either.
type Pool struct {
	work    chan func()
	done    chan struct{}
	closed  atomic.Bool
	idle    atomic.Int32
	maxIdle int32
}

// New returns a pool that keeps at most maxIdle goroutines waiting.
func New(maxIdle int) *Pool {
	return &Pool{work: make(chan func()), done: make(chan struct{}), maxIdle: int32(maxIdle)}
}

// Go runs fn on a goroutine of the pool's, at once: it never waits for one
// to come free.
func (p *Pool) Go(fn func()) {
	if !p.closed.Load() {
		select {
		case p.work <- fn:
			return
		default:
		}
	}
	go p.run(fn)
}

// run runs fn, then waits for more while there is room among the waiting.
func (p *Pool) run(fn func()) {
	for {
		fn()
		if p.closed.Load() || p.idle.Add(1) > p.maxIdle {
			p.idle.Add(-1)
			return
		}
		select {
		case fn = <-p.work:
			p.idle.Add(-1)
		case <-p.done:
			p.idle.Add(-1)
			return
		}
	}
}

// Close ends the waiting goroutines; functions given to Go afterwards run on
// goroutines of their own. Close is idempotent.
func (p *Pool) Close() {
	if p.closed.CompareAndSwap(false, true) {
		close(p.done)
	}
}

// Idle reports how many goroutines are waiting for a function.
func (p *Pool) Idle() int { return int(p.idle.Load()) }
