package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Sink sends frames to the engine's /otel socket over a connection of its
// own — never the worker's main one — reconnecting for as long as it is
// open. Send never waits: frames beyond the queue's capacity are dropped
// and counted.
type Sink struct {
	url     string
	log     *slog.Logger
	queue   chan []byte
	dropped atomic.Int64
	sent    atomic.Int64
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}
}

// NewSink starts a sink for url with room for capacity queued frames.
func NewSink(url string, capacity int, log *slog.Logger) *Sink {
	s := &Sink{url: url, log: log, queue: make(chan []byte, capacity), stop: make(chan struct{}), done: make(chan struct{})}
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

// Dropped is how many frames found the queue full.
func (s *Sink) Dropped() int64 { return s.dropped.Load() }

// Sent is how many frames were written to a connection.
func (s *Sink) Sent() int64 { return s.sent.Load() }

// Close stops the sink; queued frames are discarded.
func (s *Sink) Close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

func (s *Sink) run() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	backoff := 100 * time.Millisecond
	failures := 0
	for ctx.Err() == nil {
		dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
		ws, _, err := websocket.Dial(dctx, s.url, nil)
		dcancel()
		if err != nil {
			failures++
			if failures == 1 || failures%50 == 0 {
				s.log.Debug("telemetry: the engine's /otel socket is not reachable; spans wait in a bounded queue", "url", s.url, "err", err)
			}
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		failures, backoff = 0, 100*time.Millisecond
		s.pump(ctx, ws)
		_ = ws.CloseNow()
	}
}

// pump writes queued frames until the connection fails or the sink stops.
// The engine never writes on this socket; a reader keeps control frames
// moving and notices a closed connection.
func (s *Sink) pump(ctx context.Context, ws *websocket.Conn) {
	rctx, rcancel := context.WithCancel(ctx)
	defer rcancel()
	go func() {
		defer rcancel()
		for {
			if _, _, err := ws.Read(rctx); err != nil {
				return
			}
		}
	}()
	for {
		select {
		case <-rctx.Done():
			return
		case f := <-s.queue:
			wctx, wcancel := context.WithTimeout(rctx, 10*time.Second)
			err := ws.Write(wctx, websocket.MessageBinary, f)
			wcancel()
			if err != nil {
				s.dropped.Add(1)
				return
			}
			s.sent.Add(1)
		}
	}
}
