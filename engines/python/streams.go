package python

import (
	"bytes"
	"strings"
	"sync"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// Per-turn stream caps (docs/behaviour.md#python-streams).
const (
	streamMaxBytes = 262144
	streamMaxLines = 1000
	truncationNote = "[code-runner] output was truncated; further output is dropped\n"
	maxEventBytes  = (1 << 20) + 4096
)

// capture is one captured stream of a turn: bytes beyond the cap are
// counted and dropped.
type capture struct {
	buf     bytes.Buffer
	dropped int64
}

func (c *capture) write(p []byte) {
	room := streamMaxBytes - c.buf.Len()
	if room <= 0 {
		c.dropped += int64(len(p))
		return
	}
	if len(p) > room {
		c.dropped += int64(len(p) - room)
		p = p[:room]
	}
	c.buf.Write(p)
}

// text returns the capture decoded as UTF-8 with replacement and cut to
// 1000 lines, and whether anything was dropped.
func (c *capture) text() (string, bool) {
	s := strings.ToValidUTF8(c.buf.String(), "\uFFFD")
	truncated := c.dropped > 0
	n, idx := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
			if n == streamMaxLines {
				idx = i + 1
				break
			}
		}
	}
	if n == streamMaxLines && idx < len(s) {
		s = s[:idx]
		truncated = true
	}
	return s, truncated
}

// stdoutScanner is the interpreter's stdout: tenant output goes to the
// turn's capture; lines behind the sentinel marker are events for the host.
// A marker split across writes is still found (the tail that could begin a
// marker is held back until the next write).
type stdoutScanner struct {
	mu      sync.Mutex
	marker  []byte
	pending []byte
	inEvent bool
	event   []byte
	skip    bool // the event grew past its bound; drop it
	out     *capture
	events  chan []byte
	gate    *hostGate // once killed, events are dropped and every write ends the instance
}

func newStdoutScanner(sentinel string, events chan []byte, gate *hostGate) *stdoutScanner {
	return &stdoutScanner{marker: []byte("\n" + sentinel + "\n"), events: events, gate: gate}
}

func (s *stdoutScanner) setCapture(c *capture) {
	s.mu.Lock()
	s.out = c
	s.mu.Unlock()
}

// Write is the guest's fd_write on stdout. It takes p in pieces of at most
// hostChunk bytes, each past the gate, so a write of any size costs the
// worker no more memory than one piece and a kill ends it within one.
func (s *stdoutScanner) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, _ = s.gate.chunks(p, func(c []byte) (int, experimentalsys.Errno) {
		s.scan(c)
		return len(c), 0
	})
	return len(p), nil
}

func (s *stdoutScanner) scan(p []byte) {
	s.pending = append(s.pending, p...)
	for len(s.pending) > 0 {
		if s.inEvent {
			i := bytes.IndexByte(s.pending, '\n')
			if i < 0 {
				if !s.skip {
					s.event = append(s.event, s.pending...)
					if len(s.event) > maxEventBytes {
						s.skip, s.event = true, nil
					}
				}
				s.pending = s.pending[:0]
				break
			}
			if !s.skip {
				ev := append(s.event, s.pending[:i]...)
				// A guest that floods events waits here for the turn loop;
				// a killed one must not wait at all, or it never sees the
				// cancel that ends it.
				select {
				case s.events <- append([]byte{}, ev...):
				case <-s.gate.killed:
				}
			}
			s.event, s.skip, s.inEvent = nil, false, false
			s.pending = s.pending[i+1:]
			continue
		}
		if i := bytes.Index(s.pending, s.marker); i >= 0 {
			s.emit(s.pending[:i])
			s.pending = s.pending[i+len(s.marker):]
			s.inEvent = true
			continue
		}
		keep := partialSuffix(s.pending, s.marker)
		s.emit(s.pending[:len(s.pending)-keep])
		// The held-back tail moves to the front of the same buffer: it is
		// reused, never grown past a piece and a marker.
		s.pending = s.pending[:copy(s.pending, s.pending[len(s.pending)-keep:])]
		break
	}
}

func (s *stdoutScanner) emit(b []byte) {
	if len(b) > 0 && s.out != nil {
		s.out.write(b)
	}
}

// flush releases held-back bytes at the end of a turn (they were not a marker).
func (s *stdoutScanner) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.inEvent {
		s.emit(s.pending)
		s.pending = s.pending[:0]
	}
}

// discard drops whatever the scanner holds of an unfinished line or event:
// a reset leaves nothing a tenant printed for the next one to complete.
func (s *stdoutScanner) discard() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = s.pending[:0]
	s.event, s.skip, s.inEvent = nil, false, false
}

// partialSuffix is the length of the longest suffix of b that is a proper
// prefix of marker.
func partialSuffix(b, marker []byte) int {
	max := len(marker) - 1
	if max > len(b) {
		max = len(b)
	}
	for n := max; n > 0; n-- {
		if bytes.Equal(b[len(b)-n:], marker[:n]) {
			return n
		}
	}
	return 0
}

// stderrWriter sends the interpreter's stderr to the turn's capture.
type stderrWriter struct {
	mu   sync.Mutex
	out  *capture
	gate *hostGate
}

func (w *stderrWriter) setCapture(c *capture) {
	w.mu.Lock()
	w.out = c
	w.mu.Unlock()
}

// Write is the guest's fd_write on stderr: past the gate, counted like a
// tick; the capture keeps what fits its cap and copies nothing more.
func (w *stderrWriter) Write(p []byte) (int, error) {
	w.gate.check()
	w.mu.Lock()
	if w.out != nil {
		w.out.write(p)
	}
	w.mu.Unlock()
	w.gate.account(len(p))
	return len(p), nil
}
