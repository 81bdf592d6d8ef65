package telemetry

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// metricsPrefix marks a metrics frame on the engine's /otel socket.
const metricsPrefix = "MTRC"

// Metrics are the worker's instruments (names in the OpenTelemetry
// semantic-convention style). Every method of a nil *Metrics does nothing.
type Metrics struct {
	runs        metric.Int64Counter
	runDuration metric.Float64Histogram
	invocations metric.Int64Counter
	kills       metric.Int64Counter
	bridge      metric.Int64Counter
	reloads     metric.Int64Counter
	refill      metric.Float64Histogram

	// sets holds the attribute sets of Invocation's three measurements:
	// building one (sort, de-duplicate, allocate) cost more than the
	// measurement itself, on every call served. At most maxAttrSets are
	// kept (the map's length is the count); past that a set is built each
	// time, as before.
	setsMu sync.RWMutex
	sets   map[attrKey]metric.MeasurementOption
}

// maxAttrSets bounds Metrics.sets: outcomes are wire error codes, a short
// list, but a bound keeps a surprise from growing it without end.
const maxAttrSets = 512

// attrKey names one cached attribute set: which measurement, and the
// values of its attributes in the order the measurement lists them.
type attrKey struct {
	inst    uint8
	a, b, c string
}

const (
	instInvocations uint8 = iota
	instRuns
	instRunDuration
)

// attrs returns the option carrying k's attributes, built by build (from k
// alone: a closure over nothing allocates nothing) the first time k is seen.
func (m *Metrics) attrs(k attrKey, build func(attrKey) []attribute.KeyValue) metric.MeasurementOption {
	m.setsMu.RLock()
	o, ok := m.sets[k]
	m.setsMu.RUnlock()
	if ok {
		return o
	}
	o = metric.WithAttributeSet(attribute.NewSet(build(k)...))
	m.setsMu.Lock()
	if len(m.sets) < maxAttrSets {
		if m.sets == nil {
			m.sets = map[attrKey]metric.MeasurementOption{}
		}
		m.sets[k] = o
	}
	m.setsMu.Unlock()
	return o
}

func newMetrics(m metric.Meter) (*Metrics, error) {
	var err error
	counter := func(name, desc, unit string) metric.Int64Counter {
		c, e := m.Int64Counter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		err = errors.Join(err, e)
		return c
	}
	histogram := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, e := m.Float64Histogram(name, metric.WithDescription(desc), metric.WithUnit("ms"), metric.WithExplicitBucketBoundaries(bounds...))
		err = errors.Join(err, e)
		return h
	}
	ms := &Metrics{
		runs: counter("code_runner.runs", "code-runner::run calls by language, mode and outcome", "{run}"),
		runDuration: histogram("code_runner.run.duration", "code-runner::run call duration",
			0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000),
		invocations: counter("code_runner.invocations", "invocations served, worker functions and guest-registered ones, by outcome", "{invocation}"),
		kills:       counter("code_runner.kills", "calls that ended in a kill, by reason (timeout, memory, budget, host_death)", "{kill}"),
		bridge:      counter("code_runner.bridge.calls", "guest bus calls by outcome: refused in the worker (the deny-list or an engine's own checks), or the engine's answer", "{call}"),
		reloads:     counter("code_runner.config.reloads", "configuration changes, accepted or rejected", "{reload}"),
		refill: histogram("code_runner.pool.refill.duration", "how long a warm-pool runtime took to boot, by language",
			5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000),
	}
	if err != nil {
		return nil, err
	}
	return ms, nil
}

// PoolBoot records how long one warm-pool boot of lang took.
func (m *Metrics) PoolBoot(ctx context.Context, lang string, d time.Duration) {
	if m == nil {
		return
	}
	m.refill.Record(ctx, float64(d.Microseconds())/1000, metric.WithAttributes(attribute.String("lang", lang)))
}

// Invocation records one served invocation: kind is "worker" or "guest",
// outcome "ok", "guest_error" (a run whose guest threw) or the wire error
// code, kill why guest code was stopped ("timeout", "memory", "budget",
// "host_death"; "" when it was not). For code-runner::run, lang and mode
// describe the run ("" when unknown).
func (m *Metrics) Invocation(ctx context.Context, kind, functionID, lang, mode, outcome, kill string, d time.Duration) {
	if m == nil {
		return
	}
	m.invocations.Add(ctx, 1, m.attrs(attrKey{instInvocations, kind, outcome, ""}, func(k attrKey) []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("kind", k.a), attribute.String("outcome", k.b)}
	}))
	if functionID == "code-runner::run" {
		m.runs.Add(ctx, 1, m.attrs(attrKey{instRuns, lang, mode, outcome}, func(k attrKey) []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("lang", k.a), attribute.String("mode", k.b), attribute.String("outcome", k.c)}
		}))
		m.runDuration.Record(ctx, float64(d.Microseconds())/1000, m.attrs(attrKey{instRunDuration, lang, outcome, ""}, func(k attrKey) []attribute.KeyValue {
			return []attribute.KeyValue{attribute.String("lang", k.a), attribute.String("outcome", k.b)}
		}))
	}
	if kill != "" {
		m.kills.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", kill)))
	}
}

// BridgeCall records one guest bus call: "refused" (the deny-list stopped
// it in the worker), "ok", or the error code the engine answered.
func (m *Metrics) BridgeCall(ctx context.Context, outcome string) {
	if m == nil {
		return
	}
	m.bridge.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
}

// Reload records a configuration change that was applied or refused.
func (m *Metrics) Reload(ctx context.Context, accepted bool) {
	if m == nil {
		return
	}
	result := "accepted"
	if !accepted {
		result = "rejected"
	}
	m.reloads.Add(ctx, 1, metric.WithAttributes(attribute.String("result", result)))
}

// engineMetricExporter writes metrics to a Sink as "MTRC" + OTLP JSON.
type engineMetricExporter struct {
	sink *Sink
}

func (e *engineMetricExporter) Temporality(k sdkmetric.InstrumentKind) metricdata.Temporality {
	return sdkmetric.DefaultTemporalitySelector(k)
}

func (e *engineMetricExporter) Aggregation(k sdkmetric.InstrumentKind) sdkmetric.Aggregation {
	return sdkmetric.DefaultAggregationSelector(k)
}

func (e *engineMetricExporter) Export(_ context.Context, rm *metricdata.ResourceMetrics) error {
	return e.sink.SendJSON(metricsPrefix, encodeMetrics(rm))
}

func (e *engineMetricExporter) ForceFlush(context.Context) error { return nil }
func (e *engineMetricExporter) Shutdown(context.Context) error   { return nil }

type otlpMetricsDoc struct {
	ResourceMetrics []otlpResourceMetrics `json:"resourceMetrics"`
}

type otlpResourceMetrics struct {
	Resource     otlpResource       `json:"resource"`
	ScopeMetrics []otlpScopeMetrics `json:"scopeMetrics"`
}

type otlpScopeMetrics struct {
	Scope   otlpScope    `json:"scope"`
	Metrics []otlpMetric `json:"metrics"`
}

type otlpMetric struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Unit        string         `json:"unit,omitempty"`
	Sum         *otlpSum       `json:"sum,omitempty"`
	Gauge       *otlpGauge     `json:"gauge,omitempty"`
	Histogram   *otlpHistogram `json:"histogram,omitempty"`
}

type otlpSum struct {
	DataPoints             []otlpNumberPoint `json:"dataPoints"`
	AggregationTemporality int               `json:"aggregationTemporality"`
	IsMonotonic            bool              `json:"isMonotonic"`
}

type otlpGauge struct {
	DataPoints []otlpNumberPoint `json:"dataPoints"`
}

type otlpNumberPoint struct {
	Attributes        []otlpKeyValue `json:"attributes,omitempty"`
	StartTimeUnixNano string         `json:"startTimeUnixNano,omitempty"`
	TimeUnixNano      string         `json:"timeUnixNano"`
	AsInt             *string        `json:"asInt,omitempty"`
	AsDouble          *float64       `json:"asDouble,omitempty"`
}

type otlpHistogram struct {
	DataPoints             []otlpHistogramPoint `json:"dataPoints"`
	AggregationTemporality int                  `json:"aggregationTemporality"`
}

type otlpHistogramPoint struct {
	Attributes        []otlpKeyValue `json:"attributes,omitempty"`
	StartTimeUnixNano string         `json:"startTimeUnixNano"`
	TimeUnixNano      string         `json:"timeUnixNano"`
	Count             string         `json:"count"`
	Sum               float64        `json:"sum"`
	BucketCounts      []string       `json:"bucketCounts"`
	ExplicitBounds    []float64      `json:"explicitBounds"`
	Min               *float64       `json:"min,omitempty"`
	Max               *float64       `json:"max,omitempty"`
}

// temporality maps the SDK's temporality to OTLP's enum (delta 1,
// cumulative 2).
func temporality(t metricdata.Temporality) int {
	if t == metricdata.DeltaTemporality {
		return 1
	}
	return 2
}

func nanos(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.UnixNano(), 10)
}

func encodeMetrics(rm *metricdata.ResourceMetrics) otlpMetricsDoc {
	var rattrs []attribute.KeyValue
	if rm.Resource != nil {
		rattrs = rm.Resource.Attributes()
	}
	out := otlpResourceMetrics{Resource: otlpResource{Attributes: keyValues(rattrs)}}
	for _, sm := range rm.ScopeMetrics {
		osm := otlpScopeMetrics{Scope: otlpScope{Name: sm.Scope.Name, Version: sm.Scope.Version}}
		for _, m := range sm.Metrics {
			om := otlpMetric{Name: m.Name, Description: m.Description, Unit: m.Unit}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				om.Sum = &otlpSum{DataPoints: intPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}
			case metricdata.Sum[float64]:
				om.Sum = &otlpSum{DataPoints: floatPoints(d.DataPoints), AggregationTemporality: temporality(d.Temporality), IsMonotonic: d.IsMonotonic}
			case metricdata.Gauge[int64]:
				om.Gauge = &otlpGauge{DataPoints: intPoints(d.DataPoints)}
			case metricdata.Gauge[float64]:
				om.Gauge = &otlpGauge{DataPoints: floatPoints(d.DataPoints)}
			case metricdata.Histogram[float64]:
				h := &otlpHistogram{AggregationTemporality: temporality(d.Temporality)}
				for _, p := range d.DataPoints {
					hp := otlpHistogramPoint{Attributes: keyValues(p.Attributes.ToSlice()), StartTimeUnixNano: nanos(p.StartTime), TimeUnixNano: nanos(p.Time),
						Count: strconv.FormatUint(p.Count, 10), Sum: p.Sum, ExplicitBounds: p.Bounds}
					for _, c := range p.BucketCounts {
						hp.BucketCounts = append(hp.BucketCounts, strconv.FormatUint(c, 10))
					}
					if v, ok := p.Min.Value(); ok {
						hp.Min = &v
					}
					if v, ok := p.Max.Value(); ok {
						hp.Max = &v
					}
					h.DataPoints = append(h.DataPoints, hp)
				}
				om.Histogram = h
			default:
				continue // not an aggregation the worker's instruments produce
			}
			osm.Metrics = append(osm.Metrics, om)
		}
		out.ScopeMetrics = append(out.ScopeMetrics, osm)
	}
	return otlpMetricsDoc{ResourceMetrics: []otlpResourceMetrics{out}}
}

func intPoints(ps []metricdata.DataPoint[int64]) []otlpNumberPoint {
	out := make([]otlpNumberPoint, 0, len(ps))
	for _, p := range ps {
		v := strconv.FormatInt(p.Value, 10)
		out = append(out, otlpNumberPoint{Attributes: keyValues(p.Attributes.ToSlice()), StartTimeUnixNano: nanos(p.StartTime), TimeUnixNano: nanos(p.Time), AsInt: &v})
	}
	return out
}

func floatPoints(ps []metricdata.DataPoint[float64]) []otlpNumberPoint {
	out := make([]otlpNumberPoint, 0, len(ps))
	for _, p := range ps {
		v := p.Value
		out = append(out, otlpNumberPoint{Attributes: keyValues(p.Attributes.ToSlice()), StartTimeUnixNano: nanos(p.StartTime), TimeUnixNano: nanos(p.Time), AsDouble: &v})
	}
	return out
}
