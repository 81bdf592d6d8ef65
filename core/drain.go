package core

import (
	"context"
	"sync"
)

// Gate counts the calls in flight and, once closed, refuses new ones:
// the door of a draining worker (contract §26.6). Calls already inside
// finish; Wait tells when the last has.
type Gate struct {
	mu     sync.Mutex
	closed bool
	n      int
	idle   chan struct{} // closed when n reaches 0 after Close
}

// ErrStopping is a draining worker's answer to a call that arrives after
// the drain began.
func ErrStopping() *Error {
	return Errorf(CodeEngine, "this worker is stopping and takes no new work; call again — another worker of the group serves it, or this one once it is back")
}

// Stage is the door stage that counts and, once closed, refuses.
func (g *Gate) Stage() Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) (any, error) {
			if !g.enter() {
				return nil, ErrStopping()
			}
			defer g.leave()
			return next(ctx, call)
		}
	}
}

func (g *Gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.closed && g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// Close refuses every call from now on and answers how many are inside.
func (g *Gate) Close() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		g.idle = make(chan struct{})
		if g.n == 0 {
			close(g.idle)
			g.idle = nil
		}
	}
	return g.n
}

// Wait returns when every call inside at Close has finished, or ctx ends
// first (its error then).
func (g *Gate) Wait(ctx context.Context) error {
	g.mu.Lock()
	idle := g.idle
	g.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HandOver gives up every namespace this worker serves to the rest of
// the group (contract §26.6): each function id goes through unregister and
// each namespace's claim is withdrawn, so a survivor claims and restores
// them from their records; the runtimes stay, for the calls already
// inside, until the worker closes. It answers the namespaces given up.
func (n *Namespaces) HandOver(unregister func(id string)) []string {
	n.mu.Lock()
	var nss []string
	seen := map[string]bool{}
	live := make([]*nsRuntime, 0, len(n.live))
	for k, nr := range n.live {
		live = append(live, nr)
		if !seen[k.ns] {
			seen[k.ns] = true
			nss = append(nss, k.ns)
		}
	}
	n.mu.Unlock()
	var ids []string
	for _, nr := range live {
		nr.mu.Lock() // a registration still inside finishes first
		for id := range nr.ids {
			ids = append(ids, id)
		}
		nr.mu.Unlock()
	}
	for _, id := range ids {
		unregister(id)
	}
	if n.Claims != nil {
		for _, ns := range nss {
			n.Claims.Withdraw(ns)
		}
	}
	return nss
}
