package tuning

import (
	"sync"
	"testing"
	"time"
)

// fakeProcs records what the governor applies.
type fakeProcs struct {
	mu   sync.Mutex
	cur  int
	sets []int
}

func (f *fakeProcs) set(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	prev := f.cur
	f.cur = n
	f.sets = append(f.sets, n)
	return prev
}

func (f *fakeProcs) now() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cur
}

func (f *fakeProcs) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sets)
}

// eventually waits (up to 10 s) for cond; it never asserts how long it took.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestOneAtATimeStaysOnOneP(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(1, 4, 10*time.Millisecond, f.set)
	if f.now() != 1 {
		t.Fatalf("New applied %d, want the low value 1", f.now())
	}
	for i := 0; i < 200; i++ {
		leave := g.Enter(1)
		leave()
	}
	if f.count() != 1 || g.Procs() != 1 {
		t.Fatalf("sequential work changed GOMAXPROCS: %v", f.sets)
	}
}

func TestASecondPieceOfWorkRaisesAtOnceAndCalmLowers(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(1, 4, 20*time.Millisecond, f.set)
	a := g.Enter(1)
	b := g.Enter(1)
	if f.now() != 4 || g.Procs() != 4 {
		t.Fatalf("two in flight: GOMAXPROCS %d, want 4 before Enter returns", f.now())
	}
	// Busy for several calm periods: never lowered.
	time.Sleep(100 * time.Millisecond)
	if f.now() != 4 {
		t.Fatalf("lowered to %d with two in flight", f.now())
	}
	b()
	a()
	eventually(t, "back to one P after the calm period", func() bool { return f.now() == 1 && g.Procs() == 1 })
	if got := f.sets; len(got) != 3 || got[0] != 1 || got[1] != 4 || got[2] != 1 {
		t.Fatalf("applied %v, want [1 4 1]", got)
	}
}

func TestOneLeftInFlightStillLowers(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(1, 3, 10*time.Millisecond, f.set)
	long := g.Enter(1)
	defer long()
	g.Enter(1)()
	if f.count() != 2 {
		t.Fatalf("applied %v, want a raise", f.sets)
	}
	eventually(t, "lowered while one stays in flight", func() bool { return f.now() == 1 })
}

func TestWeightTwoRaisesAlone(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(1, 4, 10*time.Millisecond, f.set)
	leave := g.Enter(2)
	if f.now() != 4 {
		t.Fatalf("weight 2 alone: GOMAXPROCS %d, want 4", f.now())
	}
	leave()
	eventually(t, "lowered", func() bool { return f.now() == 1 })
}

func TestLeavingTwiceCountsOnce(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(1, 4, time.Hour, f.set)
	leave := g.Enter(1)
	leave()
	leave()
	a := g.Enter(1)
	defer a()
	if f.now() != 1 {
		t.Fatal("one in flight raised: a second leave was counted")
	}
	b := g.Enter(1)
	defer b()
	if f.now() != 4 {
		t.Fatalf("two in flight: GOMAXPROCS %d, want 4", f.now())
	}
}

func TestCloseLeavesTheHighValue(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(1, 4, 10*time.Millisecond, f.set)
	g.Close()
	if f.now() != 4 {
		t.Fatalf("after Close GOMAXPROCS %d, want 4", f.now())
	}
	g.Enter(1)()
	a, b := g.Enter(1), g.Enter(1)
	b()
	a()
	time.Sleep(50 * time.Millisecond)
	if f.now() != 4 || f.count() != 2 {
		t.Fatalf("a closed governor still changes GOMAXPROCS: %v", f.sets)
	}
}

func TestNilGovernorDoesNothing(t *testing.T) {
	var g *Governor
	g.Enter(2)()
	g.Close()
	if g.Procs() != 0 {
		t.Fatal("a nil governor reports Ps")
	}
}

func TestBadBoundsAreClamped(t *testing.T) {
	f := &fakeProcs{}
	g := NewGovernor(0, 0, time.Hour, f.set)
	a, b := g.Enter(1), g.Enter(1)
	defer a()
	defer b()
	if f.now() != 1 {
		t.Fatalf("low 0, high 0: GOMAXPROCS %d, want 1 throughout", f.now())
	}
}
