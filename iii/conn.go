package iii

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/code-runner-go/code-runner/internal/rawconn"
)

// conn is one WebSocket connection with a FIFO writer goroutine and an
// unbounded outbound queue, so senders never block on the network.
type conn struct {
	ws  *websocket.Conn
	raw *rawconn.Conn // the socket under ws, when it could be had: several queued frames go out corked
	log *slog.Logger

	mu      sync.Mutex
	queue   [][]byte
	wake    chan struct{}
	closed  bool
	closeCh chan struct{}

	lastInbound atomic.Int64 // unix nanos
}

func newConn(log *slog.Logger) *conn {
	c := &conn{log: log, wake: make(chan struct{}, 1), closeCh: make(chan struct{})}
	c.touch()
	return c
}

func (c *conn) touch() { c.lastInbound.Store(time.Now().UnixNano()) }

func (c *conn) idleFor() time.Duration {
	return time.Since(time.Unix(0, c.lastInbound.Load()))
}

// send queues a frame; after close it is dropped.
func (c *conn) send(b []byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, b)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *conn) writeLoop() {
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		closed := c.closed
		c.mu.Unlock()
		// Frames queued together leave in one system call: ws writes and
		// flushes each on its own, and on loopback each write is also the
		// engine's receive path and a wake-up (under 8 callers of python
		// one-shots a third of the frames went out in batches of 2–8).
		corked := len(batch) > 1 && c.raw != nil
		if corked {
			c.raw.Cork()
		}
		for _, b := range batch {
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			err := c.ws.Write(ctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				c.close()
				return
			}
		}
		if corked {
			if err := c.raw.Uncork(writeTimeout); err != nil {
				c.close()
				return
			}
		}
		if closed {
			return
		}
		select {
		case <-c.wake:
		case <-c.closeCh:
		}
	}
}

// writeTimeout bounds each write to the engine.
const writeTimeout = 30 * time.Second

// close drops the connection without a close handshake (the peer sees the
// socket end; queued frames are discarded).
func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.queue = nil
	close(c.closeCh)
	c.mu.Unlock()
	_ = c.ws.CloseNow()
}
