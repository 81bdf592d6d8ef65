package spinread

import (
	"bytes"
	"errors"
	"io"
	"os"
	"runtime/metrics"
	"testing"
	"time"
)

// constructors are the two kinds of Reader: every behaviour test runs
// with both.
var constructors = []struct {
	name string
	new  func(*os.File, time.Duration) (*Reader, error)
}{{"poller", New}, {"in-kernel", NewWaitingInKernel}}

func pipeWith(t *testing.T, newReader func(*os.File, time.Duration) (*Reader, error), spin time.Duration) (*Reader, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	sr, err := newReader(r, spin)
	if err != nil {
		t.Fatal(err)
	}
	return sr, w
}

func pipe(t *testing.T, spin time.Duration) (*Reader, *os.File) {
	t.Helper()
	return pipeWith(t, New, spin)
}

func TestReadsWhatIsWritten(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) { readsWhatIsWritten(t, c.new) })
	}
}

func readsWhatIsWritten(t *testing.T, newReader func(*os.File, time.Duration) (*Reader, error)) {
	for _, spin := range []time.Duration{0, 200 * time.Microsecond, 50 * time.Millisecond} {
		sr, w := pipeWith(t, newReader, spin)
		want := bytes.Repeat([]byte("frame-"), 20000) // larger than a pipe buffer
		go func() {
			for i := 0; i < len(want); i += 1000 {
				w.Write(want[i:min(i+1000, len(want))])
				if i%20000 == 0 {
					time.Sleep(time.Millisecond) // some reads must wait
				}
			}
			w.Close()
		}()
		got, err := io.ReadAll(sr)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("spin %v: read %d bytes (want %d), err %v", spin, len(got), len(want), err)
		}
	}
}

func TestDeadlineKeepsLaterData(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) { deadlineKeepsLaterData(t, c.new) })
	}
}

func deadlineKeepsLaterData(t *testing.T, newReader func(*os.File, time.Duration) (*Reader, error)) {
	sr, w := pipeWith(t, newReader, 100*time.Microsecond)
	buf := make([]byte, 16)
	deadline := time.Now().Add(20 * time.Millisecond)
	if err := sr.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	if _, err := sr.Read(buf); !os.IsTimeout(err) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if time.Now().Before(deadline) {
		t.Fatal("the read gave up before its deadline")
	}
	w.Write([]byte("late"))
	if err := sr.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	n, err := sr.Read(buf)
	if err != nil || string(buf[:n]) != "late" {
		t.Fatalf("%q %v", buf[:n], err)
	}
}

func TestEOF(t *testing.T) {
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			sr, w := pipeWith(t, c.new, time.Millisecond)
			go func() {
				time.Sleep(5 * time.Millisecond) // the read is waiting by then, most times
				w.Close()
			}()
			if _, err := sr.Read(make([]byte, 4)); err != io.EOF {
				t.Fatalf("want EOF, got %v", err)
			}
		})
	}
}

func TestRefusesBlockingFile(t *testing.T) {
	f, err := os.Open(os.DevNull) // a regular character device: not pollable
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := New(f, time.Millisecond); err == nil {
		t.Fatal("a non-pollable file was accepted")
	}
}

// TestABlockingPipeIsMadeNonBlocking: Fd switches a pipe to blocking mode
// while it stays registered with the poller. New switches it back, so a
// read with nothing written ends at its deadline; a blocking descriptor
// would hold the raw read (and its P) until data came.
func TestABlockingPipeIsMadeNonBlocking(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	_ = r.Fd() // blocking from here
	sr, err := New(r, 100*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_ = sr.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := sr.Read(make([]byte, 4))
		done <- err
	}()
	select {
	case err := <-done:
		if !os.IsTimeout(err) {
			t.Fatalf("want a timeout, got %v", err)
		}
	case <-time.After(10 * time.Second):
		_, _ = w.Write([]byte("x")) // releases the stuck read so the test can end
		t.Fatal("the read on a blocking descriptor did not end at its deadline")
	}
}

// TestThePollStopsWhereItDoesNotPay: a reader whose waits outlast the poll
// (messages 0.1 ms or more apart, as over the engine's bus) stops polling
// after two of them, polls again on every 16th wait, and polls every time
// again once a poll catches a message.
//
// A message meant to outlast the poll is written only once the Read has
// given up polling (the gaveUp hook), not after a sleep: a reader paused
// for a few milliseconds mid-poll would otherwise catch it, and the counts
// would depend on the machine's load.
func TestThePollStopsWhereItDoesNotPay(t *testing.T) {
	sr, w := pipe(t, time.Millisecond)
	buf := make([]byte, 8)
	readInto := func(want string) {
		t.Helper()
		n, err := sr.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("read %q, %v; want %q", buf[:n], err, want)
		}
	}
	// late: the message comes after the Read stopped polling.
	late := func(want string) {
		t.Helper()
		gaveUp := make(chan struct{})
		sr.gaveUp = func() { close(gaveUp) }
		defer func() { sr.gaveUp = nil }()
		go func() {
			select {
			case <-gaveUp:
			case <-time.After(10 * time.Second): // a Read that never gives up: write so it ends
				t.Errorf("the read of %q never stopped polling", want)
			}
			w.Write([]byte(want))
		}()
		readInto(want)
	}
	// soon: the message comes after a while, caught by a poll that lasts
	// longer than that.
	soon := func(after time.Duration, want string) {
		t.Helper()
		go func() { time.Sleep(after); w.Write([]byte(want)) }()
		readInto(want)
	}
	if !sr.polls() {
		t.Fatal("a new reader does not poll")
	}
	late("a")
	if !sr.polls() {
		t.Fatal("one wait the poll did not end stopped the polling")
	}
	late("b")
	if sr.polls() {
		t.Fatalf("after %d waits in a row that outlasted the poll, the reader still polls", sr.misses)
	}
	probes := 0
	for i := 0; i < 2*probeEvery; i++ {
		if sr.polls() {
			probes++
		}
		late("c")
	}
	if probes != 2 {
		t.Fatalf("%d probes in %d waits; want 2", probes, 2*probeEvery)
	}
	// A message that comes while the reader polls turns polling back on.
	for !sr.polls() {
		late("d")
	}
	sr.spin = 10 * time.Second
	soon(time.Millisecond, "e")
	if sr.misses != 0 || !sr.polls() {
		t.Fatalf("a caught message left %d misses", sr.misses)
	}
	sr.spin = time.Millisecond
	late("f")
	if !sr.polls() {
		t.Fatal("one miss after a catch stopped the polling")
	}
}

// TestAKernelWaitHoldsItsThreadInASystemCall: a reader made by
// NewWaitingInKernel waits in a system call (its goroutine is not in Go),
// one made by New on the runtime's poller (its goroutine is parked,
// waiting, and none is in a system call for it). The runtime's own counts
// tell them apart.
func TestAKernelWaitHoldsItsThreadInASystemCall(t *testing.T) {
	count := func(name string) uint64 {
		s := []metrics.Sample{{Name: name}}
		metrics.Read(s)
		if s[0].Value.Kind() != metrics.KindUint64 {
			t.Skipf("skipped: this Go has no metric %s", name)
		}
		return s[0].Value.Uint64()
	}
	const notInGo, waiting = "/sched/goroutines/not-in-go:goroutines", "/sched/goroutines/waiting:goroutines"
	for _, c := range constructors {
		t.Run(c.name, func(t *testing.T) {
			sr, w := pipeWith(t, c.new, 0)
			want := map[string]string{"poller": waiting, "in-kernel": notInGo}[c.name]
			baseNotInGo, base := count(notInGo), count(want)
			done := make(chan error, 1)
			go func() {
				_, err := sr.Read(make([]byte, 4))
				done <- err
			}()
			// Until the read waits; a read that never counts as the
			// reader's kind of wait fails here.
			for bound := time.Now().Add(10 * time.Second); count(want) <= base; time.Sleep(time.Millisecond) {
				if time.Now().After(bound) {
					w.Write([]byte("x"))
					t.Fatalf("the waiting read never counted in %s (%d)", want, base)
				}
			}
			if c.name == "poller" {
				if got := count(notInGo); got > baseNotInGo {
					t.Errorf("%s went from %d to %d while the read waited on the poller", notInGo, baseNotInGo, got)
				}
			}
			w.Write([]byte("x"))
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}
