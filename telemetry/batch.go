package telemetry

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// A batch waits at most one interval after its first item, and nothing
// waits while nothing was recorded. The OpenTelemetry SDK's batch span
// processor re-arms its timer after every export, empty or not, so an idle
// worker woke once a second for it (issue 31); lazyTimer and spanBatcher
// keep the same batching with no timer armed while idle.

// lazyTimer runs fire once, every after the first arm since the last
// disarm. It is idle — no timer, no goroutine — until armed. Each arm and
// disarm starts a new generation; a timer that fires for an older one (it
// lost a race with a disarm) does nothing.
type lazyTimer struct {
	every time.Duration
	fire  func()
	after func(time.Duration, func()) *time.Timer // time.AfterFunc; tests count the arms

	mu    sync.Mutex
	timer *time.Timer
	gen   uint64
}

func newLazyTimer(every time.Duration, fire func()) *lazyTimer {
	return &lazyTimer{every: every, fire: fire, after: time.AfterFunc}
}

// arm starts the timer unless it is already running.
func (l *lazyTimer) arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil {
		l.gen++
		gen := l.gen
		l.timer = l.after(l.every, func() { l.fired(gen) })
	}
}

// disarm stops the timer, if it runs.
func (l *lazyTimer) disarm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

func (l *lazyTimer) fired(gen uint64) {
	l.mu.Lock()
	if gen != l.gen {
		l.mu.Unlock()
		return // disarmed (and its batch taken) since this timer started
	}
	l.timer = nil
	l.mu.Unlock()
	l.fire()
}

// batchQueue holds what a batcher has yet to send: at most max items, more
// dropped and counted, and nothing after close. The first item of a batch
// arms the batcher's timer.
type batchQueue[T any] struct {
	max   int
	timer *lazyTimer

	mu      sync.Mutex
	items   []T
	closed  bool
	dropped atomic.Int64
}

// add queues x and returns how many items are queued with it, or 0 when x
// was dropped (the queue full or closed).
func (q *batchQueue[T]) add(x T) int {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0
	}
	if len(q.items) >= q.max {
		q.mu.Unlock()
		q.dropped.Add(1)
		return 0
	}
	q.items = append(q.items, x)
	n := len(q.items)
	q.mu.Unlock()
	if n == 1 {
		q.timer.arm()
	}
	return n
}

// take removes and returns up to n queued items, oldest first (n < 1: all).
func (q *batchQueue[T]) take(n int) []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	if n < 1 || n > len(q.items) {
		n = len(q.items)
	}
	out := q.items[:n:n]
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
	}
	return out
}

// waiting reports whether items are queued and more may still be sent.
func (q *batchQueue[T]) waiting() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) > 0 && !q.closed
}

// close makes every later add a drop.
func (q *batchQueue[T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// drop counts what is still queued as dropped and empties the queue.
func (q *batchQueue[T]) drop() {
	q.dropped.Add(int64(len(q.take(0))))
}

// spanBatcher is an sdktrace.SpanProcessor that hands ended, sampled spans
// to an exporter in batches of up to batchMax, one interval after the first
// span of a batch at the latest. It holds at most 2048 spans; more are
// dropped and counted, so recording a span never waits on an export.
// ForceFlush and Shutdown honour their context: they return its error when
// it ends first, and whatever is still queued is left to a later flush (or
// dropped, after Shutdown).
type spanBatcher struct {
	exp      sdktrace.SpanExporter
	batchMax int
	timeout  time.Duration                     // for each export
	queue    batchQueue[sdktrace.ReadOnlySpan] // its timer starts an export
	draining atomic.Bool                       // a full batch is being exported now

	exporting chan struct{} // one slot: the exporter sees one export at a time
	stopped   context.Context
	stop      context.CancelFunc // ends the timer's and a full batch's exports at Shutdown
}

func newSpanBatcher(exp sdktrace.SpanExporter, every time.Duration) *spanBatcher {
	b := &spanBatcher{exp: exp, batchMax: 512, timeout: 30 * time.Second, exporting: make(chan struct{}, 1)}
	b.stopped, b.stop = context.WithCancel(context.Background())
	b.queue = batchQueue[sdktrace.ReadOnlySpan]{max: 2048, timer: newLazyTimer(every, func() { _ = b.export(b.stopped) })}
	return b
}

// OnStart implements sdktrace.SpanProcessor; nothing happens at start.
func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span; a full batch is exported at once.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if b.queue.add(s) >= b.batchMax && b.draining.CompareAndSwap(false, true) {
		go func() {
			_ = b.export(b.stopped)
			b.draining.Store(false)
		}()
	}
}

// export hands everything queued to the exporter, a batch at a time, until
// the queue is empty or ctx ends.
func (b *spanBatcher) export(ctx context.Context) error {
	select {
	case b.exporting <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.exporting }()
	b.queue.timer.disarm()
	var first error
	for {
		if err := ctx.Err(); err != nil {
			if b.queue.waiting() {
				b.queue.timer.arm() // what is left goes with the next flush
			}
			return err
		}
		batch := b.queue.take(b.batchMax)
		if len(batch) == 0 {
			return first
		}
		ectx, cancel := context.WithTimeout(ctx, b.timeout)
		err := b.exp.ExportSpans(ectx, batch)
		cancel()
		if err != nil && first == nil {
			first = err
		}
	}
}

// ForceFlush implements sdktrace.SpanProcessor: everything queued is
// exported before it returns, unless ctx ends first.
func (b *spanBatcher) ForceFlush(ctx context.Context) error { return b.export(ctx) }

// Shutdown implements sdktrace.SpanProcessor: later spans are dropped,
// queued ones exported while ctx lasts, then the exporter is shut down.
// When ctx ends first, Shutdown returns its error at once; an export still
// running gets its context cancelled, and the exporter is shut down after
// it.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	b.queue.close()
	done := make(chan error, 1)
	go func() {
		err := b.export(ctx)
		b.stop()
		b.queue.timer.disarm()
		b.queue.drop() // left when ctx ended
		if serr := b.exp.Shutdown(ctx); err == nil {
			err = serr
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		b.stop()
		return ctx.Err()
	}
}

// Dropped is how many spans did not fit in the queue or were still queued
// when Shutdown ran out of time.
func (b *spanBatcher) Dropped() int64 { return b.queue.dropped.Load() }
