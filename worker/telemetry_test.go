package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/telemetry"
)

// exportedSpan is a span as the engine's /otel socket received it.
type exportedSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Attributes   []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue *string `json:"stringValue"`
			IntValue    *string `json:"intValue"`
			BoolValue   *bool   `json:"boolValue"`
		} `json:"value"`
	} `json:"attributes"`
}

// attr renders an attribute's value as text ("" when absent).
func (s exportedSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key != key {
			continue
		}
		switch {
		case a.Value.StringValue != nil:
			return *a.Value.StringValue
		case a.Value.IntValue != nil:
			return *a.Value.IntValue
		case a.Value.BoolValue != nil:
			return fmt.Sprint(*a.Value.BoolValue)
		}
	}
	return ""
}

// spansOf decodes every OTLP frame the engine received.
func spansOf(t *testing.T, frames [][]byte) []exportedSpan {
	t.Helper()
	var out []exportedSpan
	for _, f := range frames {
		if !bytes.HasPrefix(f, []byte("OTLP")) {
			continue
		}
		var doc struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []exportedSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(f[4:], &doc); err != nil {
			t.Fatalf("an OTLP frame is not OTLP JSON: %v\n%s", err, f)
		}
		for _, rs := range doc.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				out = append(out, ss.Spans...)
			}
		}
	}
	return out
}

// traceRig starts a test engine, a worker exporting telemetry every 20 ms,
// a Go demo worker serving demo::echo (it reports the traceparent each
// invocation brought, after answering slowly by delay) and a caller.
func traceRig(t *testing.T, delay time.Duration) (*iiitest.Engine, *telemetry.Telemetry, *iii.Client, chan string) {
	t.Helper()
	e := newTestEngine(t)
	seen := make(chan string, 16)
	demo := iii.New(iii.Options{URL: e.URL(), Name: "demo", Logger: quiet()})
	t.Cleanup(func() { _ = demo.Close() })
	demo.RegisterFunction(iii.FunctionDef{ID: "demo::echo"}, func(ctx context.Context, r iii.Request) (any, error) {
		time.Sleep(delay)
		seen <- r.Traceparent
		return r.Data, nil
	})
	telc := make(chan *telemetry.Telemetry, 1)
	startServe(t, e, ServeOptions{TelemetryFlush: 20 * time.Millisecond, Telemetry: func(tel *telemetry.Telemetry) { telc <- tel }})
	tel := <-telc
	caller := iii.New(iii.Options{URL: e.URL(), Name: "caller", Logger: quiet()})
	t.Cleanup(func() { _ = caller.Close() })
	if err := e.WaitUntil(ctxT(t), func() bool { return e.HasFunction("demo::echo") }); err != nil {
		t.Fatal(err)
	}
	return e, tel, caller, seen
}

// TestOneTraceFromCallerThroughGuestCalls: a caller's traceparent reaches
// the worker's span for code-runner::run, the guest's iii.trigger is a
// child span of it, and the callee — a Go worker on the same engine —
// receives that child's context, in both languages. Nothing exported
// carries the code, the result or a runtime id.
func TestOneTraceFromCallerThroughGuestCalls(t *testing.T) {
	e, tel, caller, seen := traceRig(t, 0)
	ctx := ctxT(t)
	const secret = "do-not-export-7f3a"
	for i, tc := range []struct{ lang, code string }{
		{"python", "marker = '" + secret + "'\nresult = [iii.trigger({'function_id': 'demo::echo', 'payload': 1}), marker]"},
		{"node", "const marker = '" + secret + "'; return [await iii.trigger({ function_id: 'demo::echo', payload: 2 }), marker]"},
	} {
		traceID := fmt.Sprintf("%032x", 0xabc0+i)
		parentID := fmt.Sprintf("%016x", 0xdef0+i)
		data, _ := json.Marshal(map[string]any{"lang": tc.lang, "code": tc.code, "keep": true})
		res, err := caller.Invoke(ctx, iii.Call{FunctionID: "code-runner::run", Data: data, Timeout: 60 * time.Second,
			Traceparent: "00-" + traceID + "-" + parentID + "-01"})
		if err != nil || !strings.Contains(string(res), secret) {
			t.Fatalf("%s: %s %v", tc.lang, res, err)
		}
		var run struct {
			RuntimeID string `json:"runtime_id"`
		}
		_ = json.Unmarshal(res, &run)
		var calleeSaw string
		select {
		case calleeSaw = <-seen:
		case <-ctx.Done():
			t.Fatal("the callee was never called")
		}
		var server, client exportedSpan
		deadline := time.Now().Add(20 * time.Second)
		for server.SpanID == "" || client.SpanID == "" {
			if time.Now().After(deadline) {
				t.Fatalf("%s: spans never exported for trace %s: %d frames", tc.lang, traceID, len(e.OtelFrames()))
			}
			_ = tel.ForceFlush(ctx)
			time.Sleep(20 * time.Millisecond)
			for _, s := range spansOf(t, e.OtelFrames()) {
				if s.TraceID != traceID {
					continue
				}
				switch s.Name {
				case "code-runner::run":
					server = s
				case "call demo::echo":
					client = s
				}
			}
		}
		if server.ParentSpanID != parentID || server.Kind != 2 || server.attr("code_runner.lang") != tc.lang ||
			server.attr("code_runner.mode") != "kept" || server.attr("code_runner.outcome") != "ok" {
			t.Fatalf("%s: the run's span %+v", tc.lang, server)
		}
		if client.ParentSpanID != server.SpanID || client.Kind != 3 || client.attr("code_runner.function_id") != "demo::echo" {
			t.Fatalf("%s: the guest call's span %+v is not a client child of the run's %s", tc.lang, client, server.SpanID)
		}
		if want := "00-" + traceID + "-" + client.SpanID + "-01"; calleeSaw != want {
			t.Fatalf("%s: the callee saw traceparent %q, want %q", tc.lang, calleeSaw, want)
		}
		for _, f := range e.OtelFrames() {
			for _, leak := range []string{secret, run.RuntimeID} {
				if leak != "" && bytes.Contains(f, []byte(leak)) {
					t.Fatalf("%s: exported telemetry contains %q", tc.lang, leak)
				}
			}
		}
	}
}

// TestRunSpansSaySizesAndWhetherCapsCut: a run's span carries the sizes of
// what it sent and whether the output caps cut it — never the text.
func TestRunSpansSaySizesAndWhetherCapsCut(t *testing.T) {
	e, tel, caller, _ := traceRig(t, 0)
	ctx := ctxT(t)
	for i, tc := range []struct {
		code, capped, stdout string
	}{
		{"print('short')\nresult = 1", "false", "6"},
		{"print('x' * 40000)\nresult = 1", "true", "16384"},
	} {
		traceID := fmt.Sprintf("%032x", 0xcab0+i)
		data, _ := json.Marshal(map[string]any{"lang": "python", "code": tc.code})
		if _, err := caller.Invoke(ctx, iii.Call{FunctionID: "code-runner::run", Data: data, Timeout: 60 * time.Second,
			Traceparent: "00-" + traceID + "-00000000000000aa-01"}); err != nil {
			t.Fatal(err)
		}
		var span exportedSpan
		for deadline := time.Now().Add(20 * time.Second); span.SpanID == ""; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no span for trace %s", traceID)
			}
			_ = tel.ForceFlush(ctx)
			for _, s := range spansOf(t, e.OtelFrames()) {
				if s.TraceID == traceID {
					span = s
				}
			}
		}
		if span.attr("code_runner.output_capped") != tc.capped || span.attr("code_runner.stdout_bytes") != tc.stdout || span.attr("code_runner.result_bytes") != "1" {
			t.Fatalf("%q: span %+v", tc.code, span)
		}
	}
}

// TestGuestFunctionInvocationsContinueTheTrace: a bus invocation of a
// function a guest registered (node and python) is a span of its own,
// parented on its caller, and the guest call the handler makes is its
// child — with several invocations in flight at once.
func TestGuestFunctionInvocationsContinueTheTrace(t *testing.T) {
	e, tel, caller, seen := traceRig(t, 50*time.Millisecond) // the invocations overlap
	ctx := ctxT(t)
	for _, reg := range []map[string]any{
		{"function_id": "trn::f", "lang": "node", "source": "async function handler(p) { return await iii.trigger({ function_id: 'demo::echo', payload: p }) }"},
		{"function_id": "trp::f", "lang": "python", "source": "def handler(p):\n    return iii.trigger({'function_id': 'demo::echo', 'payload': p})"},
	} {
		data, _ := json.Marshal(reg)
		if _, err := caller.Invoke(ctx, iii.Call{FunctionID: "code-runner::register_function", Data: data, Timeout: 60 * time.Second}); err != nil {
			t.Fatal(err)
		}
		id := reg["function_id"].(string)
		if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(id) }); err != nil {
			t.Fatal(err)
		}
		type call struct{ traceID, parentID string }
		calls := make([]call, 3)
		errs := make(chan error, len(calls))
		for i := range calls {
			calls[i] = call{fmt.Sprintf("%032x", 0xfeed00+i), fmt.Sprintf("%016x", 0xbeef00+i)}
			go func(c call, i int) {
				_, err := caller.Invoke(ctx, iii.Call{FunctionID: id, Data: json.RawMessage(fmt.Sprint(i)), Timeout: 60 * time.Second,
					Traceparent: "00-" + c.traceID + "-" + c.parentID + "-01"})
				errs <- err
			}(calls[i], i)
		}
		for range calls {
			if err := <-errs; err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
		calleeSaw := map[string]bool{}
		for range calls {
			calleeSaw[<-seen] = true
		}
		for _, c := range calls {
			var server, client exportedSpan
			deadline := time.Now().Add(20 * time.Second)
			for server.SpanID == "" || client.SpanID == "" {
				if time.Now().After(deadline) {
					t.Fatalf("%s: spans never exported for trace %s", id, c.traceID)
				}
				_ = tel.ForceFlush(ctx)
				time.Sleep(20 * time.Millisecond)
				for _, s := range spansOf(t, e.OtelFrames()) {
					if s.TraceID == c.traceID && s.Name == id {
						server = s
					}
					if s.TraceID == c.traceID && s.Name == "call demo::echo" {
						client = s
					}
				}
			}
			if server.ParentSpanID != c.parentID || client.ParentSpanID != server.SpanID {
				t.Fatalf("%s: server %+v, client %+v", id, server, client)
			}
			if want := "00-" + c.traceID + "-" + client.SpanID + "-01"; !calleeSaw[want] {
				t.Fatalf("%s: the callee never saw %s (saw %v)", id, want, calleeSaw)
			}
		}
	}
}

// TestRunsAreServedWhenTheOtelSocketIsDown: an engine that refuses /otel
// costs the calls nothing; the spans are dropped, not waited for.
func TestRunsAreServedWhenTheOtelSocketIsDown(t *testing.T) {
	e, err := iiitest.New(iiitest.Options{Logger: quiet(), NoOtel: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	telc := make(chan *telemetry.Telemetry, 1)
	startServe(t, e, ServeOptions{TelemetryFlush: 10 * time.Millisecond, TelemetryQueue: 4, Telemetry: func(tel *telemetry.Telemetry) { telc <- tel }})
	tel := <-telc
	ctx := ctxT(t)
	for i := 0; i < 30; i++ { // a frame each, more than the queue's 4
		res, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "node", "code": "return 1"}, nil)
		if err != nil || eb != nil || !strings.Contains(string(res), `"result":1`) {
			t.Fatalf("call %d: %s %+v %v", i, res, eb, err)
		}
		_ = tel.ForceFlush(ctx)
	}
	if len(e.OtelFrames()) != 0 {
		t.Fatal("frames arrived on a refused socket")
	}
	_ = tel.ForceFlush(ctx)
	if tel.Dropped() == 0 {
		t.Fatal("with /otel down and the queue full, no frame was counted as dropped")
	}
}

// metricPoints returns, from the latest MTRC frame, the data points of the
// named metric as "k=v,k=v" attribute strings (sorted keys) → value (the
// count, for histograms).
func metricPoints(t *testing.T, frames [][]byte, name string) map[string]string {
	t.Helper()
	for i := len(frames) - 1; i >= 0; i-- {
		f := frames[i]
		if !bytes.HasPrefix(f, []byte("MTRC")) {
			continue
		}
		type point struct {
			Attributes []struct {
				Key   string `json:"key"`
				Value struct {
					StringValue string `json:"stringValue"`
				} `json:"value"`
			} `json:"attributes"`
			AsInt string `json:"asInt"`
			Count string `json:"count"`
		}
		var doc struct {
			ResourceMetrics []struct {
				ScopeMetrics []struct {
					Metrics []struct {
						Name      string                        `json:"name"`
						Sum       *struct{ DataPoints []point } `json:"sum"`
						Gauge     *struct{ DataPoints []point } `json:"gauge"`
						Histogram *struct{ DataPoints []point } `json:"histogram"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal(f[4:], &doc); err != nil {
			t.Fatalf("a metrics frame is not OTLP JSON: %v", err)
		}
		out := map[string]string{}
		for _, rm := range doc.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if m.Name != name {
						continue
					}
					var pts []point
					if m.Sum != nil {
						pts = m.Sum.DataPoints
					}
					if m.Gauge != nil {
						pts = m.Gauge.DataPoints
					}
					if m.Histogram != nil {
						pts = m.Histogram.DataPoints
					}
					for _, p := range pts {
						var kv []string
						for _, a := range p.Attributes {
							kv = append(kv, a.Key+"="+a.Value.StringValue)
						}
						sort.Strings(kv)
						v := p.AsInt
						if v == "" {
							v = p.Count
						}
						out[strings.Join(kv, ",")] = v
					}
				}
			}
		}
		return out
	}
	return nil
}

// TestMetricsAfterAKnownSequence: two python one-shots that succeed, a
// node one-shot killed at its deadline, a python one-shot making one
// refused and one answered guest call (a nested node run), a guest throw
// and raise, a python memory kill and a /out budget kill show up in the
// metrics the engine receives: runs by language, mode and outcome (a
// guest's throw is guest_error, not ok), their durations, the kills by
// reason (memory apart from budget), the guest calls by outcome; the spans
// of the failed runs carry their exit code.
func TestMetricsAfterAKnownSequence(t *testing.T) {
	e := newTestEngine(t)
	telc := make(chan *telemetry.Telemetry, 1)
	startServe(t, e, ServeOptions{TelemetryFlush: 20 * time.Millisecond, Telemetry: func(tel *telemetry.Telemetry) { telc <- tel }})
	tel := <-telc
	ctx := ctxT(t)
	for i := 0; i < 2; i++ {
		if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python", "code": "result = 1"}, nil); err != nil || eb != nil {
			t.Fatal(err, eb)
		}
	}
	if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "node", "code": "for (;;) {}", "timeout_ms": 200}, nil); err != nil || eb == nil || eb.Code != "code-runner::timeout" {
		t.Fatalf("the spinning node run: %v %+v", err, eb)
	}
	// A guest call the deny-list refuses, one python refuses before the
	// bridge (an id over 512 bytes), and one the engine answers.
	if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python",
		"code": "for fid in ('state::claim-namespace', 'x' * 600):\n    try:\n        iii.trigger({'function_id': fid})\n    except RuntimeError:\n        pass\nresult = iii.trigger({'function_id': 'code-runner::run', 'payload': {'lang': 'node', 'code': 'return 7'}})['result']"}, nil); err != nil || eb != nil {
		t.Fatalf("the guest calls: %v %+v", err, eb)
	}
	for _, c := range []struct{ lang, code, code2 string }{
		{"node", "throw new Error('no')", ""},
		{"python", "raise ValueError('no')", ""},
		{"python", "b = bytearray(1 << 30)", "code-runner::resource_exhausted"},
		{"python", "open('/out/x', 'wb').write(b'x' * (5 << 20))", "code-runner::resource_exhausted"},
	} {
		_, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": c.lang, "code": c.code}, nil)
		if err != nil || (eb == nil) != (c.code2 == "") || (eb != nil && eb.Code != c.code2) {
			t.Fatalf("%s: %v %+v", c.code, err, eb)
		}
	}
	want := map[string]map[string]string{
		"code_runner.runs": {
			"lang=python,mode=one-shot,outcome=ok":                              "3",
			"lang=node,mode=one-shot,outcome=code-runner::timeout":              "1",
			"lang=node,mode=one-shot,outcome=ok":                                "1", // the guest's nested run
			"lang=node,mode=one-shot,outcome=guest_error":                       "1",
			"lang=python,mode=one-shot,outcome=guest_error":                     "1",
			"lang=python,mode=one-shot,outcome=code-runner::resource_exhausted": "2",
		},
		"code_runner.run.duration":  {"lang=python,outcome=ok": "3", "lang=node,outcome=code-runner::timeout": "1"},
		"code_runner.bridge.calls":  {"outcome=refused": "2", "outcome=ok": "1"},
		"code_runner.kills":         {"reason=timeout": "1", "reason=memory": "1", "reason=budget": "1"},
		"code_runner.runtimes.live": {"kind=kept": "0", "kind=namespace": "0"},
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_ = tel.ForceFlush(ctx)
		frames := e.OtelFrames()
		ok := true
		for name, points := range want {
			got := metricPoints(t, frames, name)
			for k, v := range points {
				if got[k] != v {
					ok = false
					if time.Now().After(deadline) {
						t.Fatalf("%s{%s} = %q, want %q (all: %v)", name, k, got[k], v, got)
					}
				}
			}
		}
		parked := metricPoints(t, frames, "code_runner.pool.parked")
		refill := metricPoints(t, frames, "code_runner.pool.refill.duration") // the pools booted at start
		failed := map[string]string{}
		for _, s := range spansOf(t, frames) {
			if s.Name == "code-runner::run" && s.attr("code_runner.outcome") != "ok" {
				failed[s.attr("code_runner.lang")+" "+s.attr("code_runner.outcome")+" exit="+s.attr("code_runner.exit_code")+" kill="+s.attr("code_runner.kill")] = "seen"
			}
		}
		spansOK := failed["node guest_error exit=1 kill="] != "" && failed["python guest_error exit=1 kill="] != "" &&
			failed["node code-runner::timeout exit= kill=timeout"] != "" && failed["python code-runner::resource_exhausted exit= kill=memory"] != "" &&
			failed["python code-runner::resource_exhausted exit= kill=budget"] != ""
		if ok && spansOK && parked["lang=node"] != "" && parked["lang=python"] != "" && refill["lang=node"] != "" && refill["lang=python"] != "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool gauges, refill times or failed-run spans missing: parked %v, refill %v, failed spans %v", parked, refill, failed)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
