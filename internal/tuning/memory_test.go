package tuning

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestABurstOfDisposalsReturnsMemoryOnce: many Soon calls before the
// return runs coalesce into one; after it ran, the next Soon schedules
// another; after Stop nothing is scheduled.
func TestABurstOfDisposalsReturnsMemoryOnce(t *testing.T) {
	var frees atomic.Int32
	done := make(chan struct{}, 4)
	m := &MemoryReturner{delay: 20 * time.Millisecond, Free: func() { frees.Add(1); done <- struct{}{} }}
	for i := 0; i < 50; i++ {
		m.Soon()
	}
	<-done
	if n := frees.Load(); n != 1 {
		t.Fatalf("a burst of 50 returned memory %d times", n)
	}
	m.Soon()
	<-done
	if n := frees.Load(); n != 2 {
		t.Fatalf("the next disposal after a return: %d returns, want 2", n)
	}
	m.Stop()
	m.Soon()
	m.mu.Lock()
	pending := m.pending
	m.mu.Unlock()
	if pending {
		t.Fatal("a stopped returner scheduled a return")
	}
}
