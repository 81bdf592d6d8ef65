// Package telemetry is the worker's OpenTelemetry tracing, metrics and logs: a span for every
// invocation it serves, parented on the caller's W3C traceparent, and a
// child span for every bus call a guest makes, whose context travels on the
// wire to the callee. Spans go to the engine's /otel socket in the frame
// format the iii Node SDK uses (a 4-byte "OTLP" prefix, then OTLP JSON),
// unless OTEL_ENABLED turns that off, and to any OTLP/HTTP collector named
// by OTEL_EXPORTER_OTLP_ENDPOINT. Metrics and the worker's slog records take
// the same two ways (MTRC and LOGS frames on the socket).
//
// Telemetry never waits on its exporters: spans and log records queue in
// batchers whose timer runs only while something waits (batch.go), then in
// a bounded frame queue, and what does not fit is dropped and counted. Span attributes never carry code, results, stream
// text or a runtime id.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Options configure Start.
type Options struct {
	// EngineURL is the engine's WebSocket address (ws://host:port); spans
	// go to its /otel socket (OtelURL) when Enabled.
	EngineURL string
	// Enabled is OTEL_ENABLED read with Enabled.
	Enabled bool
	// OTLPEndpoint is OTEL_EXPORTER_OTLP_ENDPOINT ("" = no collector).
	OTLPEndpoint string
	Service      string
	Version      string
	// InstanceID is service.instance.id: the worker's name, unique per
	// worker on an engine ("" leaves it out).
	InstanceID string
	// FlushInterval is how long spans wait to be batched (default 1 s).
	FlushInterval time.Duration
	// QueueFrames is how many frames may wait for the engine's socket
	// (default 256); more are dropped and counted.
	QueueFrames int
	// MetricInterval is how often metrics are exported (default 10 s).
	MetricInterval time.Duration
	Log            *slog.Logger
}

// EnabledFromEnv reads OTEL_ENABLED as the iii Node SDK does: on unless it
// is false, 0, no or off (any case).
func EnabledFromEnv(v string, set bool) bool {
	if !set {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "false", "0", "no", "off":
		return false
	}
	return true
}

// Telemetry holds the tracer provider and its exporters. The zero value
// and a nil *Telemetry trace nothing.
type Telemetry struct {
	tp      *sdktrace.TracerProvider
	tracer  trace.Tracer
	mp      *sdkmetric.MeterProvider
	metrics *Metrics
	spans   *spanBatcher   // spans to the engine socket
	logs    *logBatcher    // slog records to the engine socket
	logger  otellog.Logger // slog records to the OTLP/HTTP collector
	sink    *Sink
	// providers are flushed and shut down in this order (spans, metrics,
	// then logs), before the sink closes.
	providers []provider
}

// provider is what Telemetry flushes and shuts down: the SDK's tracer,
// meter and logger providers and the engine socket's log batcher.
type provider interface {
	ForceFlush(context.Context) error
	Shutdown(context.Context) error
}

// Start builds the tracer provider for opts. With nothing to export to, it
// returns a Telemetry that creates no spans at all.
func Start(ctx context.Context, o Options) (*Telemetry, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.QueueFrames <= 0 {
		o.QueueFrames = 256
	}
	if o.MetricInterval <= 0 {
		o.MetricInterval = 10 * time.Second
	}
	t := &Telemetry{tracer: noop.NewTracerProvider().Tracer("")}
	var procs []sdktrace.TracerProviderOption
	if o.Enabled && o.EngineURL != "" {
		otel, err := OtelURL(o.EngineURL)
		if err != nil {
			return nil, err
		}
		t.sink = NewSink(otel, o.QueueFrames, o.Log)
		t.spans = newSpanBatcher(&engineExporter{sink: t.sink}, o.FlushInterval)
		procs = append(procs, sdktrace.WithSpanProcessor(t.spans))
	}
	var (
		readers []sdkmetric.Option
		logProc sdklog.Processor
	)
	if t.sink != nil {
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&engineMetricExporter{sink: t.sink}, sdkmetric.WithInterval(o.MetricInterval))))
	}
	if o.OTLPEndpoint != "" {
		// Both read OTEL_EXPORTER_OTLP_* themselves.
		exp, err := otlptracehttp.New(ctx)
		var (
			mexp sdkmetric.Exporter
			lexp sdklog.Exporter
		)
		if err == nil {
			mexp, err = otlpmetrichttp.New(ctx)
		}
		if err == nil {
			lexp, err = otlploghttp.New(ctx)
		}
		if err != nil {
			if t.sink != nil {
				t.sink.Close(ctx)
			}
			return nil, fmt.Errorf("OTLP/HTTP exporter for %s: %w", o.OTLPEndpoint, err)
		}
		procs = append(procs, sdktrace.WithSpanProcessor(newSpanBatcher(exp, o.FlushInterval)))
		readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, sdkmetric.WithInterval(o.MetricInterval))))
		// The batch processor drops records when its queue is full; it
		// never makes a logging call wait.
		logProc = sdklog.NewBatchProcessor(lexp, sdklog.WithExportInterval(o.FlushInterval), sdklog.WithMaxQueueSize(2048))
	}
	if len(procs) == 0 {
		return t, nil
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(o.Service), semconv.ServiceVersion(o.Version)}
	if o.InstanceID != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(o.InstanceID))
	}
	res := resource.NewSchemaless(attrs...)
	t.tp = sdktrace.NewTracerProvider(append(procs, sdktrace.WithResource(res))...)
	t.tracer = t.tp.Tracer("code-runner", trace.WithInstrumentationVersion(o.Version))
	mopts := append(readers, sdkmetric.WithResource(res))
	if f := exemplarFilter(o); f != nil {
		mopts = append(mopts, sdkmetric.WithExemplarFilter(f))
	}
	t.mp = sdkmetric.NewMeterProvider(mopts...)
	t.providers = []provider{t.tp, t.mp}
	m, err := newMetrics(t.mp.Meter("code-runner", metric.WithInstrumentationVersion(o.Version)))
	if err != nil {
		_ = t.Shutdown(ctx)
		return nil, fmt.Errorf("metrics: %w", err)
	}
	t.metrics = m
	if t.sink != nil {
		t.logs = newLogBatcher(t.sink, res.Attributes(), otlpScope{Name: "code-runner", Version: o.Version}, o.FlushInterval)
		t.providers = append(t.providers, t.logs)
	}
	if logProc != nil {
		lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(logProc), sdklog.WithResource(res))
		t.logger = lp.Logger("code-runner", otellog.WithInstrumentationVersion(o.Version))
		t.providers = append(t.providers, lp)
	}
	return t, nil
}

// exemplarFilter is the meter provider's exemplar filter for o, or nil for
// the SDK's (trace-based, or OTEL_METRICS_EXEMPLAR_FILTER). The engine's
// socket carries no exemplars, so with nothing else to export to, none is
// gathered: offering every measurement made inside a sampled span to the
// reservoirs was ~1 % of the worker's CPU under 8 callers of python
// one-shots. An OTLP collector gets them as the SDK and its environment say
// (OTEL_METRICS_EXEMPLAR_FILTER applies only then: without a collector
// nothing would carry them).
func exemplarFilter(o Options) exemplar.Filter {
	if o.OTLPEndpoint != "" {
		return nil
	}
	return exemplar.AlwaysOffFilter
}

// Metrics returns the worker's instruments (nil, which records nothing,
// when metrics are not exported).
func (t *Telemetry) Metrics() *Metrics {
	if t == nil {
		return nil
	}
	return t.metrics
}

// ObserveRuntimes registers two gauges read at each export:
// code_runner.runtimes.live (live returns the number of live runtimes of
// each kind, "kept" and "namespace") and code_runner.pool.parked (parked
// returns, per language, the warm runtimes waiting for a one-shot).
func (t *Telemetry) ObserveRuntimes(live, parked func() map[string]int64) error {
	if t == nil || t.mp == nil {
		return nil
	}
	gauge := func(name, desc, key string, read func() map[string]int64) error {
		_, err := t.mp.Meter("code-runner").Int64ObservableGauge(name, metric.WithDescription(desc), metric.WithUnit("{runtime}"),
			metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
				for k, n := range read() {
					o.Observe(n, metric.WithAttributes(attribute.String(key, k)))
				}
				return nil
			}))
		return err
	}
	return errors.Join(gauge("code_runner.runtimes.live", "live runtimes by kind", "kind", live),
		gauge("code_runner.pool.parked", "warm runtimes waiting for a one-shot, by language", "lang", parked))
}

// Shutdown flushes what is queued — spans, a last metrics export, log
// records — and sends it to the engine's socket before it stops, all
// bounded by ctx (contract §22a.11).
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var err error
	for _, p := range t.providers {
		err = errors.Join(err, p.Shutdown(ctx))
	}
	if t.sink != nil {
		t.sink.Close(ctx)
	}
	return err
}

// ForceFlush exports every finished span, metric and log record now
// (tests; a clean stop).
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var err error
	for _, p := range t.providers {
		err = errors.Join(err, p.ForceFlush(ctx))
	}
	return err
}

// Dropped is how many frames the engine socket's queue dropped, plus the
// spans and log records that found their batch full (or were still queued
// when Shutdown ran out of time).
func (t *Telemetry) Dropped() int64 {
	if t == nil || t.sink == nil {
		return 0
	}
	n := t.sink.Dropped()
	if t.spans != nil {
		n += t.spans.Dropped()
	}
	if t.logs != nil {
		n += t.logs.queue.dropped.Load()
	}
	return n
}

var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// Extract returns ctx carrying the caller's trace context.
func Extract(ctx context.Context, traceparent, baggage string) context.Context {
	if traceparent == "" && baggage == "" {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent, "baggage": baggage})
}

// Inject returns the W3C traceparent and baggage of ctx's span ("" when
// there is none).
func Inject(ctx context.Context) (traceparent, baggage string) {
	c := propagation.MapCarrier{}
	propagator.Inject(ctx, c)
	return c["traceparent"], c["baggage"]
}

// Span is one span being recorded; a nil *Span records nothing.
type Span struct {
	s     trace.Span
	start time.Time
}

// StartServer starts the span of an invocation this worker serves, a child
// of the trace context in ctx (see Extract).
func (t *Telemetry) StartServer(ctx context.Context, functionID string, attrs ...attribute.KeyValue) (context.Context, *Span) {
	return t.start(ctx, functionID, trace.SpanKindServer, functionID, attrs)
}

// StartClient starts the span of a bus call a guest makes.
func (t *Telemetry) StartClient(ctx context.Context, functionID string, attrs ...attribute.KeyValue) (context.Context, *Span) {
	return t.start(ctx, "call "+functionID, trace.SpanKindClient, functionID, attrs)
}

func (t *Telemetry) start(ctx context.Context, name string, kind trace.SpanKind, functionID string, attrs []attribute.KeyValue) (context.Context, *Span) {
	if t == nil || t.tp == nil {
		return ctx, nil
	}
	attrs = append(attrs, attribute.String("code_runner.function_id", functionID))
	ctx, s := t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return ctx, &Span{s: s, start: time.Now()}
}

// End records the outcome — "ok" or the error code — and the span's
// duration, and ends it.
func (s *Span) End(outcome string, attrs ...attribute.KeyValue) {
	if s == nil {
		return
	}
	attrs = append(attrs, attribute.String("code_runner.outcome", outcome),
		attribute.Float64("code_runner.duration_ms", float64(time.Since(s.start).Microseconds())/1000))
	s.s.SetAttributes(attrs...)
	if outcome != "ok" {
		s.s.SetStatus(codes.Error, outcome)
	}
	s.s.End()
}
