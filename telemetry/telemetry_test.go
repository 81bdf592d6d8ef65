package telemetry

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

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
			Status:      sdktrace.Status{Code: codes.Error, Description: "timeout"},
			Attributes:  []attribute.KeyValue{attribute.StringSlice("ids", []string{"a", "b"})},
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
