package warmpool

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type entry struct {
	id   int
	size int
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFillsTakesOnceAndRefills(t *testing.T) {
	var booted, discarded atomic.Int64
	var want atomic.Int64
	want.Store(2)
	size := atomic.Int64{}
	size.Store(128)
	p := New(Config[*entry]{
		Boot: func(ctx context.Context) (*entry, error) {
			return &entry{id: int(booted.Add(1)), size: int(size.Load())}, nil
		},
		Discard: func(*entry) { discarded.Add(1) },
		Want:    func() int { return int(want.Load()) },
		Usable:  func(e *entry) bool { return e.size == int(size.Load()) },
	})
	defer p.Close()
	waitFor(t, func() bool { return p.Size() == 2 })
	a, ok := p.Take(nil)
	b, ok2 := p.Take(nil)
	if !ok || !ok2 || a == b {
		t.Fatal("entries must be handed out once each")
	}
	waitFor(t, func() bool { return p.Size() == 2 }) // refilled in the background
	// A live change makes parked entries unfit: they are discarded and rebuilt.
	size.Store(256)
	p.Kick()
	waitFor(t, func() bool {
		e, ok := p.Take(func(e *entry) bool { return e.size == 256 })
		return ok && e.size == 256
	})
	waitFor(t, func() bool { return discarded.Load() > 0 }) // Discard runs on a goroutine of its own
	// Shrinking discards extras; Put refuses past the size.
	want.Store(0)
	p.Kick()
	waitFor(t, func() bool { return p.Size() == 0 })
	if p.Put(&entry{size: 256}) || p.Room(false) {
		t.Fatal("Put accepted an entry past the target size")
	}
}

// TestOnBootReportsEachSuccessfulBoot: the refill time of every boot that
// worked, none for one that failed.
func TestOnBootReportsEachSuccessfulBoot(t *testing.T) {
	var boots atomic.Int64
	var reported []time.Duration
	var mu sync.Mutex
	p := New(Config[*entry]{
		Boot: func(ctx context.Context) (*entry, error) {
			if boots.Add(1) == 1 {
				return nil, errors.New("the first boot fails")
			}
			time.Sleep(2 * time.Millisecond)
			return &entry{}, nil
		},
		Discard: func(*entry) {},
		Want:    func() int { return 2 },
		Usable:  func(*entry) bool { return true },
		OnBoot: func(d time.Duration) {
			mu.Lock()
			reported = append(reported, d)
			mu.Unlock()
		},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer p.Close()
	waitFor(t, func() bool { return p.Size() == 2 })
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 2 || reported[0] < 2*time.Millisecond || reported[1] < 2*time.Millisecond {
		t.Fatalf("reported %v, want two boots of at least 2 ms", reported)
	}
}

func TestBootFailuresBackOff(t *testing.T) {
	var calls atomic.Int64
	p := New(Config[int]{
		Boot: func(ctx context.Context) (int, error) {
			if calls.Add(1) < 3 {
				return 0, errors.New("nope")
			}
			return 7, nil
		},
		Discard: func(int) {},
		Want:    func() int { return 1 },
		Usable:  func(int) bool { return true },
	})
	defer p.Close()
	start := time.Now()
	waitFor(t, func() bool { return p.Size() == 1 })
	if time.Since(start) < time.Second {
		t.Fatal("no backoff between failed boots")
	}
}

func TestCloseDiscardsEverything(t *testing.T) {
	var mu sync.Mutex
	live := map[int]bool{}
	n := 0
	p := New(Config[int]{
		Boot: func(ctx context.Context) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			live[n] = true
			return n, nil
		},
		Discard: func(i int) { mu.Lock(); defer mu.Unlock(); delete(live, i) },
		Want:    func() int { return 3 },
		Usable:  func(int) bool { return true },
	})
	waitFor(t, func() bool { return p.Size() == 3 })
	p.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(live) != 0 {
		t.Fatalf("%d entries leaked", len(live))
	}
}

// TestLoansAreNotReplaced: an entry on loan (Borrow) counts as parked, so
// the pool boots no replacement for it; returned, it is parked again; lost,
// it is replaced.
func TestLoansAreNotReplaced(t *testing.T) {
	var booted atomic.Int64
	p := New(Config[*entry]{
		Boot:    func(ctx context.Context) (*entry, error) { return &entry{id: int(booted.Add(1))}, nil },
		Discard: func(*entry) {},
		Want:    func() int { return 2 },
		Usable:  func(*entry) bool { return true },
	})
	defer p.Close()
	waitFor(t, func() bool { return p.Size() == 2 })
	a, ok := p.Borrow(nil)
	if !ok {
		t.Fatal("nothing to borrow")
	}
	p.Kick()
	time.Sleep(100 * time.Millisecond) // room for a (wrong) refill to happen
	if n := booted.Load(); n != 2 || p.Size() != 1 {
		t.Fatalf("a loan was replaced: %d boots, %d parked", n, p.Size())
	}
	if !p.Settle(&a) || p.Size() != 2 {
		t.Fatalf("the returned entry was not parked (%d parked)", p.Size())
	}
	if _, ok := p.Borrow(nil); !ok {
		t.Fatal("nothing to borrow")
	}
	if p.Settle(nil) {
		t.Fatal("Settle(nil) cannot park anything")
	}
	waitFor(t, func() bool { return p.Size() == 2 && booted.Load() == 3 }) // a lost loan is replaced
}

// BorrowWait waits for a loaned entry to come back instead of giving up,
// and gives up at once when no loan is out. (Boots after the first hang, so
// the returning entry is the only one the waiter can get.)
func TestBorrowWaitTakesTheEntryThatComesBack(t *testing.T) {
	var booted atomic.Int64
	hang := make(chan struct{})
	p := New(Config[int]{
		Boot: func(ctx context.Context) (int, error) {
			if booted.Load() >= 1 {
				select {
				case <-hang:
				case <-ctx.Done():
				}
				return 0, errors.New("boot abandoned")
			}
			return int(booted.Add(1)), nil
		},
		Discard: func(int) {},
		Want:    func() int { return 1 },
		Usable:  func(int) bool { return true },
	})
	defer p.Close()
	defer close(hang) // before Close, which waits for the hanging boot
	deadline := time.Now().Add(5 * time.Second)
	for p.Size() < 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	e, ok := p.Borrow(nil)
	if !ok {
		t.Fatal("nothing to borrow")
	}
	got := make(chan int, 1)
	go func() {
		v, ok := p.BorrowWait(context.Background(), nil, 10*time.Second)
		if !ok {
			v = -1
		}
		got <- v
	}()
	waitFor(t, func() bool { return p.waiting() == 1 })
	if !p.Settle(&e) {
		t.Fatal("the returning entry was not parked")
	}
	if v := <-got; v != e {
		t.Fatalf("the waiter got %d, want the returned entry %d", v, e)
	}
	p.Settle(nil)
	// No loan out and nothing parked (want 0 now): no wait at all.
	q := New(Config[int]{Boot: func(ctx context.Context) (int, error) { return 0, nil }, Discard: func(int) {}, Want: func() int { return 0 }, Usable: func(int) bool { return true }})
	defer q.Close()
	start := time.Now()
	if _, ok := q.BorrowWait(context.Background(), nil, 10*time.Second); ok || time.Since(start) > 5*time.Second {
		t.Fatalf("BorrowWait with no loan out: ok=%v after %v", ok, time.Since(start))
	}
}

// newIdlePool is a pool with a target of 0 whose boots never finish: the
// only entries it hands out are those settled into it.
func newIdlePool(t *testing.T) *Pool[int] {
	p := New(Config[int]{
		Boot:        func(ctx context.Context) (int, error) { <-ctx.Done(); return 0, ctx.Err() },
		Discard:     func(int) {},
		Want:        func() int { return 0 },
		Usable:      func(int) bool { return true },
		BootTimeout: 50 * time.Millisecond,
	})
	t.Cleanup(p.Close)
	return p
}

// Callers queue in order: entries coming back go to the longest waiter.
func TestBorrowWaitServesTheOldestWaiterFirst(t *testing.T) {
	p := newIdlePool(t)
	p.Adopt()
	p.Adopt()
	got := make([]chan int, 3)
	for i := range got {
		got[i] = make(chan int, 1)
		go func() {
			v, ok := p.BorrowWait(context.Background(), nil, 10*time.Second)
			if !ok {
				v = -1
			}
			got[i] <- v
		}()
		waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waitq) == i+1 })
	}
	for _, v := range []int{10, 20} {
		v := v
		if !p.Settle(&v) {
			t.Fatalf("entry %d was not kept for a waiter", v)
		}
	}
	if a, b := <-got[0], <-got[1]; a != 10 || b != 20 {
		t.Fatalf("waiters got %d and %d, want 10 then 20 (oldest first)", a, b)
	}
	select {
	case v := <-got[2]:
		t.Fatalf("the third waiter got %d with nothing returned", v)
	default:
	}
}

// A burst of overlapping borrowers raises what the pool holds to their
// number (booting the difference, keeping what comes back) until the burst
// has passed; then the pool trims back to its target.
func TestPoolFollowsABurstAndShrinksAfter(t *testing.T) {
	var booted, discarded atomic.Int64
	p := New(Config[int]{
		Boot:    func(ctx context.Context) (int, error) { return int(booted.Add(1)), nil },
		Discard: func(int) { discarded.Add(1) },
		Want:    func() int { return 1 },
		Usable:  func(int) bool { return true },
		Burst:   2 * time.Second, // long enough that a loaded machine finishes the burst inside it
	})
	defer p.Close()
	waitFor(t, func() bool { return p.Size() == 1 })
	var held []int
	for i := 0; i < 3; i++ {
		v, ok := p.BorrowWait(context.Background(), nil, 5*time.Second)
		if !ok {
			t.Fatalf("borrower %d got nothing", i)
		}
		held = append(held, v)
	}
	for _, v := range held {
		v := v
		if !p.Settle(&v) {
			t.Fatalf("entry %d was discarded during the burst", v)
		}
	}
	if p.Size() != 3 || discarded.Load() != 0 {
		t.Fatalf("during the burst: %d parked, %d discarded; want 3 and 0", p.Size(), discarded.Load())
	}
	waitFor(t, func() bool { return p.Size() == 1 && discarded.Load() == 2 })
	if n := booted.Load(); n != 3 {
		t.Fatalf("%d boots for a peak of 3 borrowers", n)
	}
}

// A waiter gives up after its wait only when no loaned entry is on its way
// back (Returning): while one is being rebuilt, it waits on.
func TestBorrowWaitOutlastsItsWaitWhileAnEntryIsReturning(t *testing.T) {
	p := newIdlePool(t)
	p.Adopt()
	if _, ok := p.BorrowWait(context.Background(), nil, 20*time.Millisecond); ok {
		t.Fatal("got an entry although none came back")
	}
	done := p.Returning()
	got := make(chan bool, 1)
	go func() { _, ok := p.BorrowWait(context.Background(), nil, 20*time.Millisecond); got <- ok }()
	select {
	case <-got:
		t.Fatal("gave up while an entry was returning")
	case <-time.After(200 * time.Millisecond):
	}
	v := 7
	p.Settle(&v)
	done()
	if !<-got {
		t.Fatal("the returning entry did not reach the waiter")
	}
}

// The newest parked entry goes out first and a trim drops the oldest: the
// entry handed out is the one whose memory was touched last. (Loans count
// as parked, so no refill boots while the test looks at the order.)
func TestHandsOutTheNewestAndTrimsTheOldest(t *testing.T) {
	var booted atomic.Int64
	var want atomic.Int64
	want.Store(3)
	var mu sync.Mutex
	var discarded []int
	p := New(Config[*entry]{
		Boot: func(ctx context.Context) (*entry, error) {
			return &entry{id: int(booted.Add(1))}, nil
		},
		Discard: func(e *entry) { mu.Lock(); discarded = append(discarded, e.id); mu.Unlock() },
		Want:    func() int { return int(want.Load()) },
		Usable:  func(*entry) bool { return true },
	})
	defer p.Close()
	waitFor(t, func() bool { return p.Size() == 3 })
	if e, _ := p.Borrow(nil); e.id != 3 {
		t.Fatalf("lent entry %d, want 3 (the newest of 1, 2, 3)", e.id)
	}
	back := &entry{id: 10}
	if !p.Settle(&back) {
		t.Fatal("a pool below its target refused an entry back")
	}
	if e, _ := p.Borrow(nil); e.id != 10 {
		t.Fatalf("lent entry %d, want 10 (the one just back)", e.id)
	}
	back = &entry{id: 11}
	p.Settle(&back)
	want.Store(1)
	p.Kick()
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(discarded) == 2 })
	mu.Lock()
	got := append([]int(nil), discarded...)
	mu.Unlock()
	if !(got[0] == 1 && got[1] == 2 || got[0] == 2 && got[1] == 1) {
		t.Fatalf("the trim discarded %v, want the oldest two, 1 and 2", got)
	}
	if n := p.Size(); n != 1 {
		t.Fatalf("%d parked after the trim, want 1", n)
	}
	if e, _ := p.Take(nil); e.id != 11 {
		t.Fatalf("the trim kept entry %d, want 11 (the newest)", e.id)
	}
	if n := booted.Load(); n > 4 {
		t.Fatalf("%d boots, want 3 and at most the one refill after the last take", n)
	}
}

// With DemandAfter, a caller served by an entry coming back within it
// grows nothing; one that waits longer counts towards the peak, and the
// pool boots for it.
func TestWaitersCountTowardsThePeakOnlyAfterDemandAfter(t *testing.T) {
	var booted atomic.Int64
	p := New(Config[*entry]{
		Boot:        func(ctx context.Context) (*entry, error) { return &entry{id: int(booted.Add(1))}, nil },
		Discard:     func(*entry) {},
		Want:        func() int { return 1 },
		Usable:      func(*entry) bool { return true },
		DemandAfter: 2 * time.Second, // long enough that the first waiter is served inside it on a loaded machine
	})
	defer p.Close()
	waitFor(t, func() bool { return p.Size() == 1 })
	lent, _ := p.Borrow(nil)
	got := make(chan *entry, 1)
	go func() {
		e, _ := p.BorrowWait(context.Background(), nil, 5*time.Second)
		got <- e
	}()
	waitFor(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waitq) == 1 })
	if !p.Settle(&lent) { // back well within DemandAfter: straight to the waiter
		t.Fatal("the pool refused its own entry back")
	}
	if e := <-got; e != lent {
		t.Fatalf("the waiter got %v, want the entry that came back", e)
	}
	time.Sleep(50 * time.Millisecond) // a boot the waiter caused would have started
	if n := booted.Load(); n != 1 {
		t.Fatalf("%d boots, want 1: a waiter served within DemandAfter grew the pool", n)
	}
	// Now one that is not served: past DemandAfter it counts, and the
	// pool boots an entry, which goes to it.
	go func() {
		e, _ := p.BorrowWait(context.Background(), nil, 5*time.Second)
		got <- e
	}()
	select {
	case e := <-got:
		if e == nil || e == lent {
			t.Fatalf("the second waiter got %v, want a new entry", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiter past DemandAfter made the pool boot nothing")
	}
	if n := booted.Load(); n != 2 {
		t.Fatalf("%d boots, want 2", n)
	}
}
