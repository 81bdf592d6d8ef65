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
// disarm. It is idle — no timer, no goroutine — until armed.
type lazyTimer struct {
	every time.Duration
	fire  func()
	after func(time.Duration, func()) *time.Timer // time.AfterFunc; tests count the arms

	mu    sync.Mutex
	timer *time.Timer
}

func newLazyTimer(every time.Duration, fire func()) *lazyTimer {
	return &lazyTimer{every: every, fire: fire, after: time.AfterFunc}
}

// arm starts the timer unless it is already running.
func (l *lazyTimer) arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer == nil {
		l.timer = l.after(l.every, l.fired)
	}
}

// disarm stops the timer, if it runs.
func (l *lazyTimer) disarm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

func (l *lazyTimer) fired() {
	l.mu.Lock()
	l.timer = nil
	l.mu.Unlock()
	l.fire()
}

// spanBatcher is an sdktrace.SpanProcessor that hands ended, sampled spans
// to an exporter in batches of up to batchMax, one interval after the first
// span of a batch at the latest. It holds at most queueMax spans; more are
// dropped and counted, so recording a span never waits on an export.
type spanBatcher struct {
	exp      sdktrace.SpanExporter
	queueMax int
	batchMax int
	timeout  time.Duration // for each export
	timer    *lazyTimer

	exportMu sync.Mutex // the exporter sees one export at a time

	mu       sync.Mutex
	spans    []sdktrace.ReadOnlySpan
	closed   bool
	draining bool // a full batch is being exported now
	dropped  atomic.Int64
}

func newSpanBatcher(exp sdktrace.SpanExporter, every time.Duration) *spanBatcher {
	b := &spanBatcher{exp: exp, queueMax: 2048, batchMax: 512, timeout: 30 * time.Second}
	b.timer = newLazyTimer(every, func() { _ = b.export(context.Background()) })
	return b
}

// OnStart implements sdktrace.SpanProcessor; nothing happens at start.
func (b *spanBatcher) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span and arms the timer for the first of a batch.
func (b *spanBatcher) OnEnd(s sdktrace.ReadOnlySpan) {
	b.mu.Lock()
	if b.closed || !s.SpanContext().IsSampled() {
		b.mu.Unlock()
		return
	}
	if len(b.spans) >= b.queueMax {
		b.mu.Unlock()
		b.dropped.Add(1)
		return
	}
	b.spans = append(b.spans, s)
	n := len(b.spans)
	full := n >= b.batchMax && !b.draining
	if full {
		b.draining = true
	}
	b.mu.Unlock()
	if n == 1 {
		b.timer.arm()
	}
	if full {
		go func() {
			_ = b.export(context.Background())
			b.mu.Lock()
			b.draining = false
			b.mu.Unlock()
		}()
	}
}

// export hands everything queued to the exporter, a batch at a time.
func (b *spanBatcher) export(ctx context.Context) error {
	b.exportMu.Lock()
	defer b.exportMu.Unlock()
	b.timer.disarm()
	var first error
	for {
		b.mu.Lock()
		n := min(len(b.spans), b.batchMax)
		batch := b.spans[:n:n]
		b.spans = b.spans[n:]
		if len(b.spans) == 0 {
			b.spans = nil
		}
		b.mu.Unlock()
		if n == 0 {
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
// exported before it returns.
func (b *spanBatcher) ForceFlush(ctx context.Context) error { return b.export(ctx) }

// Shutdown implements sdktrace.SpanProcessor: later spans are dropped,
// queued ones exported, then the exporter shut down.
func (b *spanBatcher) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	err := b.export(ctx)
	if serr := b.exp.Shutdown(ctx); err == nil {
		err = serr
	}
	return err
}
