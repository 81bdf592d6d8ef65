package telemetry

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/trace"
)

// logsPrefix marks a logs frame on the engine's /otel socket.
const logsPrefix = "LOGS"

// logRecord is one OTLP JSON log record.
type logRecord struct {
	TimeUnixNano   string         `json:"timeUnixNano"`
	SeverityNumber int            `json:"severityNumber"`
	SeverityText   string         `json:"severityText"`
	Body           otlpValue      `json:"body"`
	Attributes     []otlpKeyValue `json:"attributes,omitempty"`
	TraceID        string         `json:"traceId,omitempty"`
	SpanID         string         `json:"spanId,omitempty"`
}

// logBatcher collects records and sends them as one LOGS frame per flush,
// one interval after the first record of a batch (no timer runs while
// nothing is logged). It holds at most 512 records; more are dropped and
// counted.
type logBatcher struct {
	sink     *Sink
	resource []otlpKeyValue
	scope    otlpScope
	queue    batchQueue[logRecord] // its timer starts a flush
	flushing sync.Mutex            // held from taking a batch until it is queued on the sink
}

func newLogBatcher(sink *Sink, resource []attribute.KeyValue, scope otlpScope, every time.Duration) *logBatcher {
	b := &logBatcher{sink: sink, resource: keyValues(resource), scope: scope}
	b.queue = batchQueue[logRecord]{max: 512, timer: newLazyTimer(every, b.flush)}
	return b
}

func (b *logBatcher) add(r logRecord) { b.queue.add(r) }

// flush sends what has been collected as one frame.
func (b *logBatcher) flush() {
	b.flushing.Lock()
	defer b.flushing.Unlock()
	b.queue.timer.disarm()
	batch := b.queue.take(0)
	if len(batch) == 0 {
		return
	}
	doc := map[string]any{"resourceLogs": []any{map[string]any{
		"resource":  otlpResource{Attributes: b.resource},
		"scopeLogs": []any{map[string]any{"scope": b.scope, "logRecords": batch}},
	}}}
	_ = b.sink.SendJSON(logsPrefix, doc) // a record that cannot be encoded is dropped
}

// ForceFlush sends what has been collected now.
func (b *logBatcher) ForceFlush(context.Context) error {
	b.flush()
	return nil
}

// Shutdown sends what has been collected; later records are dropped.
func (b *logBatcher) Shutdown(context.Context) error {
	b.queue.close()
	b.flush()
	return nil
}

// logHandler passes every record to the next handler and also queues it
// for export, with the trace and span ids of the span in its context: as a
// LOGS frame for the engine socket (logs) and through the log SDK to the
// OTLP/HTTP collector (logger). Either may be nil.
type logHandler struct {
	next   slog.Handler
	logs   *logBatcher
	logger otellog.Logger
	attrs  []slog.Attr
	prefix string // group names, dot-joined, for attributes added later
}

// LogHandler returns a slog.Handler that writes through next and exports
// each record as an OTLP log (when t exports logs at all; otherwise next
// itself).
func (t *Telemetry) LogHandler(next slog.Handler) slog.Handler {
	if t == nil || (t.logs == nil && t.logger == nil) {
		return next
	}
	return &logHandler{next: next, logs: t.logs, logger: t.logger}
}

func (h *logHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.next.Handle(ctx, r)
	kvs := make([]attribute.KeyValue, 0, len(h.attrs)+r.NumAttrs())
	for _, a := range h.attrs {
		kvs = append(kvs, attribute.String(a.Key, a.Value.String()))
	}
	r.Attrs(func(a slog.Attr) bool {
		kvs = append(kvs, attribute.String(h.prefix+a.Key, a.Value.String()))
		return true
	})
	if h.logs != nil {
		rec := logRecord{TimeUnixNano: strconv.FormatInt(r.Time.UnixNano(), 10), SeverityNumber: severity(r.Level), SeverityText: r.Level.String()}
		msg := r.Message
		rec.Body = otlpValue{StringValue: &msg}
		rec.Attributes = keyValues(kvs)
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			rec.TraceID, rec.SpanID = sc.TraceID().String(), sc.SpanID().String()
		}
		h.logs.add(rec)
	}
	if h.logger != nil {
		// The SDK takes the trace and span ids from ctx itself.
		var rec otellog.Record
		rec.SetTimestamp(r.Time)
		rec.SetSeverity(otellog.Severity(severity(r.Level)))
		rec.SetSeverityText(r.Level.String())
		rec.SetBody(attribute.StringValue(r.Message))
		rec.AddAttributes(kvs...)
		h.logger.Emit(ctx, rec)
	}
	return err
}

func (h *logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = append(append([]slog.Attr{}, h.attrs...), prefixed(h.prefix, as)...)
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	c.prefix = h.prefix + name + "."
	return &c
}

func prefixed(prefix string, as []slog.Attr) []slog.Attr {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = slog.Attr{Key: prefix + a.Key, Value: a.Value}
	}
	return out
}

// severity maps slog levels to OTLP severity numbers (DEBUG 5, INFO 9,
// WARN 13, ERROR 17, with the levels between kept in between).
func severity(l slog.Level) int {
	n := 9 + int(l)
	if n < 1 {
		n = 1
	}
	if n > 24 {
		n = 24
	}
	return n
}
