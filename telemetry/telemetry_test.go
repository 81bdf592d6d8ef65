package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	collogspb "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	"google.golang.org/protobuf/proto"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/golden"
)

func TestEnabledFromEnv(t *testing.T) {
	for _, tc := range []struct {
		v    string
		set  bool
		want bool
	}{
		{"", false, true}, // on by default, as in the iii Node SDK
		{"true", true, true}, {"1", true, true}, {"yes", true, true},
		{"false", true, false}, {"0", true, false}, {"no", true, false}, {"off", true, false},
		{" OFF ", true, false}, {"False", true, false},
	} {
		if got := EnabledFromEnv(tc.v, tc.set); got != tc.want {
			t.Errorf("OTEL_ENABLED=%q (set %v): %v, want %v", tc.v, tc.set, got, tc.want)
		}
	}
}

// TestSpansFrameShape pins the frame the engine's /otel socket receives for
// a server span and its client child: OTLP JSON with hex ids, string
// nanoseconds, OTLP's kinds and status codes.
func TestSpansFrameShape(t *testing.T) {
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	parent, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	server, _ := trace.SpanIDFromHex("1111111111111111")
	client, _ := trace.SpanIDFromHex("2222222222222222")
	start := time.Unix(1_700_000_000, 123)
	res := resource.NewSchemaless(attribute.String("service.name", "code-runner"))
	scope := instrumentation.Scope{Name: "code-runner", Version: "1.2.3"}
	stubs := tracetest.SpanStubs{
		{
			Name: "code-runner::run", SpanKind: trace.SpanKindServer, Resource: res, InstrumentationScope: scope,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: server, TraceFlags: trace.FlagsSampled}),
			Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: parent, Remote: true}),
			StartTime:   start, EndTime: start.Add(1500 * time.Microsecond),
			Attributes: []attribute.KeyValue{attribute.String("code_runner.lang", "python"), attribute.Int("code_runner.request_bytes", 42),
				attribute.Float64("code_runner.duration_ms", 1.5), attribute.Bool("flag", true)},
		},
		{
			Name: "call demo::echo", SpanKind: trace.SpanKindClient, Resource: res, InstrumentationScope: scope,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: client, TraceFlags: trace.FlagsSampled}),
			Parent:      trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: server}),
			StartTime:   start.Add(time.Millisecond), EndTime: start.Add(1200 * time.Microsecond),
			Status:     sdktrace.Status{Code: codes.Error, Description: "timeout"},
			Attributes: []attribute.KeyValue{attribute.StringSlice("ids", []string{"a", "b"})},
		},
	}
	b, err := json.MarshalIndent(encodeSpans(stubs.Snapshots()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "spans.golden.json", append(b, '\n'))
}

// TestExporterQueuesOneFramePerBatch: a batch becomes one "OTLP" frame on
// the sink; a full queue drops and counts instead of waiting.
func TestExporterQueuesOneFramePerBatch(t *testing.T) {
	s := &Sink{queue: make(chan []byte, 1)}
	exp := &engineExporter{sink: s}
	spans := tracetest.SpanStubs{{Name: "a"}, {Name: "b"}}.Snapshots()
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	f := <-s.queue
	if string(f[:4]) != "OTLP" || !json.Valid(f[4:]) {
		t.Fatalf("frame %q", f)
	}
	if s.Dropped() != 1 {
		t.Fatalf("dropped %d, want 1 (the second batch found the queue full)", s.Dropped())
	}
}

// testMetrics is the worker's instruments on a meter provider whose
// manual reader the test collects.
func testMetrics(t *testing.T) (*Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	m, err := newMetrics(mp.Meter("test"))
	if err != nil {
		t.Fatal(err)
	}
	return m, reader
}

// TestMetricsClassifyKillsAndReloads records a known sequence on the
// worker's instruments and reads it back through the OTLP JSON encoding.
func TestMetricsClassifyKillsAndReloads(t *testing.T) {
	m, reader := testMetrics(t)
	ctx := context.Background()
	m.Invocation(ctx, "worker", "code-runner::run", "python", "kept", "code-runner::resource_exhausted", "memory", time.Millisecond)
	m.Invocation(ctx, "worker", "code-runner::run", "python", "one-shot", "code-runner::resource_exhausted", "budget", time.Millisecond)
	m.Invocation(ctx, "guest", "ns::f", "", "", "code-runner::timeout", "timeout", time.Millisecond)
	m.Invocation(ctx, "worker", "code-runner::run", "node", "one-shot", "code-runner::invalid_request", "", time.Millisecond)
	m.Invocation(ctx, "worker", "code-runner::run", "node", "kept", "code-runner::engine", "host_death", time.Millisecond)
	m.Reload(ctx, true)
	m.Reload(ctx, false)
	m.Reload(ctx, false)
	m.BridgeCall(ctx, "ok")
	var nilMetrics *Metrics
	nilMetrics.Reload(ctx, true) // records nothing, never panics
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(encodeMetrics(&rm))
	var doc otlpMetricsDoc
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sm := range doc.ResourceMetrics[0].ScopeMetrics {
		for _, mt := range sm.Metrics {
			if mt.Sum == nil {
				continue
			}
			for _, p := range mt.Sum.DataPoints {
				key := mt.Name
				for _, a := range p.Attributes {
					key += " " + a.Key + "=" + *a.Value.StringValue
				}
				got[key] = *p.AsInt
			}
		}
	}
	for k, v := range map[string]string{
		"code_runner.kills reason=memory":                                               "1",
		"code_runner.kills reason=budget":                                               "1",
		"code_runner.kills reason=timeout":                                              "1",
		"code_runner.kills reason=host_death":                                           "1",
		"code_runner.config.reloads result=accepted":                                    "1",
		"code_runner.config.reloads result=rejected":                                    "2",
		"code_runner.bridge.calls outcome=ok":                                           "1",
		"code_runner.invocations kind=guest outcome=code-runner::timeout":               "1",
		"code_runner.runs lang=node mode=one-shot outcome=code-runner::invalid_request": "1",
	} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	kills := 0
	for k := range got {
		if strings.HasPrefix(k, "code_runner.kills ") {
			kills++
		}
	}
	if kills != 4 || len(got) != 15 {
		t.Errorf("%d kill series of %d, want 4 of 15 (an invalid request is no kill): %v", kills, len(got), got)
	}
}

// TestInvocationSeriesStayRightPastTheAttributeCache: Invocation keeps the
// attribute sets it built, at most maxAttrSets of them; every series counts
// what was recorded under exactly its own attributes, below the bound and
// past it alike.
func TestInvocationSeriesStayRightPastTheAttributeCache(t *testing.T) {
	m, reader := testMetrics(t)
	ctx := context.Background()
	// Seven sets per outcome (one invocation, four runs, two durations):
	// past the bound. Each language and mode is recorded a different
	// number of times, so a set given to the wrong series shows.
	const outcomes, rounds = 128, 2
	langs, modes := []string{"node", "python"}, []string{"kept", "one-shot"}
	for r := 0; r < rounds; r++ {
		for i := 0; i < outcomes; i++ {
			for li, lang := range langs {
				for mi, mode := range modes {
					for n := 0; n < 1+li+2*mi; n++ {
						m.Invocation(ctx, "worker", "code-runner::run", lang, mode, fmt.Sprintf("code-%d", i), "", time.Millisecond)
					}
				}
			}
		}
	}
	m.setsMu.RLock()
	n := len(m.sets)
	m.setsMu.RUnlock()
	if n != maxAttrSets {
		t.Fatalf("%d attribute sets kept, want the bound %d", n, maxAttrSets)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	durations := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					counts[mt.Name+" "+p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					durations[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Count
				}
			}
		}
	}
	for i := 0; i < outcomes; i++ {
		out := fmt.Sprintf("code-%d", i)
		if k := "code_runner.invocations kind=worker,outcome=" + out; counts[k] != rounds*10 {
			t.Fatalf("%s = %d, want %d", k, counts[k], rounds*10)
		}
		for li, lang := range langs {
			for mi, mode := range modes {
				k := "code_runner.runs lang=" + lang + ",mode=" + mode + ",outcome=" + out
				if want := int64(rounds * (1 + li + 2*mi)); counts[k] != want {
					t.Fatalf("%s = %d, want %d", k, counts[k], want)
				}
			}
			if k, want := "lang="+lang+",outcome="+out, uint64(rounds*(4+2*li)); durations[k] != want {
				t.Fatalf("run.duration %s has %d points, want %d", k, durations[k], want)
			}
		}
	}
	if len(counts) != 5*outcomes || len(durations) != 2*outcomes {
		t.Fatalf("%d counter series and %d duration series, want %d and %d", len(counts), len(durations), 5*outcomes, 2*outcomes)
	}
}

// TestLogsCarryTheTraceOfTheirCall: a record written in a span's context
// goes out as an OTLP log with that span's ids, its level and attributes,
// through the real socket.
func TestLogsCarryTheTraceOfTheirCall(t *testing.T) {
	eng, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}) // records /otel frames
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	frames := eng.OtelFrames
	ctx := context.Background()
	tel, err := Start(ctx, Options{EngineURL: eng.URL(), Enabled: true, Service: "code-runner", Version: "t", FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	log := slog.New(tel.LogHandler(slog.NewTextHandler(io.Discard, nil)))
	sctx, span := tel.StartServer(ctx, "code-runner::run")
	log.With("engine", "python").WarnContext(sctx, "something happened", "n", 3)
	span.End("ok")
	sc := trace.SpanContextFromContext(sctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = tel.ForceFlush(ctx)
		for _, f := range frames() {
			if !bytes.HasPrefix(f, []byte("LOGS")) {
				continue
			}
			var doc struct {
				ResourceLogs []struct {
					ScopeLogs []struct {
						LogRecords []logRecord `json:"logRecords"`
					} `json:"scopeLogs"`
				} `json:"resourceLogs"`
			}
			if err := json.Unmarshal(f[4:], &doc); err != nil {
				t.Fatal(err)
			}
			r := doc.ResourceLogs[0].ScopeLogs[0].LogRecords[0]
			attrs := map[string]string{}
			for _, a := range r.Attributes {
				attrs[a.Key] = *a.Value.StringValue
			}
			if *r.Body.StringValue != "something happened" || r.SeverityNumber != 13 || r.TraceID != sc.TraceID().String() ||
				r.SpanID != sc.SpanID().String() || attrs["engine"] != "python" || attrs["n"] != "3" {
				t.Fatalf("log record %+v (attributes %v)", r, attrs)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no LOGS frame among %d", len(frames()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestOTLPHTTPCollectorGetsSpansAndMetrics: with OTEL_EXPORTER_OTLP_ENDPOINT
// set (and the engine socket off) spans, metrics and the worker's log
// records go to the collector's /v1/traces, /v1/metrics and /v1/logs through
// the official exporters; a record written inside a span carries its trace
// and span ids.
func TestOTLPHTTPCollectorGetsSpansAndMetrics(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	var logs []*logspb.LogRecord
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Method == http.MethodPost && len(b) > 0 {
			got[r.URL.Path]++
		}
		if r.URL.Path == "/v1/logs" {
			var req collogspb.ExportLogsServiceRequest
			if err := proto.Unmarshal(b, &req); err != nil {
				t.Errorf("/v1/logs body is not an OTLP export request: %v", err)
			}
			for _, rl := range req.ResourceLogs {
				for _, sl := range rl.ScopeLogs {
					logs = append(logs, sl.LogRecords...)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	ctx := context.Background()
	tel, err := Start(ctx, Options{OTLPEndpoint: srv.URL, Service: "code-runner", Version: "t", FlushInterval: time.Hour, MetricInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	var local bytes.Buffer
	log := slog.New(tel.LogHandler(slog.NewTextHandler(&local, nil)))
	sctx, span := tel.StartServer(ctx, "code-runner::run")
	log.WarnContext(sctx, "runtime reaped", "kind", "kept")
	sc := trace.SpanContextFromContext(sctx)
	span.End("ok")
	tel.Metrics().Reload(ctx, true)
	if err := tel.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(local.String(), "runtime reaped") {
		t.Errorf("the next handler did not get the record: %q", local.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if got["/v1/traces"] == 0 || got["/v1/metrics"] == 0 || got["/v1/logs"] == 0 {
		t.Fatalf("collector requests %v, want /v1/traces, /v1/metrics and /v1/logs", got)
	}
	if len(logs) != 1 {
		t.Fatalf("collector got %d log records, want 1", len(logs))
	}
	r := logs[0]
	if r.Body.GetStringValue() != "runtime reaped" || r.SeverityNumber != logspb.SeverityNumber_SEVERITY_NUMBER_WARN {
		t.Errorf("record body %q severity %v, want \"runtime reaped\" at WARN", r.Body.GetStringValue(), r.SeverityNumber)
	}
	tid, sid := sc.TraceID(), sc.SpanID()
	if !bytes.Equal(r.TraceId, tid[:]) || !bytes.Equal(r.SpanId, sid[:]) {
		t.Errorf("record trace/span %x/%x, want the span's %s/%s", r.TraceId, r.SpanId, tid, sid)
	}
	if len(r.Attributes) != 1 || r.Attributes[0].Key != "kind" || r.Attributes[0].Value.GetStringValue() != "kept" {
		t.Errorf("record attributes %v, want kind=kept", r.Attributes)
	}
}

// BenchmarkMetricsInvocation is what recording one served call's metrics
// costs: a code-runner::run call, its three measurements.
func BenchmarkMetricsInvocation(b *testing.B) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	m, err := newMetrics(mp.Meter("bench"))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		m.Invocation(ctx, "worker", "code-runner::run", "python", "kept", "ok", "", time.Millisecond)
	}
}

// With only the engine's socket to export to (it carries no exemplars), no
// measurement is offered as an exemplar, even inside a sampled span; with
// an OTLP collector the SDK's own filter (trace-based, or the environment's)
// decides.
func TestExemplarsAreGatheredOnlyForACollector(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	defer tp.Shutdown(context.Background())
	ctx, span := tp.Tracer("t").Start(context.Background(), "call")
	defer span.End()
	if !span.SpanContext().IsSampled() {
		t.Fatal("the test's span is not sampled: it proves nothing")
	}
	engineOnly := exemplarFilter(Options{EngineURL: "ws://127.0.0.1:1", Enabled: true})
	if engineOnly == nil || engineOnly(ctx) {
		t.Fatal("with only the engine to export to, a measurement in a sampled span is offered as an exemplar")
	}
	if f := exemplarFilter(Options{EngineURL: "ws://127.0.0.1:1", Enabled: true, OTLPEndpoint: "http://127.0.0.1:4318"}); f != nil {
		t.Fatal("with an OTLP collector the SDK's exemplar filter is overridden")
	}
}
