// Package rawconn reads and writes a network connection with raw system
// calls, so that the traffic of a busy worker does not keep waking the Go
// runtime's system monitor.
//
// The monitor parks while every P is idle. A system call made the usual
// way (syscall.Read and Write enter the scheduler with entersyscall) wakes
// it, and it then polls every 20 µs until the process is idle again: on a
// worker answering one call at a time that was a tenth of its CPU, since
// every call begins after an idle gap and with a read. The connection's
// descriptor is non-blocking (the net package makes it so), so a read or a
// write never blocks: it either moves bytes or says EAGAIN, and the wait
// for readiness is the runtime's poller, as for any net.Conn. A raw system
// call that cannot block needs no scheduler hand-off and wakes nothing.
package rawconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// Conn is a net.Conn whose Read and Write are raw system calls on its
// non-blocking descriptor; everything else (deadlines, Close, addresses)
// is the wrapped connection's.
type Conn struct {
	net.Conn
	rc  syscall.RawConn
	raw bool // false in race builds: the wrapped connection's own Read and Write

	// wmu orders writes with Cork and Uncork: bytes held while corked go
	// out before any written after.
	wmu    sync.Mutex
	corked bool
	held   []byte
}

// Wrap returns c with raw reads and writes when it exposes its descriptor
// (a *net.TCPConn or *net.UnixConn), and c itself otherwise. In race builds
// the reads and writes stay the standard ones (race_on.go).
func Wrap(c net.Conn) net.Conn {
	return wrap(c, !raceBuild)
}

func wrap(c net.Conn, raw bool) net.Conn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	return &Conn{Conn: c, rc: rc, raw: raw}
}

// HTTPClient returns a client on a clone of http.DefaultTransport (its
// proxy settings included) whose connections are wrapped by Wrap: what the
// worker dials its WebSocket connections to the engine with.
func HTTPClient() *http.Client { return HTTPClientWith(nil) }

// HTTPClientWith is HTTPClient that hands each connection it dials, once
// wrapped, to dialed (when not nil; with raw reads and writes unavailable
// it gets nothing).
func HTTPClientWith(dialed func(*Conn)) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Each dial gets its own client and nothing reuses a connection: one
	// whose upgrade was refused must close, not idle in this transport's
	// pool. Upgrade requests are exempt from the "Connection: close" this
	// adds.
	t.DisableKeepAlives = true
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w := Wrap(c)
		if rc, ok := w.(*Conn); ok && dialed != nil {
			dialed(rc)
		}
		return w, nil
	}
	return &http.Client{Transport: t}
}

// Read reads into p: at once when bytes are waiting, else after the
// runtime's poller says the descriptor is readable (or its read deadline
// passes, or it is closed: the error is the wrapped connection's).
func (c *Conn) Read(p []byte) (int, error) {
	if !c.raw {
		return c.Conn.Read(p)
	}
	n, errno, err := read(c.rc, p)
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, c.opError("read", errno)
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p, waiting on the runtime's poller whenever the
// descriptor's buffer is full. It returns how many bytes were written
// before an error (a write deadline, a closed or broken connection).
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.corked {
		if len(c.held)+len(p) <= maxHeld {
			c.held = append(c.held, p...)
			return len(p), nil
		}
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return c.writeLocked(p)
}

// maxHeld bounds what a corked connection holds: a write that would pass
// it sends what is held and goes out itself.
const maxHeld = 64 << 10

// Cork holds what is written from now on, until Uncork sends it in one
// system call (or as few as the socket takes): a caller with several
// messages ready, each written by a library that flushes after each, sends
// them together. Each message sent alone costs a write, and on loopback
// the receiver's whole receive path and wake-up.
func (c *Conn) Cork() {
	c.wmu.Lock()
	c.corked = true
	c.wmu.Unlock()
}

// Uncork sends what Cork held, within timeout (0: no bound), and writes
// straight through again. An error is the connection's: what was held may
// be partly sent.
func (c *Conn) Uncork(timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.corked = false
	if len(c.held) == 0 {
		return nil
	}
	if timeout > 0 {
		if err := c.Conn.SetWriteDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}
		defer c.Conn.SetWriteDeadline(time.Time{})
	}
	return c.flushLocked()
}

// flushLocked sends what is held (c.wmu held).
func (c *Conn) flushLocked() error {
	_, err := c.writeLocked(c.held)
	c.held = c.held[:0]
	return err
}

func (c *Conn) writeLocked(p []byte) (int, error) {
	if !c.raw {
		return c.Conn.Write(p)
	}
	n, errno, err := write(c.rc, p)
	if err != nil {
		return n, err
	}
	if errno != 0 {
		return n, c.opError("write", errno)
	}
	return n, nil
}

// Writer writes a pollable *os.File (a pipe from os.Pipe, or a descriptor
// made non-blocking before os.NewFile) with raw system calls.
type Writer struct {
	f   *os.File
	rc  syscall.RawConn
	raw bool // false in race builds: the file's own Write
}

// NewWriter wraps f. It fails when f is not pollable: a write to a
// blocking descriptor could hold its thread, which only the scheduler's
// own system calls may do. In race builds its writes are the file's own
// (race_on.go).
func NewWriter(f *os.File) (*Writer, error) {
	return newWriter(f, !raceBuild)
}

func newWriter(f *os.File, raw bool) (*Writer, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("rawconn: %w", err)
	}
	if err := f.SetWriteDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("rawconn: %s is not pollable: %w", f.Name(), err)
	}
	return &Writer{f: f, rc: rc, raw: raw}, nil
}

// Write writes all of p, as Conn.Write does.
func (w *Writer) Write(p []byte) (int, error) {
	if !w.raw {
		return w.f.Write(p)
	}
	n, errno, err := write(w.rc, p)
	if err != nil {
		// The poller says a closed file only as "use of closed file"; the
		// file's own Write says it as os.ErrClosed, which callers test for
		// (and it makes no system call on a closed file).
		if _, werr := w.f.Write(nil); errors.Is(werr, os.ErrClosed) {
			return n, werr
		}
		return n, err
	}
	if errno != 0 {
		return n, &os.PathError{Op: "write", Path: w.f.Name(), Err: errno}
	}
	return n, nil
}

// read reads once into p through rc: err is the poller's (deadline,
// closed), errno the system call's.
func read(rc syscall.RawConn, p []byte) (n int, errno syscall.Errno, err error) {
	if len(p) == 0 {
		return 0, 0, nil
	}
	err = rc.Read(func(fd uintptr) bool {
		for {
			n, errno = RawRead(fd, p)
			if errno != syscall.EINTR {
				return errno != syscall.EAGAIN
			}
		}
	})
	return n, errno, err
}

// write writes all of p through rc, waiting for the poller while the
// descriptor's buffer is full.
func write(rc syscall.RawConn, p []byte) (written int, errno syscall.Errno, err error) {
	err = rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			n, e := RawWrite(fd, p[written:])
			switch e {
			case 0:
				written += n
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				errno = e
				return true
			}
		}
		return true
	})
	return written, errno, err
}

func (c *Conn) opError(op string, errno syscall.Errno) error {
	e := &net.OpError{Op: op, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errno}
	if e.Addr != nil {
		e.Net = e.Addr.Network()
	}
	return e
}

// RawRead is read(2) into p (not empty) without telling the scheduler a
// system call is under way. The descriptor must be non-blocking, so that
// the call cannot block: it then holds no thread a scheduler hand-off
// would have to replace, and it does not wake the parked monitor.
func RawRead(fd uintptr, p []byte) (int, syscall.Errno) {
	return rawCall(syscall.SYS_READ, fd, p)
}

// RawWrite is write(2) of p (not empty), as RawRead reads.
func RawWrite(fd uintptr, p []byte) (int, syscall.Errno) {
	return rawCall(syscall.SYS_WRITE, fd, p)
}

func rawCall(trap, fd uintptr, p []byte) (int, syscall.Errno) {
	n, _, errno := syscall.RawSyscall(trap, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), 0
}
