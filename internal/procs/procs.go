// Package procs sizes the worker's GOMAXPROCS to the work it has in flight.
//
// With several Ps and a single call in flight, every goroutine hand-off on
// that call's path (bus reader → handler → engine → writer) wakes an idle
// thread that spins, finds nothing and sleeps again; on these machines
// that is most of a light call's CPU. With one P the same hand-offs stay on
// one thread. With two calls or more in flight the worker needs every CPU
// and spare Ps besides (a computing python guest holds its P between its
// ticks; docs/architecture.md §3, "Spare Ps"), so a Governor raises
// GOMAXPROCS at once when a second piece of work arrives and lowers it only
// after a calm period with at most one.
package procs

import (
	"sync"
	"time"
)

// Governor switches GOMAXPROCS between a low and a high value by the number
// of pieces of work in flight. A nil *Governor does nothing.
type Governor struct {
	low, high int
	calm      time.Duration
	set       func(int) int

	mu       sync.Mutex
	busy     int
	raised   bool
	lastBusy time.Time // the last moment two or more were in flight
	timer    *time.Timer
	closed   bool
}

// New returns a governor that runs with low Ps while at most one piece of
// work is in flight, raises to high as soon as two are, and lowers again
// once at most one has been in flight for calm. set applies a value
// (runtime.GOMAXPROCS in production); New applies low at once.
func New(low, high int, calm time.Duration, set func(int) int) *Governor {
	if low < 1 {
		low = 1
	}
	if high < low {
		high = low
	}
	g := &Governor{low: low, high: high, calm: calm, set: set}
	set(low)
	return g
}

// Enter records work in flight — weight 1 for a call, 2 for work that
// uses every CPU by itself — and returns the function that ends it (safe to
// call more than once; only the first call counts). It raises GOMAXPROCS
// before returning when this makes two or more.
func (g *Governor) Enter(weight int) (leave func()) {
	if g == nil {
		return func() {}
	}
	g.mu.Lock()
	g.busy += weight
	if g.busy >= 2 {
		g.lastBusy = time.Now()
		if !g.raised && !g.closed {
			g.raised = true
			g.set(g.high)
			g.timer = time.AfterFunc(g.calm, g.check)
		}
	}
	g.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			if g.busy >= 2 {
				g.lastBusy = time.Now()
			}
			g.busy -= weight
			g.mu.Unlock()
		})
	}
}

// check lowers GOMAXPROCS when at most one piece of work has been in flight
// for the calm period, or looks again when that period will be over.
func (g *Governor) check() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.raised || g.closed {
		return
	}
	if g.busy >= 2 {
		g.timer = time.AfterFunc(g.calm, g.check)
		return
	}
	if wait := g.calm - time.Since(g.lastBusy); wait > 0 {
		g.timer = time.AfterFunc(wait, g.check)
		return
	}
	g.raised = false
	g.set(g.low)
}

// Close stops lowering and leaves GOMAXPROCS at high, as a worker without a
// governor runs.
func (g *Governor) Close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return
	}
	g.closed = true
	if g.timer != nil {
		g.timer.Stop()
	}
	if !g.raised {
		g.raised = true
		g.set(g.high)
	}
}
