// Package spinread reads a pipe with a short busy-poll before sleeping.
//
// Between the worker and its isolate hosts every call is a request and an
// answer over a pipe. Measured on the 2-core VMs this project runs on, the
// pipe itself costs ~10 µs a round trip, but waking a process whose threads
// have gone to sleep costs 30–60 µs per direction, several times the work of
// a small call. A reader that keeps polling the descriptor for a short while
// after each message catches the next one while its thread is still awake.
// The poll yields to other goroutines (runtime.Gosched) on every empty try,
// so it only burns CPU nothing else wanted, and only for Spin per read.
//
// The poll adapts: it only pays where messages follow each other closely
// (a guest's host call and its reply, calls issued back to back inside the
// worker). Where they come over the engine's bus, the next one is 0.1 ms or
// more away and every poll is CPU thrown away, so after two waits in a row
// that outlasted it a Reader goes straight to the poller, trying the poll
// again on every 16th wait to notice when messages come close again.
//
// Where the poll gives up, a Reader parks its goroutine on the runtime's
// poller; one made by NewWaitingInKernel blocks its thread in poll(2)
// instead (an isolate host's stdin: see NewWaitingInKernel for why).
package spinread

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/code-runner-go/code-runner/internal/rawconn"
)

// Reader reads a non-blocking *os.File (a pipe from os.Pipe or made
// non-blocking with syscall.SetNonblock), polling for up to Spin before
// waiting on the runtime's poller (or, made by NewWaitingInKernel or
// switched by SetWaitInKernel, in poll(2)). Read deadlines set on the file
// apply to a Reader waiting on the poller; one waiting in the kernel knows
// only those set through its own SetReadDeadline, between Reads. The file
// must stay non-blocking, as New leaves it: never call its Fd method after
// New (Fd switches the descriptor to blocking mode, and the
// poll's raw read would then hold its thread and P until data came).
type Reader struct {
	f    *os.File
	rc   syscall.RawConn
	spin time.Duration
	// misses counts the waits in a row the poll did not end: the reader's
	// own state, touched only by Read (one reader at a time, as for any
	// io.Reader).
	misses int
	// inKernel says a wait blocks the reading thread in poll(2) instead
	// of parking the goroutine on the runtime's poller (NewWaitingInKernel);
	// deadline is then the read deadline, kept here for the wait's timeout.
	inKernel bool
	deadline time.Time
	pollFD   [1]unix.PollFd
	// gaveUp, when set (only tests set it), is called once per Read, on
	// the reading goroutine, when the Read stops polling and is about to
	// wait: a test writes then, so a wait outlasts the poll whatever the
	// scheduler does.
	gaveUp func()
}

const (
	// missesBeforeSleeping is how many waits in a row the poll may
	// outlast before a Reader stops polling.
	missesBeforeSleeping = 2
	// probeEvery is how often, in waits, a Reader that stopped polling
	// polls once more: a caught message turns polling back on.
	probeEvery = 16
)

// polls reports whether the next wait polls first.
func (r *Reader) polls() bool {
	return r.spin > 0 && (r.misses < missesBeforeSleeping || r.misses%probeEvery == 0)
}

// New wraps f. It fails when f is not pollable (a blocking descriptor).
// A pollable file whose descriptor was switched to blocking mode (by Fd)
// is switched back.
func New(f *os.File, spin time.Duration) (*Reader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("spinread: %w", err)
	}
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("spinread: %s is not pollable: %w", f.Name(), err)
	}
	var nbErr error
	if err := rc.Control(func(fd uintptr) { nbErr = syscall.SetNonblock(int(fd), true) }); err != nil {
		return nil, fmt.Errorf("spinread: %s: %w", f.Name(), err)
	}
	if nbErr != nil {
		return nil, fmt.Errorf("spinread: %s cannot be made non-blocking: %w", f.Name(), nbErr)
	}
	return &Reader{f: f, rc: rc, spin: spin}, nil
}

// NewWaitingInKernel is New for a reader whose waits, once the poll gives
// up, block its thread in poll(2) — a system call the scheduler knows of —
// instead of parking the goroutine on the runtime's poller. An isolate
// host bound to a kept runtime wants that: with a second P idle, the
// runtime's monitor leaves the P with the waiting thread for 10–20 ms and
// does not go to sleep meanwhile, so the host's next V8 entry (a cgo call,
// which wakes a sleeping monitor) does not wake it again. A goroutine
// parked on the poller would leave every P idle between turns, and the
// monitor asleep. (With one P the monitor takes the P back at its next
// tick, and this reader behaves like New's.) Its poll yields between tries
// as New's does; with an idle P, a yield can wake a thread (at most one per
// wait: a spinning thread stops the next yields from waking another), yet
// a poll that did not yield woke the host more per kept turn (2.8–3.1
// times against 2.5–2.6, three alternating runs of 3,000 turns).
//
// Its waits know only the deadline set through SetReadDeadline before the
// Read: one set on the file, or while a Read waits, is not seen until the
// next wait. While a Read waits, the reader holds the file's read lock, and
// a Close does not end the wait: only the reading goroutine may set its
// deadline or close the file.
func NewWaitingInKernel(f *os.File, spin time.Duration) (*Reader, error) {
	r, err := New(f, spin)
	if err != nil {
		return nil, err
	}
	r.inKernel = true
	return r, nil
}

// SetWaitInKernel switches the reader between the two kinds of wait: in
// poll(2) (on, as NewWaitingInKernel makes it) or on the runtime's poller
// (off, as New makes it). Call it only between Reads, from the reading
// goroutine.
func (r *Reader) SetWaitInKernel(on bool) { r.inKernel = on }

// SetReadDeadline sets the deadline of the underlying file (and, for a
// reader waiting in the kernel, of its waits).
func (r *Reader) SetReadDeadline(t time.Time) error {
	if err := r.f.SetReadDeadline(t); err != nil {
		return err
	}
	r.deadline = t
	return nil
}

// waitInKernel blocks until fd is readable or the read deadline passes
// (then it reports true).
func (r *Reader) waitInKernel(fd uintptr) (timedOut bool, err error) {
	timeout := -1 // no deadline: wait for data
	if !r.deadline.IsZero() {
		left := time.Until(r.deadline)
		if left <= 0 {
			return true, nil
		}
		// Rounded up, so it never wakes before it; a deadline weeks away
		// is waited for in steps poll(2) can take.
		timeout = int(min((left+time.Millisecond-1)/time.Millisecond, math.MaxInt32))
	}
	r.pollFD[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	if _, err := unix.Poll(r.pollFD[:], timeout); err != nil && err != unix.EINTR {
		return false, err
	}
	// Readable, interrupted or timed out: the caller reads again, and
	// comes back here while the deadline has not passed.
	return false, nil
}

// Read reads into p: at once when data is there, after a short poll when
// it arrives within Spin (and polls have been paying: see the package
// comment), else when the wait — on the poller, or in poll(2) — ends (or
// the deadline passes, with an error for which os.IsTimeout is true).
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n        int
		rerr     syscall.Errno
		spinEnd  time.Time
		spun     bool
		timedOut bool
		waitErr  error
	)
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			n, rerr = rawconn.RawRead(fd, p)
			switch {
			case rerr == syscall.EINTR:
				continue
			case rerr != syscall.EAGAIN:
				if !spinEnd.IsZero() && !spun {
					r.misses = 0 // the poll caught it: polls pay here
				}
				return true
			case !spun:
				if spinEnd.IsZero() && r.polls() {
					spinEnd = time.Now().Add(r.spin)
				}
				if !spinEnd.IsZero() && time.Now().Before(spinEnd) {
					runtime.Gosched()
					continue
				}
				r.misses++ // the poll did not end this wait (or was not tried)
				spun = true
				if r.gaveUp != nil {
					r.gaveUp()
				}
			}
			// Nothing there, and no more polling: wait.
			if !r.inKernel {
				return false // on the runtime's poller
			}
			if timedOut, waitErr = r.waitInKernel(fd); timedOut || waitErr != nil {
				return true
			}
		}
	})
	if err != nil {
		return 0, err
	}
	if timedOut {
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: os.ErrDeadlineExceeded}
	}
	if waitErr != nil {
		return 0, &os.PathError{Op: "poll", Path: r.f.Name(), Err: waitErr}
	}
	if rerr != 0 {
		return 0, &os.PathError{Op: "read", Path: r.f.Name(), Err: rerr}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
