package tuning

// The governor sizes the worker's GOMAXPROCS to the work it has in flight.
//
// With several Ps and a single call in flight, every goroutine hand-off on
// that call's path (bus reader → handler → engine → writer) wakes an idle
// thread that spins, finds nothing and sleeps again; on these machines
// that is most of a light call's CPU. With one P the same hand-offs stay on
// one thread. With two calls or more in flight the worker needs every CPU
// and spare Ps besides (a computing python guest holds its P between its
// ticks; docs/architecture.md, "Why spare Ps?"), so a Governor raises
// GOMAXPROCS at once when a second piece of work arrives and lowers it only
// after a calm period with at most one.

import (
	"runtime"
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

// NewGovernor returns a governor that runs with low Ps while at most one piece of
// work is in flight, raises to high as soon as two are, and lowers again
// once at most one has been in flight for calm. set applies a value
// (runtime.GOMAXPROCS in production); NewGovernor applies low at once.
func NewGovernor(low, high int, calm time.Duration, set func(int) int) *Governor {
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

// ExtraProcs is how many Ps a serving worker runs with beyond the Go
// runtime's default (the CPUs it may use) while two or more calls are in
// flight. A python guest's compiled wasm holds its P while it computes — Go
// cannot preempt it; it yields only at its ticks — so with every P running
// guests the worker's own goroutines (the bus, node calls, timers) queued
// behind guest ticks. With spare Ps they run at once on threads of their
// own, and the kernel, which preempts a CPU-bound thread for one that
// wakes, shares the CPUs between them and the guests (docs/architecture.md,
// "Why spare Ps?").
const ExtraProcs = 2

// ProcsCalm is how long at most one call must have been in flight before
// the worker goes back to one P.
const ProcsCalm = 300 * time.Millisecond

// ServeGovernor returns the governor a serving worker sizes its Ps with: one
// P, ServeProcs (the CPUs plus ExtraProcs) from the second piece of work on,
// back after ProcsCalm. It applies the low value at once. When the operator
// set GOMAXPROCS (envSet) it returns nil — the switch: the value is kept as
// set, and a nil *Governor does nothing.
func ServeGovernor(envSet bool) *Governor {
	if envSet {
		return nil
	}
	return NewGovernor(1, ServeProcs(runtime.GOMAXPROCS(0), false), ProcsCalm, runtime.GOMAXPROCS)
}

// ServeProcs returns the GOMAXPROCS a serving worker uses under load given
// the runtime's current value: that plus ExtraProcs, or current unchanged
// when the operator set GOMAXPROCS in the environment.
func ServeProcs(current int, envSet bool) int {
	if envSet {
		return current
	}
	return current + ExtraProcs
}
