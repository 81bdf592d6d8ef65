package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/code-runner-go/code-runner/internal/rawconn"
	"github.com/coder/websocket"
)

// Sink sends frames to the engine's /otel socket over a connection of its
// own — never the worker's main one — reconnecting for as long as it is
// open. Send never waits: frames beyond the queue's capacity are dropped
// and counted. Close sends what is still queued before it returns, bounded
// by its context.
type Sink struct {
	url     string
	shown   string // url as logged: its query (a token, say) withheld
	log     *slog.Logger
	queue   chan []byte
	dropped atomic.Int64
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}
	// drainBy bounds the last sends; set by Close before stop is closed.
	drainBy context.Context
}

// OtelURL is the engine's /otel socket for the engine URL engineURL:
// "/otel" appended to the URL's path, so a query string (a token, say)
// stays the query string (contract §22a.11).
func OtelURL(engineURL string) (string, error) {
	u, err := url.Parse(engineURL)
	if err != nil {
		return "", fmt.Errorf("engine URL %q: %w", engineURL, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/otel"
	if u.RawPath != "" {
		u.RawPath = strings.TrimSuffix(u.RawPath, "/") + "/otel"
	}
	return u.String(), nil
}

// withoutQuery is raw with its query string, which may carry a token,
// replaced by "…" for the log.
func withoutQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an unreadable URL)"
	}
	if u.RawQuery != "" {
		u.RawQuery = "…"
	}
	u.User = nil
	return u.String()
}

// NewSink starts a sink for url with room for capacity queued frames.
func NewSink(url string, capacity int, log *slog.Logger) *Sink {
	s := &Sink{url: url, shown: withoutQuery(url), log: log, queue: make(chan []byte, capacity), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// Send queues one frame, or drops it when the queue is full.
func (s *Sink) Send(frame []byte) {
	select {
	case s.queue <- frame:
	default:
		s.dropped.Add(1)
	}
}

// SendJSON encodes doc as JSON behind the 4-byte signal prefix ("OTLP",
// "MTRC", "LOGS") in one buffer and queues it as one frame.
func (s *Sink) SendJSON(prefix string, doc any) error {
	var buf bytes.Buffer
	buf.WriteString(prefix)
	if err := json.NewEncoder(&buf).Encode(doc); err != nil {
		return fmt.Errorf("encode %s frame: %w", prefix, err)
	}
	s.Send(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}

// Dropped is how many frames were lost: the queue was full, a write
// failed, or Close ran out of time with frames still queued.
func (s *Sink) Dropped() int64 { return s.dropped.Load() }

// Close sends the frames still queued — on the open connection, or on one
// it dials for them — until the queue is empty or ctx ends, then stops
// the sink. Frames left when ctx ends are dropped and counted.
func (s *Sink) Close(ctx context.Context) {
	s.once.Do(func() {
		s.drainBy = ctx
		close(s.stop)
	})
	<-s.done
}

// conn is one connection to the /otel socket with the reader that keeps
// its control frames moving; broken closes when the connection fails.
type conn struct {
	ws     *websocket.Conn
	broken <-chan struct{}
	cancel context.CancelFunc
}

func (s *Sink) dial(ctx context.Context) (*conn, error) {
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	defer dcancel()
	ws, _, err := websocket.Dial(dctx, s.url, &websocket.DialOptions{HTTPClient: rawconn.HTTPClient()})
	if err != nil {
		return nil, err
	}
	// The engine never writes on this socket; the reader notices a closed
	// connection. Its context is the connection's own: a cancelled Read
	// closes the connection, which must outlive the stop for the drain.
	rctx, rcancel := context.WithCancel(context.Background())
	go func() {
		defer rcancel()
		for {
			if _, _, err := ws.Read(rctx); err != nil {
				return
			}
		}
	}()
	return &conn{ws: ws, broken: rctx.Done(), cancel: rcancel}, nil
}

// close ends the connection with a close handshake, waiting for the
// engine's answer no longer than ctx.
func (c *conn) close(ctx context.Context, reason string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.ws.Close(websocket.StatusNormalClosure, reason)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		_ = c.ws.CloseNow()
		<-done
	}
	c.cancel()
}

func (s *Sink) run() {
	defer close(s.done)
	live, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	backoff := 100 * time.Millisecond
	down := false // said at warn that frames are being dropped
	var c *conn
	for live.Err() == nil {
		var err error
		c, err = s.dial(live)
		if err != nil {
			c = nil
			if live.Err() != nil {
				break
			}
			if !down {
				down = true
				s.log.Warn("telemetry: the engine's /otel socket is not reachable; spans, metrics and log records wait in a bounded queue and are dropped when it is full, until it answers", "url", s.shown, "err", err)
			}
			select {
			case <-time.After(backoff):
			case <-live.Done():
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		if down {
			down = false
			s.log.Warn("telemetry: the engine's /otel socket answers again; export resumed", "url", s.shown, "dropped_so_far", s.dropped.Load())
		}
		backoff = 100 * time.Millisecond
		if s.pump(c) {
			break // stopping, connection still good: drain on it
		}
		c.cancel()
		_ = c.ws.CloseNow()
		c = nil
	}
	s.drain(c)
}

// pump writes queued frames until the connection fails (false) or the
// sink is told to stop (true).
func (s *Sink) pump(c *conn) bool {
	for {
		select {
		case <-c.broken:
			return false
		case <-s.stop:
			return true
		case f := <-s.queue:
			if !s.write(context.Background(), c, f, 10*time.Second) {
				return false
			}
		}
	}
}

func (s *Sink) write(ctx context.Context, c *conn, f []byte, limit time.Duration) bool {
	wctx, wcancel := context.WithTimeout(ctx, limit)
	err := c.ws.Write(wctx, websocket.MessageBinary, f)
	wcancel()
	if err != nil {
		s.dropped.Add(1)
		return false
	}
	return true
}

// drain sends what is queued at the stop, on c or on a connection dialled
// for it, within s.drainBy; what is left is counted as dropped.
func (s *Sink) drain(c *conn) {
	ctx := s.drainBy
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() {
		if c != nil {
			c.close(ctx, "code-runner stopping")
		}
		s.dropped.Add(int64(len(s.queue)))
	}()
	if len(s.queue) == 0 {
		return
	}
	if c == nil {
		var err error
		if c, err = s.dial(ctx); err != nil {
			c = nil
			return
		}
	}
	for len(s.queue) > 0 && ctx.Err() == nil {
		select {
		case <-c.broken:
			return
		default:
		}
		if !s.write(ctx, c, <-s.queue, 10*time.Second) {
			return
		}
	}
}
