// Package warmpool keeps pre-booted runtimes ready for hand-out: it refills
// in the background to a live target size, discards entries that no longer
// fit the live configuration, and retries boot failures with backoff (1 s
// doubling to 30 s). Both engines use it for their pools (docs/behaviour.md#runtimes-warm-pools).
//
// Entries lent out (Borrow, Adopt) come back through Settle and go to the
// longest-waiting BorrowWait caller first; parked entries go out newest
// first, the one the machine's caches touched last. The pool holds — parked and lent
// together — its target, or the recent peak of concurrent borrowers when
// that is higher: under a burst of overlapping one-shots it boots, one at a
// time in the background, as many runtimes as callers overlap, and keeps
// them, instead of each waiting caller booting its own while returning
// runtimes are discarded. The peak decays after Config.Burst without a new
// one, and the pool trims back to its target.
package warmpool

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Config says how to boot, judge and discard entries.
type Config[T any] struct {
	// Boot builds one entry.
	Boot func(ctx context.Context) (T, error)
	// Discard destroys an entry that leaves the pool unused.
	Discard func(T)
	// Want is the live target size.
	Want func() int
	// Usable reports whether an entry is alive and still fits the live
	// configuration (entries that do not are discarded).
	Usable func(T) bool
	// BootTimeout bounds one Boot (default 60 s).
	BootTimeout time.Duration
	// Burst is how long a peak of concurrent borrowers keeps the pool
	// holding and booting entries above Want (default 10 s).
	Burst time.Duration
	// MaxKeep bounds what a peak can raise the pool to (default 16).
	MaxKeep int
	// DemandAfter is how long a BorrowWait caller waits before it counts
	// towards the peak the pool grows to (0: at once). A pool whose lent
	// entries come back far sooner than one boots sets it: callers served
	// by an entry coming back within it make the pool boot nothing.
	DemandAfter time.Duration
	Log         *slog.Logger
	// OnBoot, when set, learns how long each background boot that
	// succeeded took (the pool's refill time).
	OnBoot func(time.Duration)
}

// Pool is a warm pool. Entries are handed out once.
type Pool[T any] struct {
	cfg    Config[T]
	mu     sync.Mutex
	ready  []T
	loans  int          // entries lent (Borrow, Adopt, hand-offs) and not yet settled
	waitq  []*waiter[T] // BorrowWait callers, oldest first
	demand int          // waiters in waitq that count towards the peak (Config.DemandAfter)
	coming int          // loans whose entries are being rebuilt (Returning)
	peak   int          // most concurrent borrowers (loans + waiters) lately
	peakAt time.Time    // when peak was last reached
	wake   chan struct{}
	stop   chan struct{}
	closed bool
	wg     sync.WaitGroup
}

// waiter is a BorrowWait caller; an entry handed to it arrives on ch.
type waiter[T any] struct {
	match   func(T) bool
	ch      chan T
	queued  bool // in waitq
	counted bool // counted in Pool.demand
}

// New starts a pool filling in the background.
func New[T any](cfg Config[T]) *Pool[T] {
	if cfg.BootTimeout == 0 {
		cfg.BootTimeout = 60 * time.Second
	}
	if cfg.Burst == 0 {
		cfg.Burst = 10 * time.Second
	}
	if cfg.MaxKeep == 0 {
		cfg.MaxKeep = 16
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Pool[T]{cfg: cfg, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	p.wg.Add(1)
	go p.fill()
	p.Kick()
	return p
}

// Kick makes the pool re-check its size now.
func (p *Pool[T]) Kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Take hands out the most recently parked usable entry that match accepts
// (entries match refuses are discarded), and starts a refill.
func (p *Pool[T]) Take(match func(T) bool) (T, bool) {
	return p.take(match, false)
}

// take hands out an entry; with loan, the loan is counted in the same
// critical section, before the refill it kicks can look.
//
// The newest entry goes first: it is the one whose memory the machine's
// caches and page tables last touched (a python interpreter reset a moment
// ago, a node host that just built its isolate), so the oldest are the ones
// a trim drops. Every entry is as fresh as any other to its next tenant;
// only the cost differs (docs/architecture.md, "Why does a pool hand out
// its newest entry first?").
func (p *Pool[T]) take(match func(T) bool, loan bool) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.takeLocked(match, loan)
}

// takeLocked is take with p.mu held.
func (p *Pool[T]) takeLocked(match func(T) bool, loan bool) (T, bool) {
	defer p.Kick()
	for len(p.ready) > 0 {
		e := p.ready[len(p.ready)-1]
		p.ready = p.ready[:len(p.ready)-1]
		if p.cfg.Usable(e) && (match == nil || match(e)) {
			if loan {
				p.loans++
				p.demandLocked()
			}
			return e, true
		}
		go p.cfg.Discard(e)
	}
	var zero T
	return zero, false
}

// Borrow is Take for an entry that is expected back soon (a one-shot run
// whose runtime is recycled afterwards): until Settle, the loan counts as
// parked, so the pool does not boot a replacement that would only be
// discarded when the entry returns.
func (p *Pool[T]) Borrow(match func(T) bool) (T, bool) {
	return p.take(match, true)
}

// BorrowWait is Borrow that, when nothing is parked but loans are out,
// queues for the next entry to come back, oldest caller first, and gives up
// after wait: a loaned entry returns in a few milliseconds, while booting a
// new one can take far longer. While some loaned entry is being rebuilt
// (Returning), the wait goes on past wait: giving up then would only add a
// boot to work the machine is already short of time for.
func (p *Pool[T]) BorrowWait(ctx context.Context, match func(T) bool, wait time.Duration) (T, bool) {
	var zero T
	// One critical section from the look at the parked entries to the
	// queueing: an entry settled in between would otherwise sit parked
	// while this caller waits for the next one.
	p.mu.Lock()
	if e, ok := p.takeLocked(match, true); ok {
		p.mu.Unlock()
		return e, true
	}
	if p.loans == 0 || p.closed {
		p.mu.Unlock()
		return zero, false
	}
	w := &waiter[T]{match: match, ch: make(chan T, 1), queued: true}
	p.waitq = append(p.waitq, w)
	var counting <-chan time.Time
	if p.cfg.DemandAfter > 0 {
		t := time.NewTimer(p.cfg.DemandAfter)
		defer t.Stop()
		counting = t.C
	} else {
		p.countLocked(w)
	}
	p.mu.Unlock()
	p.Kick()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case e := <-w.ch:
			return e, true
		case <-counting:
			counting = nil
			p.mu.Lock()
			if w.queued {
				p.countLocked(w)
			}
			p.mu.Unlock()
			p.Kick()
		case <-ctx.Done():
			return p.leave(w)
		case <-timer.C:
			p.mu.Lock()
			coming := p.coming
			p.mu.Unlock()
			if coming == 0 {
				return p.leave(w)
			}
			timer.Reset(wait)
		}
	}
}

// leave takes w out of the queue; an entry handed to it meanwhile is its
// caller's after all.
func (p *Pool[T]) leave(w *waiter[T]) (T, bool) {
	p.mu.Lock()
	for i, q := range p.waitq {
		if q == w {
			p.dequeueLocked(i)
			p.mu.Unlock()
			var zero T
			return zero, false
		}
	}
	p.mu.Unlock()
	return <-w.ch, true
}

// Returning says a loaned entry is being rebuilt and will be settled soon;
// call the function it returns once Settle has been called.
func (p *Pool[T]) Returning() (done func()) {
	p.mu.Lock()
	p.coming++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.coming--
			p.mu.Unlock()
		})
	}
}

// Adopt counts an entry built outside the pool (a one-shot that found none
// parked) as on loan, so that it comes back through Settle and can stay.
func (p *Pool[T]) Adopt() {
	p.mu.Lock()
	p.loans++
	p.demandLocked()
	p.mu.Unlock()
}

// demandLocked records the current number of concurrent borrowers — loans
// not on their way back, and waiters — in the peak, which restarts from the
// current demand once Burst has passed.
func (p *Pool[T]) demandLocked() {
	d, now := p.borrowersLocked(), time.Now()
	if d >= p.peak || now.Sub(p.peakAt) > p.cfg.Burst {
		p.peak, p.peakAt = d, now
	}
}

// keepLocked is how many entries the pool holds, parked and lent out
// together: the target, or the recent peak of borrowers when higher (at
// most MaxKeep). A target of 0 turns the pool off, bursts included.
func (p *Pool[T]) keepLocked() int {
	n := p.cfg.Want()
	if n > 0 && p.peak > n && time.Since(p.peakAt) <= p.cfg.Burst {
		n = max(n, min(p.peak, p.cfg.MaxKeep))
	}
	return n
}

// idleRecheck is how often an idle pool looks at its entries unprompted
// (one that died while parked is replaced by then); everything else that
// changes its size kicks it.
const idleRecheck = 5 * time.Second

// recheckLocked is how long the filler may wait for a kick: until a burst
// it holds entries for ends (it then shrinks back), at most idleRecheck.
func (p *Pool[T]) recheckLocked() time.Duration {
	wait := idleRecheck
	if p.peak > p.cfg.Want() {
		if end := time.Until(p.peakAt.Add(p.cfg.Burst)) + 10*time.Millisecond; end > 0 && end < wait {
			wait = end
		}
	}
	return wait
}

// roomLocked reports whether one more entry fits: a caller is waiting for
// one, or it is within the target counting parked entries only, or within
// the recent peak counting loans.
func (p *Pool[T]) roomLocked() bool {
	return !p.closed && (len(p.waitq) > 0 || len(p.ready) < p.cfg.Want() || len(p.ready)+p.loans < p.keepLocked())
}

// trimLocked keeps the newest keep usable parked entries and discards the
// rest, the unusable and the oldest.
func (p *Pool[T]) trimLocked(keep int) {
	w := len(p.ready)
	for i := len(p.ready) - 1; i >= 0; i-- {
		e := p.ready[i]
		if len(p.ready)-w < keep && p.cfg.Usable(e) {
			w--
			p.ready[w] = e
		} else {
			go p.cfg.Discard(e)
		}
	}
	n := copy(p.ready, p.ready[w:])
	clear(p.ready[n:])
	p.ready = p.ready[:n]
}

// parkLocked hands e to the oldest waiter it suits (a new loan), or parks it.
func (p *Pool[T]) parkLocked(e T) {
	if p.cfg.Usable(e) {
		for i, w := range p.waitq {
			if w.match == nil || w.match(e) {
				p.dequeueLocked(i)
				p.loans++
				w.ch <- e
				return
			}
		}
	}
	p.ready = append(p.ready, e)
}

// Settle ends a loan from Borrow or Adopt. back is the entry, rebuilt for
// reuse, or nil when it is not coming back; Settle reports whether the pool
// kept it (if not, the caller discards it).
func (p *Pool[T]) Settle(back *T) bool {
	p.mu.Lock()
	p.loans--
	parked := false
	if back != nil && p.roomLocked() {
		p.parkLocked(*back)
		parked = true
	}
	p.mu.Unlock()
	p.Kick()
	return parked
}

// Room reports whether the pool would accept another entry now. With loan,
// the entry is one of the loans, about to be settled.
func (p *Pool[T]) Room(loan bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if loan {
		p.loans--
		defer func() { p.loans++ }()
	}
	return p.roomLocked()
}

// Put parks an entry built elsewhere (a recycled runtime). It returns false,
// leaving the entry to the caller, when the pool has no room.
func (p *Pool[T]) Put(e T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.roomLocked() {
		return false
	}
	p.parkLocked(e)
	return true
}

// Borrowers returns the demand the pool sizes itself by: entries lent and
// not on their way back (Returning), plus callers waiting for one (those
// that have waited Config.DemandAfter).
func (p *Pool[T]) Borrowers() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.borrowersLocked()
}

func (p *Pool[T]) borrowersLocked() int { return p.loans - p.coming + p.demand }

// countLocked counts waiter w towards the peak, and records the demand.
func (p *Pool[T]) countLocked(w *waiter[T]) {
	w.counted = true
	p.demand++
	p.demandLocked()
}

// dequeueLocked takes the i-th waiter out of the queue.
func (p *Pool[T]) dequeueLocked(i int) {
	w := p.waitq[i]
	p.waitq = append(p.waitq[:i], p.waitq[i+1:]...)
	w.queued = false
	if w.counted {
		p.demand--
	}
}

// Size returns how many entries are parked.
func (p *Pool[T]) Size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready)
}

// Close stops refilling and discards every parked entry.
func (p *Pool[T]) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	ready := p.ready
	p.ready = nil
	p.mu.Unlock()
	close(p.stop)
	p.wg.Wait()
	for _, e := range ready {
		p.cfg.Discard(e)
	}
}

func (p *Pool[T]) fill() {
	defer p.wg.Done()
	backoff := time.Second
	for {
		p.mu.Lock()
		wait := p.recheckLocked()
		p.mu.Unlock()
		recheck := time.NewTimer(wait)
		select {
		case <-p.stop:
			recheck.Stop()
			return
		case <-p.wake:
		case <-recheck.C:
		}
		recheck.Stop()
		for {
			p.mu.Lock()
			keep := p.keepLocked()
			p.trimLocked(keep)
			n, closed := len(p.ready)+p.loans, p.closed
			p.mu.Unlock()
			if closed || n >= keep {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), p.cfg.BootTimeout)
			started := time.Now()
			e, err := p.cfg.Boot(ctx)
			cancel()
			if err == nil && p.cfg.OnBoot != nil {
				p.cfg.OnBoot(time.Since(started))
			}
			if err != nil {
				p.cfg.Log.Warn("warm pool: boot failed; retrying", "err", err, "backoff", backoff)
				select {
				case <-p.stop:
					return
				case <-time.After(backoff):
				}
				if backoff *= 2; backoff > 30*time.Second {
					backoff = 30 * time.Second
				}
				continue
			}
			backoff = time.Second
			if !p.Put(e) {
				p.cfg.Discard(e)
				p.mu.Lock()
				closed = p.closed
				p.mu.Unlock()
				if closed {
					return
				}
			}
		}
	}
}
