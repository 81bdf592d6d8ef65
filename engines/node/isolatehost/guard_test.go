package isolatehost

import (
	"sync/atomic"
	"testing"
	"time"
)

// A deadline timer that fires just as the entry ends must not terminate
// anything afterwards: the interleaving is forced by holding the timer
// between its firing and its taking the guard's lock while the entry ends.
func TestGuardTerminationCannotLeakIntoTheNextEntry(t *testing.T) {
	var terminated atomic.Int32
	g := &guard{terminate: func() { terminated.Add(1) }}
	fired := make(chan struct{})
	release := make(chan struct{})
	g.beforeFire = func() {
		close(fired)
		<-release
	}
	g.arm(time.Now().Add(time.Millisecond))
	<-fired // the timer fired; the entry has not noticed
	if why := g.disarm(); why != "" {
		t.Fatalf("disarm reported %q before the timer took effect", why)
	}
	g.beforeFire = nil
	// The next entry (the next tenant of a recycled host) starts before the
	// stale timer goes on.
	g.arm(time.Now().Add(time.Hour))
	close(release)
	time.Sleep(20 * time.Millisecond)
	if n := terminated.Load(); n != 0 {
		t.Fatalf("a stale timer terminated %d time(s)", n)
	}
	if why := g.disarm(); why != "" {
		t.Fatalf("the next entry was reported as %q", why)
	}
}

func TestGuardReportsDeadlineAndMemory(t *testing.T) {
	var terminated atomic.Int32
	over := atomic.Bool{}
	g := &guard{terminate: func() { terminated.Add(1) }, overMemory: over.Load}
	g.arm(time.Now().Add(20 * time.Millisecond))
	deadline := time.Now().Add(5 * time.Second)
	for terminated.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if why := g.disarm(); why != firedDeadline {
		t.Fatalf("got %q", why)
	}
	g.arm(time.Now().Add(time.Hour))
	over.Store(true)
	for terminated.Load() == 1 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if why := g.disarm(); why != firedMemory {
		t.Fatalf("got %q", why)
	}
}
