package telemetry

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The engine's /otel frames: a 4-byte signal prefix, then OTLP JSON (the
// protobuf JSON mapping with lowerCamelCase names, 64-bit integers as
// strings, and trace and span ids as hex, as OTLP/HTTP JSON requires).
const tracesPrefix = "OTLP"

// engineExporter is an sdktrace.SpanExporter writing to a Sink.
type engineExporter struct {
	sink *Sink
}

// ExportSpans encodes one batch as one frame and queues it.
func (e *engineExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	return e.sink.SendJSON(tracesPrefix, encodeSpans(spans))
}

// Shutdown implements sdktrace.SpanExporter; the sink is closed by its owner.
func (e *engineExporter) Shutdown(context.Context) error { return nil }

type otlpTraces struct {
	ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
}

type otlpResourceSpans struct {
	Resource   otlpResource     `json:"resource"`
	ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
}

type otlpResource struct {
	Attributes []otlpKeyValue `json:"attributes"`
}

type otlpScopeSpans struct {
	Scope otlpScope  `json:"scope"`
	Spans []otlpSpan `json:"spans"`
}

type otlpScope struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

type otlpSpan struct {
	TraceID           string         `json:"traceId"`
	SpanID            string         `json:"spanId"`
	ParentSpanID      string         `json:"parentSpanId,omitempty"`
	TraceState        string         `json:"traceState,omitempty"`
	Name              string         `json:"name"`
	Kind              int            `json:"kind"`
	StartTimeUnixNano string         `json:"startTimeUnixNano"`
	EndTimeUnixNano   string         `json:"endTimeUnixNano"`
	Attributes        []otlpKeyValue `json:"attributes,omitempty"`
	Status            otlpStatus     `json:"status"`
}

type otlpStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message,omitempty"`
}

type otlpKeyValue struct {
	Key   string    `json:"key"`
	Value otlpValue `json:"value"`
}

type otlpValue struct {
	StringValue *string     `json:"stringValue,omitempty"`
	BoolValue   *bool       `json:"boolValue,omitempty"`
	IntValue    *string     `json:"intValue,omitempty"`
	DoubleValue *float64    `json:"doubleValue,omitempty"`
	ArrayValue  *otlpValues `json:"arrayValue,omitempty"`
}

type otlpValues struct {
	Values []otlpValue `json:"values"`
}

// encodeSpans groups spans by resource and instrumentation scope.
func encodeSpans(spans []sdktrace.ReadOnlySpan) otlpTraces {
	var out otlpTraces
	byResource := map[string]int{}
	for _, s := range spans {
		rkey := ""
		var rattrs []attribute.KeyValue
		if r := s.Resource(); r != nil {
			rkey = r.Encoded(attribute.DefaultEncoder())
			rattrs = r.Attributes()
		}
		ri, ok := byResource[rkey]
		if !ok {
			ri = len(out.ResourceSpans)
			byResource[rkey] = ri
			out.ResourceSpans = append(out.ResourceSpans, otlpResourceSpans{Resource: otlpResource{Attributes: keyValues(rattrs)}})
		}
		rs := &out.ResourceSpans[ri]
		sc := s.InstrumentationScope()
		si := -1
		for i, ss := range rs.ScopeSpans {
			if ss.Scope.Name == sc.Name && ss.Scope.Version == sc.Version {
				si = i
			}
		}
		if si < 0 {
			si = len(rs.ScopeSpans)
			rs.ScopeSpans = append(rs.ScopeSpans, otlpScopeSpans{Scope: otlpScope{Name: sc.Name, Version: sc.Version}})
		}
		rs.ScopeSpans[si].Spans = append(rs.ScopeSpans[si].Spans, encodeSpan(s))
	}
	return out
}

func encodeSpan(s sdktrace.ReadOnlySpan) otlpSpan {
	sc := s.SpanContext()
	o := otlpSpan{
		TraceID:           sc.TraceID().String(),
		SpanID:            sc.SpanID().String(),
		TraceState:        sc.TraceState().String(),
		Name:              s.Name(),
		Kind:              int(s.SpanKind()), // the SDK's kinds are numbered as OTLP's
		StartTimeUnixNano: strconv.FormatInt(s.StartTime().UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(s.EndTime().UnixNano(), 10),
		Attributes:        keyValues(s.Attributes()),
	}
	if p := s.Parent(); p.IsValid() {
		o.ParentSpanID = p.SpanID().String()
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		o.Status = otlpStatus{Code: 1}
	case codes.Error:
		o.Status = otlpStatus{Code: 2, Message: st.Description}
	}
	return o
}

func keyValues(kvs []attribute.KeyValue) []otlpKeyValue {
	out := make([]otlpKeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, otlpKeyValue{Key: string(kv.Key), Value: value(kv.Value)})
	}
	return out
}

func value(v attribute.Value) otlpValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return otlpValue{BoolValue: &b}
	case attribute.INT64:
		s := strconv.FormatInt(v.AsInt64(), 10)
		return otlpValue{IntValue: &s}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return otlpValue{DoubleValue: &f}
	case attribute.BOOLSLICE:
		return array(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return array(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return array(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return array(v.AsStringSlice(), attribute.StringValue)
	}
	s := v.Emit()
	return otlpValue{StringValue: &s}
}

// array encodes a slice attribute as an OTLP arrayValue.
func array[T any](xs []T, wrap func(T) attribute.Value) otlpValue {
	vs := make([]otlpValue, 0, len(xs))
	for _, x := range xs {
		vs = append(vs, value(wrap(x)))
	}
	return otlpValue{ArrayValue: &otlpValues{Values: vs}}
}
