// Package warmpool keeps pre-booted runtimes ready for hand-out: it refills
// in the background to a live target size, discards entries that no longer
// fit the live configuration, and retries boot failures with backoff (1 s
// doubling to 30 s). Both engines use it for their pools (contract §15.3).
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
	Log         *slog.Logger
}

// Pool is a warm pool. Entries are handed out once.
type Pool[T any] struct {
	cfg    Config[T]
	mu     sync.Mutex
	ready  []T
	loans  int           // entries handed out by Borrow and not yet settled
	back   chan struct{} // closed (and replaced) whenever an entry is parked
	wake   chan struct{}
	stop   chan struct{}
	closed bool
	wg     sync.WaitGroup
}

// New starts a pool filling in the background.
func New[T any](cfg Config[T]) *Pool[T] {
	if cfg.BootTimeout == 0 {
		cfg.BootTimeout = 60 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	p := &Pool[T]{cfg: cfg, back: make(chan struct{}), wake: make(chan struct{}, 1), stop: make(chan struct{})}
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

// Take hands out the first usable entry that match accepts (entries match
// refuses are discarded), and starts a refill.
func (p *Pool[T]) Take(match func(T) bool) (T, bool) {
	return p.take(match, false)
}

// take hands out an entry; with loan, the loan is counted in the same
// critical section, before the refill it kicks can look.
func (p *Pool[T]) take(match func(T) bool, loan bool) (T, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.Kick()
	for len(p.ready) > 0 {
		e := p.ready[0]
		p.ready = p.ready[1:]
		if p.cfg.Usable(e) && (match == nil || match(e)) {
			if loan {
				p.loans++
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
// waits up to wait for one to come back before giving up: a loaned entry
// returns in a few milliseconds, while booting a new one can take far
// longer.
func (p *Pool[T]) BorrowWait(ctx context.Context, match func(T) bool, wait time.Duration) (T, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		if e, ok := p.take(match, true); ok {
			return e, true
		}
		p.mu.Lock()
		loans, back, closed := p.loans, p.back, p.closed
		p.mu.Unlock()
		var zero T
		if loans == 0 || closed {
			return zero, false
		}
		select {
		case <-back:
		case <-timer.C:
			return zero, false
		case <-ctx.Done():
			return zero, false
		}
	}
}

// parkedLocked tells waiters an entry was parked.
func (p *Pool[T]) parkedLocked() {
	close(p.back)
	p.back = make(chan struct{})
}

// Settle ends a loan from Borrow. back is the entry, rebuilt for reuse, or
// nil when it is not coming back; Settle reports whether it was parked (if
// not, the caller discards it).
func (p *Pool[T]) Settle(back *T) bool {
	p.mu.Lock()
	p.loans--
	parked := false
	if back != nil && !p.closed && len(p.ready) < p.cfg.Want() {
		p.ready = append(p.ready, *back)
		parked = true
		p.parkedLocked()
	}
	p.mu.Unlock()
	p.Kick()
	return parked
}

// Room reports whether the pool would accept another entry now.
func (p *Pool[T]) Room() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed && len(p.ready) < p.cfg.Want()
}

// Put parks an entry built elsewhere (a recycled runtime). It returns false,
// leaving the entry to the caller, when the pool has no room.
func (p *Pool[T]) Put(e T) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.ready) >= p.cfg.Want() {
		return false
	}
	p.ready = append(p.ready, e)
	p.parkedLocked()
	return true
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
		select {
		case <-p.stop:
			return
		case <-p.wake:
		case <-time.After(time.Second):
		}
		for {
			want := p.cfg.Want()
			p.mu.Lock()
			kept := p.ready[:0]
			for _, e := range p.ready {
				if len(kept) < want && p.cfg.Usable(e) {
					kept = append(kept, e)
				} else {
					go p.cfg.Discard(e)
				}
			}
			p.ready = kept
			n, closed := len(p.ready)+p.loans, p.closed
			p.mu.Unlock()
			if closed || n >= want {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), p.cfg.BootTimeout)
			e, err := p.cfg.Boot(ctx)
			cancel()
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
