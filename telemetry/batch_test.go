package telemetry

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
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
	b := newSpanBatcher(exp, 250*time.Millisecond) // long enough that a loaded machine ends the three spans inside one
	arms := countArms(b.queue.timer)
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
	time.Sleep(750 * time.Millisecond) // three intervals with nothing recorded
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
	for i := 0; i < 1000 && b.draining.Load(); i++ { // the full batch's export has ended
		time.Sleep(5 * time.Millisecond)
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
		endSpans(tp, b.batchMax+b.queue.max+10) // the first batch blocks in the exporter
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("recording spans waited for a stuck exporter")
	}
	if d := b.Dropped(); d < 10 {
		t.Fatalf("dropped %d spans, want at least 10", d)
	}
	close(block)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	total := int64(b.batchMax + b.queue.max + 10)
	if got := exp.exported.Load() + b.Dropped(); got != total {
		t.Fatalf("exported %d + dropped %d = %d spans, want all %d accounted for", exp.exported.Load(), b.Dropped(), got, total)
	}
}

type blockingExporter struct {
	release   chan struct{}
	entered   atomic.Bool
	cancelled chan struct{}
	once      sync.Once
	exported  atomic.Int64
}

func (e *blockingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.entered.Store(true)
	select {
	case <-e.release:
		e.exported.Add(int64(len(spans)))
	case <-ctx.Done():
		if e.cancelled != nil {
			e.once.Do(func() { close(e.cancelled) })
		}
		return ctx.Err()
	}
	return nil
}

func (e *blockingExporter) Shutdown(context.Context) error { return nil }

// A timer that fires after a disarm (it lost the race to it) does nothing:
// the disarm's flush took its batch, and a newer timer stays the one
// tracked.
func TestAStaleTimerDoesNothing(t *testing.T) {
	fired := 0
	l := newLazyTimer(time.Hour, func() { fired++ })
	var callbacks []func()
	l.after = func(d time.Duration, f func()) *time.Timer {
		callbacks = append(callbacks, f)
		return time.NewTimer(d)
	}
	l.arm()
	l.disarm()
	l.arm()
	callbacks[0]() // the first timer, firing late
	if fired != 0 {
		t.Fatal("a timer disarmed before it fired still fired")
	}
	l.mu.Lock()
	tracked := l.timer != nil
	l.mu.Unlock()
	if !tracked {
		t.Fatal("a stale timer made the batcher forget the running one")
	}
	callbacks[1]()
	if fired != 1 {
		t.Fatalf("the running timer fired %d times, want 1", fired)
	}
}

// Shutdown and ForceFlush return when their context ends, even while an
// export is stuck in the exporter; Shutdown then cancels that export.
func TestSpanBatcherHonoursTheShutdownContext(t *testing.T) {
	exp := &blockingExporter{release: make(chan struct{}), cancelled: make(chan struct{})}
	b := newSpanBatcher(exp, time.Millisecond)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 1) // the timer's export blocks in the exporter
	for i := 0; i < 1000 && !exp.entered.Load(); i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if !exp.entered.Load() {
		t.Fatal("the timer never exported")
	}
	endSpans(tp, 3)
	for _, op := range []struct {
		name string
		fn   func(context.Context) error
	}{{"ForceFlush", b.ForceFlush}, {"Shutdown", b.Shutdown}} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- op.fn(ctx) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s past its deadline returned %v, want the context's error", op.name, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s waited for a stuck exporter past its context", op.name)
		}
		cancel()
	}
	select {
	case <-exp.cancelled:
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown left the stuck export running")
	}
	// Shutdown counts what it could not send once the cancelled export
	// has given the exporter back.
	for i := 0; i < 1000 && b.Dropped() != 3; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if d := b.Dropped(); d != 3 {
		t.Fatalf("spans left queued at Shutdown: %d counted dropped, want 3", d)
	}
}

// Log records behave the same: one timer per batch, none while idle, and
// each batch is one LOGS frame on the sink.
func TestLogBatchesWaitOnlyWhileRecordsArePending(t *testing.T) {
	sink := NewSink("ws://127.0.0.1:1/otel", 16, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer sink.Close(context.Background())
	b := newLogBatcher(sink, nil, otlpScope{Name: "test"}, 250*time.Millisecond) // the two records land in one
	arms := countArms(b.queue.timer)
	frames := func() int { return len(sink.queue) }
	if n := arms(); n != 0 {
		t.Fatalf("a new batcher started its timer %d times", n)
	}
	b.add(logRecord{SeverityText: "INFO"})
	b.add(logRecord{SeverityText: "WARN"})
	if n := arms(); n != 1 {
		t.Fatalf("two records started the timer %d times, want 1", n)
	}
	for i := 0; i < 1000 && frames() == 0; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if frames() != 1 {
		t.Fatalf("%d frames queued for two records, want 1", frames())
	}
	time.Sleep(750 * time.Millisecond) // three intervals with nothing logged
	if n, f := arms(), frames(); n != 1 || f != 1 {
		t.Fatalf("while idle: timer started %d times, %d frames; want 1 and 1", n, f)
	}
	b.add(logRecord{SeverityText: "INFO"})
	if err := b.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f := frames(); f != 2 {
		t.Fatalf("%d frames after Shutdown, want the pending record's as a second", f)
	}
	b.add(logRecord{SeverityText: "INFO"})
	b.flush()
	if f := frames(); f != 2 {
		t.Fatal("a record logged after Shutdown was sent")
	}
}
