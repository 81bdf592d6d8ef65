package rawconn

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection, the client end
// wrapped.
func tcpPair(t *testing.T) (wrapped net.Conn, peer net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := <-accepted
	if p == nil {
		t.Fatal("accept failed")
	}
	w := wrap(c, true) // the raw path, in race builds too
	if rc, ok := w.(*Conn); !ok || !rc.raw {
		t.Fatalf("a TCP connection was not wrapped for raw I/O: %T", w)
	}
	t.Cleanup(func() { w.Close(); p.Close() })
	return w, p
}

// TestBytesCrossBothWaysIntact: 8 MiB written in one Write, far more than a
// socket buffer holds, reach a reader that drains slowly (the write waits
// on the poller between partial writes), and 8 MiB sent the other way are
// read back whole; then the peer's close reads as io.EOF.
func TestBytesCrossBothWaysIntact(t *testing.T) {
	w, p := tcpPair(t)
	out := make([]byte, 8<<20)
	_, _ = rand.Read(out)
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		chunk := make([]byte, 64<<10)
		for buf.Len() < len(out) {
			time.Sleep(time.Millisecond) // a slow reader: the writer's buffer fills
			n, err := p.Read(chunk)
			buf.Write(chunk[:n])
			if err != nil {
				break
			}
		}
		got <- buf.Bytes()
	}()
	if n, err := w.Write(out); n != len(out) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(out))
	}
	if b := <-got; !bytes.Equal(b, out) {
		t.Fatalf("the peer read %d bytes that differ from the %d written", len(b), len(out))
	}

	in := make([]byte, 8<<20)
	_, _ = rand.Read(in)
	go func() { _, _ = p.Write(in); p.Close() }()
	back, err := io.ReadAll(w)
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	if !bytes.Equal(back, in) {
		t.Fatalf("read %d bytes that differ from the %d the peer sent", len(back), len(in))
	}
	if n, err := w.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want 0, io.EOF", n, err)
	}
}

// TestDeadlinesStillApply: a read with nothing to read and a write to a
// peer that never reads both end at the connection's deadlines with
// os.ErrDeadlineExceeded, as a net.Conn's would; a closed connection's
// Read says net.ErrClosed.
func TestDeadlinesStillApply(t *testing.T) {
	w, _ := tcpPair(t)
	_ = w.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := w.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	_ = w.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	n, err := w.Write(make([]byte, 64<<20))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write to a peer that never reads: %v, want os.ErrDeadlineExceeded", err)
	}
	if n < 0 || n >= 64<<20 {
		t.Fatalf("Write reported %d bytes written before its deadline; want fewer than all", n)
	}
	w.Close()
	if _, err := w.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Read on a closed connection: %v, want net.ErrClosed", err)
	}
}

// TestWrapLeavesOtherConnsAlone: a connection without a descriptor (an
// in-memory pipe) comes back as it was.
func TestWrapLeavesOtherConnsAlone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if w := Wrap(a); w != a {
		t.Fatalf("Wrap(net.Pipe end) = %T, want the same connection", w)
	}
}

// TestHTTPClientTalksThroughRawConnections: a request through HTTPClient
// gets its answer, over a connection the client wrapped.
func TestHTTPClientTalksThroughRawConnections(t *testing.T) {
	body := bytes.Repeat([]byte("raw "), 100_000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append(in, body...))
	}))
	defer srv.Close()
	c := HTTPClient()
	tr := c.Transport.(*http.Transport)
	dialed := make(chan net.Conn, 1)
	inner := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := inner(ctx, network, addr)
		if err == nil {
			dialed <- conn
		}
		return conn, err
	}
	resp, err := c.Post(srv.URL, "text/plain", bytes.NewReader([]byte("hello ")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil || !bytes.Equal(got, append([]byte("hello "), body...)) {
		t.Fatalf("got %d bytes, %v", len(got), err)
	}
	if conn := <-dialed; conn == nil {
		t.Fatal("no connection dialed")
	} else if rc, ok := conn.(*Conn); !ok || rc.raw == raceBuild {
		t.Fatalf("the client dialed a %T (raw I/O %v in a build where race is %v)", conn, ok && rc.raw, raceBuild)
	}
}

// TestWriterWritesAPipe: a Writer on a pipe from os.Pipe moves more than the
// pipe holds to a slow reader, and a write to a reader that stops ends at
// the file's write deadline with os.ErrDeadlineExceeded (what the node
// supervisor relies on to kill a host that does not read). A regular file
// cannot be polled and is refused.
func TestWriterWritesAPipe(t *testing.T) {
	r, wf, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer wf.Close()
	w, err := newWriter(wf, true) // the raw path, in race builds too
	if err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 1<<20)
	_, _ = rand.Read(out)
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(out))
		_, _ = io.ReadFull(r, b)
		got <- b
	}()
	if n, err := w.Write(out); n != len(out) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if !bytes.Equal(<-got, out) {
		t.Fatal("the pipe's reader got other bytes")
	}
	_ = wf.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := w.Write(make([]byte, 4<<20)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Write to a pipe nobody reads: %v, want os.ErrDeadlineExceeded", err)
	}

	f, err := os.CreateTemp(t.TempDir(), "regular")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := newWriter(f, true); err == nil {
		t.Fatal("NewWriter accepted a regular file, which the poller cannot wait on")
	}
}

// A Writer whose file was closed says so as the file's own Write does, on
// the raw path and the race builds' path alike: os.ErrClosed.
func TestWriterAfterCloseSaysErrClosed(t *testing.T) {
	for _, raw := range []bool{true, false} {
		r, wf, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w, err := newWriter(wf, raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		wf.Close()
		if _, err := w.Write([]byte("y")); !errors.Is(err, os.ErrClosed) {
			t.Errorf("raw=%v: Write after Close: %v, want os.ErrClosed", raw, err)
		}
		r.Close()
	}
}

// A corked connection sends nothing until Uncork, then everything written
// meanwhile, in order and in one piece; a write that would take it past
// maxHeld sends what is held first, so nothing waits unbounded in memory.
func TestCorkedWritesLeaveTogetherAndInOrder(t *testing.T) {
	w, p := tcpPair(t)
	c := w.(*Conn)
	c.Cork()
	for _, s := range []string{"one ", "two ", "three"} {
		if n, err := c.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("a corked write: %d, %v", n, err)
		}
	}
	_ = p.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := p.Read(make([]byte, 64)); n != 0 || err == nil {
		t.Fatalf("the peer read %d bytes (%v) before Uncork", n, err)
	}
	if err := c.Uncork(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
	want := "one two three"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(p, got); err != nil || string(got) != want {
		t.Fatalf("the peer read %q (%v), want %q", got, err, want)
	}
	// Straight through again after Uncork.
	if _, err := c.Write([]byte("four")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(p, got[:4]); err != nil || string(got[:4]) != "four" {
		t.Fatalf("after Uncork the peer read %q (%v)", got[:4], err)
	}
	// Past maxHeld: what is held goes first, then the big write itself.
	c.Cork()
	big := bytes.Repeat([]byte("b"), maxHeld)
	_, _ = c.Write([]byte("small"))
	if _, err := c.Write(big); err != nil {
		t.Fatal(err)
	}
	all := make([]byte, 5+len(big))
	if _, err := io.ReadFull(p, all); err != nil || string(all[:5]) != "small" || !bytes.Equal(all[5:], big) {
		t.Fatalf("past maxHeld the peer read %q... (%v)", all[:8], err)
	}
	if err := c.Uncork(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(c.held) != 0 || cap(c.held) > maxHeld {
		t.Fatalf("the connection still holds %d bytes (capacity %d)", len(c.held), cap(c.held))
	}
}

// Uncork is bounded: a peer that reads nothing makes it fail within its
// timeout, with the write deadline put back afterwards.
func TestUncorkGivesUpAtItsTimeout(t *testing.T) {
	w, _ := tcpPair(t)
	c := w.(*Conn)
	chunk := bytes.Repeat([]byte("x"), maxHeld)
	var err error
	for i := 0; i < 4096 && err == nil; i++ { // far past what the socket buffers hold
		c.Cork()
		_, _ = c.Write(chunk)
		err = c.Uncork(200 * time.Millisecond)
	}
	if err == nil {
		t.Fatal("Uncork never failed against a peer that reads nothing")
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("Uncork failed with %v, want its timeout", err)
	}
}
