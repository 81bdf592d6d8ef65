package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// recordingExporter keeps the size of each batch it was given.
type recordingExporter struct {
	mu       sync.Mutex
	batches  []int
	shutdown bool
	got      chan struct{}
}

func newRecordingExporter() *recordingExporter {
	return &recordingExporter{got: make(chan struct{}, 100)}
}

func (r *recordingExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	r.mu.Lock()
	r.batches = append(r.batches, len(spans))
	r.mu.Unlock()
	r.got <- struct{}{}
	return nil
}

func (r *recordingExporter) Shutdown(context.Context) error {
	r.mu.Lock()
	r.shutdown = true
	r.mu.Unlock()
	return nil
}

func (r *recordingExporter) sizes() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.batches...)
}

func (r *recordingExporter) wait(t *testing.T) {
	t.Helper()
	select {
	case <-r.got:
	case <-time.After(10 * time.Second):
		t.Fatal("no batch reached the exporter")
	}
}

// countArms makes l count how often its timer is started.
func countArms(l *lazyTimer) func() int {
	var mu sync.Mutex
	n := 0
	after := l.after
	l.after = func(d time.Duration, f func()) *time.Timer {
		mu.Lock()
		n++
		mu.Unlock()
		return after(d, f)
	}
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return n
	}
}

func endSpans(tp *sdktrace.TracerProvider, n int) {
	tr := tp.Tracer("test")
	for i := 0; i < n; i++ {
		_, s := tr.Start(context.Background(), "call")
		s.End()
	}
}

// Spans go out as one batch an interval after the first of them, and no
// timer runs while nothing is recorded: an idle worker is not woken.
func TestSpanBatchesWaitOnlyWhileSpansArePending(t *testing.T) {
	exp := newRecordingExporter()
	b := newSpanBatcher(exp, 30*time.Millisecond)
	arms := countArms(b.timer)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	defer func() { _ = tp.Shutdown(context.Background()) }()

	endSpans(tp, 3)
	exp.wait(t)
	if got := exp.sizes(); len(got) != 1 || got[0] != 3 {
		t.Fatalf("batches %v, want one of 3", got)
	}
	if n := arms(); n != 1 {
		t.Fatalf("the timer was started %d times for one batch, want 1", n)
	}
	time.Sleep(200 * time.Millisecond) // several intervals with nothing recorded
	if n := arms(); n != 1 {
		t.Fatalf("the timer was started %d times while idle, want it left stopped", n)
	}
	if got := exp.sizes(); len(got) != 1 {
		t.Fatalf("exports while idle: %v", got)
	}

	endSpans(tp, 1)
	exp.wait(t)
	if n := arms(); n != 2 {
		t.Fatalf("the timer was started %d times for two batches, want 2", n)
	}
}

// A full batch does not wait for the timer; ForceFlush and Shutdown send
// what is queued, and spans ended after Shutdown are dropped.
func TestSpanBatchesFlushWhenFullForcedOrShutDown(t *testing.T) {
	exp := newRecordingExporter()
	b := newSpanBatcher(exp, time.Hour)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))

	endSpans(tp, b.batchMax)
	exp.wait(t)
	if got := exp.sizes(); len(got) != 1 || got[0] != b.batchMax {
		t.Fatalf("batches %v, want one full batch of %d", got, b.batchMax)
	}

	endSpans(tp, 2)
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := exp.sizes(); len(got) != 2 || got[1] != 2 {
		t.Fatalf("batches after ForceFlush %v, want a second of 2", got)
	}

	endSpans(tp, 5)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.OnEnd(nil) // after Shutdown: dropped before it is looked at
	got := exp.sizes()
	if len(got) != 3 || got[2] != 5 {
		t.Fatalf("batches after Shutdown %v, want a third of 5", got)
	}
	exp.mu.Lock()
	defer exp.mu.Unlock()
	if !exp.shutdown {
		t.Fatal("Shutdown did not shut the exporter down")
	}
}

// More spans than the queue holds while an export is stuck are dropped
// and counted; recording never waits for the exporter.
func TestSpanBatcherDropsWhatItCannotHold(t *testing.T) {
	block := make(chan struct{})
	exp := &blockingExporter{release: block}
	b := newSpanBatcher(exp, time.Hour)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	done := make(chan struct{})
	go func() {
		endSpans(tp, b.batchMax+b.queueMax+10) // the first batch blocks in the exporter
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("recording spans waited for a stuck exporter")
	}
	if d := b.dropped.Load(); d < 10 {
		t.Fatalf("dropped %d spans, want at least 10", d)
	}
	close(block)
	_ = tp.Shutdown(context.Background())
}

type blockingExporter struct{ release chan struct{} }

func (e *blockingExporter) ExportSpans(ctx context.Context, _ []sdktrace.ReadOnlySpan) error {
	select {
	case <-e.release:
	case <-ctx.Done():
	}
	return nil
}

func (e *blockingExporter) Shutdown(context.Context) error { return nil }

// Log records behave the same: one timer per batch, none while idle.
func TestLogBatchesWaitOnlyWhileRecordsArePending(t *testing.T) {
	b := newLogBatcher(nil, nil, otlpScope{Name: "test"}, time.Hour)
	arms := countArms(b.timer)
	var flushed [][]logRecord
	b.timer.fire = func() {
		b.timer.disarm()
		b.mu.Lock()
		flushed = append(flushed, b.batch)
		b.batch = nil
		b.mu.Unlock()
	}
	if n := arms(); n != 0 {
		t.Fatalf("a new batcher started its timer %d times", n)
	}
	b.add(logRecord{SeverityText: "INFO"})
	b.add(logRecord{SeverityText: "WARN"})
	if n := arms(); n != 1 {
		t.Fatalf("two records started the timer %d times, want 1", n)
	}
	b.timer.fired()
	if len(flushed) != 1 || len(flushed[0]) != 2 {
		t.Fatalf("flushed %v, want one batch of 2", flushed)
	}
	b.add(logRecord{SeverityText: "INFO"})
	if n := arms(); n != 2 {
		t.Fatalf("the next record started the timer %d times in all, want 2", n)
	}
}
