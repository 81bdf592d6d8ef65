package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Claims on a namespace (contract §24.2: one namespace never spans two
// workers). A namespace new to the group is created by the one worker
// whose claim stood alone on the engine when it looked. Two workers that
// receive register_function calls for one new namespace at once each
// publish a claim, wait until the engine lists it, and then read every
// claim on the namespace: a worker that sees another's claim withdraws its
// own and tries again after a random pause; a worker that finds another's
// claim before it publishes its own forwards the registration to that
// worker (where it waits for that worker's own claiming to settle).
//
// Why that is sound on both engine versions: each worker reads the claims
// only after the engine lists its own, so of two claims the one published
// second is read by a listing that also holds the first. Two workers can
// therefore never both read their own claim alone. Claim ids are per
// worker (…@tag), so neither a last-writer engine (0.22) nor a refusing
// one (0.23) ever has two writers of one id. A claim is held while the
// worker serves the namespace or a registration for it is in flight, and
// the engine drops it with the worker's connection. What this does not
// cover: a worker whose connection drops while it serves a namespace loses
// its claim and its functions on the engine until it reconnects, and
// another worker may create the namespace meanwhile.

// NamespaceClaims publishes and reads claims on namespaces (the worker
// implements it over the engine).
type NamespaceClaims interface {
	// Stake publishes this worker's claim on ns.
	Stake(ctx context.Context, ns string) error
	// Claimants returns the routing tags of the workers whose claims on ns
	// the engine lists now (this worker's included).
	Claimants(ctx context.Context, ns string) ([]string, error)
	// Withdraw removes this worker's claim on ns.
	Withdraw(ns string)
}

const (
	// claimWait bounds how long a registration spends settling which
	// worker creates its namespace.
	claimWait = 15 * time.Second
	// claimPoll is the unit of the pauses between looks at the claims.
	claimPoll = 20 * time.Millisecond
	// claimVisible bounds the wait for the engine to list a claim just
	// published.
	claimVisible = 2 * time.Second
)

// nsClaim is this worker's claim on one namespace.
type nsClaim struct {
	lock  chan struct{} // one token: serialises this worker's claiming of the namespace
	held  bool          // the engine lists this worker's claim, which stood alone (guarded by lock)
	users int           // registrations in flight that rely on it (guarded by Namespaces.mu)
}

// claim settles which worker creates namespace ns, for a registration that
// found no other worker serving it. It returns the per-worker
// register_function id to forward the call to when another worker went
// ahead, or "" when this worker holds the claim; release ends this call's
// use of the claim (it is withdrawn once the worker neither serves ns nor
// has a registration for it in flight). Without claims (local mode, no
// forwarder) every namespace is here.
func (n *Namespaces) claim(ctx context.Context, ns string) (release func(), target string, err error) {
	if n.Claims == nil || n.Run == nil || n.Run.Forward == nil || n.Locate == nil {
		return func() {}, "", nil
	}
	n.mu.Lock()
	if n.claims == nil {
		n.claims = map[string]*nsClaim{}
	}
	c := n.claims[ns]
	if c == nil {
		c = &nsClaim{lock: make(chan struct{}, 1)}
		n.claims[ns] = c
	}
	c.users++
	n.mu.Unlock()
	var once sync.Once
	release = func() {
		once.Do(func() {
			n.mu.Lock()
			c.users--
			n.mu.Unlock()
			n.settleClaim(ns)
		})
	}
	ctx, cancel := context.WithTimeout(ctx, claimWait)
	defer cancel()
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		release()
		return nil, "", Errorf(CodeEngine, "another registration on this worker is still settling which worker creates namespace %q; retry", ns)
	}
	defer func() { <-c.lock }()
	if c.held || n.servesNamespace(ns) {
		c.held = true
		return release, "", nil
	}
	self := n.Registry.Tag
	for attempt := 0; ; attempt++ {
		tags, err := n.Claims.Claimants(ctx, ns)
		if err != nil {
			release()
			return nil, "", n.claimError(ns, err)
		}
		if !hasOther(tags, self) {
			won, err := n.stake(ctx, ns, self)
			if err != nil {
				release()
				return nil, "", err
			}
			if won {
				c.held = true
				return release, "", nil
			}
			// Two claims seen at once: both step back, each for a random
			// pause, so one of them goes first next time.
			if !sleepCtx(ctx, time.Duration(1+rand.IntN(5*(attempt%4+1)))*claimPoll) {
				release()
				return nil, "", Errorf(CodeEngine, "code-runner workers are still settling which one creates namespace %q; retry", ns)
			}
			continue
		}
		// Another worker claimed it: the registration goes there — to the
		// worker whose functions the engine lists for the namespace, else
		// to the claimant, which serves it once its own claiming settles.
		tag, err := n.Locate.NamespaceTag(ctx, ns)
		if err != nil {
			release()
			return nil, "", n.claimError(ns, err)
		}
		if tag == "" || tag == self {
			for _, t := range tags {
				if t != self {
					tag = t
					break
				}
			}
		}
		release()
		return func() {}, WorkerID(FnRegisterFunction, tag), nil
	}
}

// stake publishes this worker's claim on ns, waits until the engine lists
// it, and reports whether it stood alone; a claim that did not is
// withdrawn.
func (n *Namespaces) stake(ctx context.Context, ns, self string) (bool, error) {
	if err := n.Claims.Stake(ctx, ns); err != nil {
		return false, n.claimError(ns, err)
	}
	until := time.Now().Add(claimVisible)
	for {
		tags, err := n.Claims.Claimants(ctx, ns)
		if err != nil {
			n.Claims.Withdraw(ns)
			return false, n.claimError(ns, err)
		}
		if slices.Contains(tags, self) {
			if hasOther(tags, self) {
				n.Claims.Withdraw(ns)
				return false, nil
			}
			return true, nil
		}
		if time.Now().After(until) || !sleepCtx(ctx, claimPoll/2) {
			n.Claims.Withdraw(ns)
			return false, Errorf(CodeEngine, "the engine did not list this worker's claim on namespace %q within %s; retry", ns, claimVisible)
		}
	}
}

// settleClaim withdraws this worker's claim on ns once nothing relies on
// it: no runtime of ns is live here and no registration for it is in
// flight. The withdrawal is sent under the lock, so it always reaches the
// engine before a later claim of the same namespace.
func (n *Namespaces) settleClaim(ns string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := n.claims[ns]
	if c == nil || c.users > 0 || n.servesLocked(ns) {
		return
	}
	delete(n.claims, ns)
	if c.held && n.Claims != nil {
		n.Claims.Withdraw(ns)
	}
}

func (n *Namespaces) claimError(ns string, err error) *Error {
	return &Error{Code: CodeEngine, Text: fmt.Sprintf("could not ask the engine which worker creates namespace %q; retry", ns), Cause: err}
}

func hasOther(tags []string, self string) bool {
	for _, t := range tags {
		if t != self {
			return true
		}
	}
	return false
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
