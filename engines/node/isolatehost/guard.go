package isolatehost

import (
	"sync"
	"time"
)

// Why a guard stopped guest code.
const (
	firedDeadline = "deadline"
	firedMemory   = "memory"
)

// memorySample is how often a guard samples the host's memory while guest
// code runs.
const memorySample = 5 * time.Millisecond

// guard watches one entry into the isolate — any moment guest JavaScript
// can run, inside a call or not: it terminates execution at the entry's
// deadline, and when the host's guest memory passes its cap (sampled every
// few milliseconds). arm and disarm bracket the entry; whatever the timers
// did is settled under one lock, so a termination that fires as the entry
// ends is either reported by disarm or never happens — it cannot leak into
// the next entry, or into the next tenant of a recycled host.
type guard struct {
	terminate  func()      // stops running JS (TerminateExecution)
	overMemory func() bool // nil: no memory cap
	hardStop   func(why string)

	mu       sync.Mutex
	gen      uint64
	armed    bool
	fired    string
	deadline *time.Timer
	sampler  *time.Timer
	hard     *time.Timer

	// beforeFire, when set (tests), runs as a timer fires, before the
	// guard takes its lock.
	beforeFire func()
}

// arm starts watching an entry that must end by deadline.
func (g *guard) arm(deadline time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gen++
	gen := g.gen
	g.armed, g.fired = true, ""
	g.deadline = time.AfterFunc(time.Until(deadline), func() { g.fire(gen, firedDeadline) })
	if g.overMemory != nil {
		g.sampler = time.AfterFunc(memorySample, func() { g.sample(gen) })
	}
}

func (g *guard) fire(gen uint64, why string) {
	if g.beforeFire != nil {
		g.beforeFire()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.armed || g.gen != gen || g.fired != "" {
		return // the entry ended first: nothing happens
	}
	g.fired = why
	g.terminate()
	if g.hardStop != nil {
		// TerminateExecution cannot interrupt everything (a huge native
		// allocation); if the entry has not ended soon after, the process
		// ends instead.
		g.hard = time.AfterFunc(250*time.Millisecond, func() {
			g.mu.Lock()
			still := g.armed && g.gen == gen
			g.mu.Unlock()
			if still {
				g.hardStop(why)
			}
		})
	}
}

func (g *guard) sample(gen uint64) {
	over := g.overMemory()
	if over {
		g.fire(gen, firedMemory)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.armed && g.gen == gen {
		g.sampler = time.AfterFunc(memorySample, func() { g.sample(gen) })
	}
}

// disarm ends the entry and reports why the guard stopped it ("" if it did
// not). After disarm returns no timer of this entry can terminate anything.
func (g *guard) disarm() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = false
	for _, t := range []*time.Timer{g.deadline, g.sampler, g.hard} {
		if t != nil {
			t.Stop()
		}
	}
	g.deadline, g.sampler, g.hard = nil, nil, nil
	fired := g.fired
	g.fired = ""
	return fired
}
