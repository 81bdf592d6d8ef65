package gopool

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// deep runs n frames deep, each with some stack of its own.
//
//go:noinline
func deep(n int) int {
	var pad [256]byte
	pad[n%256] = byte(n)
	if n == 0 {
		return int(pad[0])
	}
	return deep(n-1) + int(pad[n%256])
}

// A function given to Go while a goroutine waits runs on that goroutine:
// twenty calls in a row, each given once the last one's goroutine waits,
// run on a handful of goroutines, not twenty. (A goroutine counted as
// waiting may not have reached its receive yet, when Go starts another:
// hence a handful, not one.)
func TestAWaitingGoroutineTakesTheNextFunction(t *testing.T) {
	p := New(4)
	defer p.Close()
	seen := map[uint64]bool{}
	for i := 0; i < 20; i++ {
		id := make(chan uint64)
		p.Go(func() { id <- goid() })
		seen[<-id] = true
		waitIdle(t, p, 1)
		time.Sleep(time.Millisecond)
	}
	if len(seen) > 5 {
		t.Fatalf("twenty calls in a row ran on %d goroutines", len(seen))
	}
}

// Go never waits for a goroutine to come free: functions that block all
// run at once, each on its own goroutine, and at most maxIdle of those wait
// afterwards.
func TestGoNeverWaitsAndKeepsAtMostMaxIdle(t *testing.T) {
	p := New(2)
	defer p.Close()
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(5)
	for i := 0; i < 5; i++ {
		p.Go(func() {
			started.Done()
			<-release
			_ = deep(64)
		})
	}
	started.Wait() // all five blocked at once: none waited for another
	close(release)
	waitIdle(t, p, 2)
	time.Sleep(20 * time.Millisecond)
	if n := p.Idle(); n != 2 {
		t.Fatalf("%d goroutines wait, want at most 2", n)
	}
}

// Close ends the waiting goroutines, and functions given after it still
// run.
func TestCloseEndsTheWaitingGoroutines(t *testing.T) {
	base := runtime.NumGoroutine()
	p := New(8)
	// Each function blocks until all three have started, so they run on
	// three goroutines at once; given one after another without that, a
	// goroutine already waiting could take the next one, and fewer than
	// three would wait afterwards.
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(3)
	for i := 0; i < 3; i++ {
		p.Go(func() { started.Done(); <-release })
	}
	started.Wait()
	close(release)
	waitIdle(t, p, 3)
	p.Close()
	p.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base {
		t.Fatalf("%d goroutines after Close, %d before the pool", n, base)
	}
	ran := make(chan struct{})
	p.Go(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a function given after Close did not run")
	}
}

func waitIdle(t *testing.T, p *Pool, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for p.Idle() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines waiting, want %d", p.Idle(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// goid is the calling goroutine's id, read from its stack trace header.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	// "goroutine 123 [running]:"
	var id uint64
	for _, c := range b[len("goroutine "):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}
