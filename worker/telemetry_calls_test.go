package worker

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/internal/procfs"
	"github.com/code-runner-go/code-runner/telemetry"
)

// logRecordsOf decodes the log records of every LOGS frame: body, trace
// id and span id.
func logRecordsOf(t *testing.T, frames [][]byte) []struct{ body, traceID, spanID string } {
	t.Helper()
	var out []struct{ body, traceID, spanID string }
	for _, f := range frames {
		if !bytes.HasPrefix(f, []byte("LOGS")) {
			continue
		}
		var doc struct {
			ResourceLogs []struct {
				ScopeLogs []struct {
					LogRecords []struct {
						Body struct {
							StringValue string `json:"stringValue"`
						} `json:"body"`
						TraceID string `json:"traceId"`
						SpanID  string `json:"spanId"`
					} `json:"logRecords"`
				} `json:"scopeLogs"`
			} `json:"resourceLogs"`
		}
		if err := json.Unmarshal(f[4:], &doc); err != nil {
			t.Fatalf("a LOGS frame is not OTLP JSON: %v", err)
		}
		for _, rl := range doc.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				for _, r := range sl.LogRecords {
					out = append(out, struct{ body, traceID, spanID string }{r.Body.StringValue, r.TraceID, r.SpanID})
				}
			}
		}
	}
	return out
}

// A clean stop delivers what was still queued: the run's span, a last
// metrics export counting it, and the "stopping" record — with nothing
// exported before the stop (the flush interval is an hour).
func TestAStopDeliversTheLastTelemetry(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{TelemetryFlush: time.Hour})
	if _, eb := runNode(t, e, map[string]any{"code": "return 1"}); eb != nil {
		t.Fatal(eb)
	}
	s.stop()
	frames := e.OtelFrames()
	ran := false
	for _, sp := range spansOf(t, frames) {
		ran = ran || sp.Name == "code-runner::run"
	}
	stopping := false
	for _, r := range logRecordsOf(t, frames) {
		stopping = stopping || r.body == "code-runner stopping"
	}
	runs := metricPoints(t, frames, "code_runner.runs")
	if !ran || !stopping || runs["lang=node,mode=one-shot,outcome=ok"] != "1" {
		t.Fatalf("after the stop the engine had: run span %v, stopping record %v, runs %v", ran, stopping, runs)
	}
}

// Records the worker writes while serving a call carry that call's trace:
// here the configuration lines an on-config-change call writes.
func TestLogRecordsInsideACallCarryItsTrace(t *testing.T) {
	e, tel, caller, _ := traceRig(t, 0)
	ctx := ctxT(t)
	c := configsvc.Defaults()
	c.MaxResultBytes = 12345
	e.Config.Store("code-runner", json.RawMessage(c.JSON())) // stored without an event: the call below applies it
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	if _, err := caller.Invoke(ctx, iii.Call{FunctionID: "code-runner::on-config-change", Data: json.RawMessage(`{}`),
		Traceparent: "00-" + traceID + "-00f067aa0ba902b7-01"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = tel.ForceFlush(ctx)
		// The call writes what it applied ("configuration applied … max_result_bytes …",
		// or "no changes" when the boot-time refresh got there first).
		var seen []string
		for _, r := range logRecordsOf(t, e.OtelFrames()) {
			if strings.HasPrefix(r.body, "configuration") {
				seen = append(seen, r.body+" trace="+r.traceID)
				if r.traceID == traceID && r.spanID != "" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no configuration record carries the call's trace %s: %q", traceID, seen)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// What guests print never goes to telemetry, at any log level: the console
// output of detached work and of handlers is in the worker's own debug log
// and in no frame the engine receives.
func TestGuestOutputNeverReachesTelemetry(t *testing.T) {
	e := newTestEngine(t)
	telc := make(chan *telemetry.Telemetry, 1)
	s := startServe(t, e, ServeOptions{TelemetryFlush: 20 * time.Millisecond, Telemetry: func(tel *telemetry.Telemetry) { telc <- tel }})
	tel := <-telc
	ctx := ctxT(t)
	if _, eb := runNode(t, e, map[string]any{"keep": true,
		"code": `iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => console.log('guest-secret-detached')); return 1`}); eb != nil {
		t.Fatal(eb)
	}
	if _, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": "gs::f", "lang": "node",
		"source": "function handler() { console.log('guest-secret-handler'); return 1 }"}, nil); err != nil || eb != nil {
		t.Fatal(err, eb)
	}
	if _, eb, err := e.Invoke(ctx, "gs::f", map[string]any{}, nil); err != nil || eb != nil {
		t.Fatal(err, eb)
	}
	s.waitLog(t, "guest-secret-detached")
	s.waitLog(t, "guest-secret-handler")
	_ = tel.ForceFlush(ctx)
	for _, f := range e.OtelFrames() {
		if bytes.Contains(f, []byte("guest-secret")) {
			t.Fatalf("guest output reached telemetry: %.300s", f)
		}
	}
}

// The worker's own ownership check behind a guest's registerFunction is a
// child of the call it serves, not a root span of its own, and is not
// counted as a guest call.
func TestOwnershipChecksAreTheWorkersOwnWork(t *testing.T) {
	e, tel, caller, _ := traceRig(t, 0)
	ctx := ctxT(t)
	const traceID = "0af7651916cd43dd8448eb211c80319c"
	data, _ := json.Marshal(map[string]any{"function_id": "tro::f", "lang": "node",
		"source": "iii.registerFunction('tro::g', () => 2); function handler(p) { return p }"})
	if _, err := caller.Invoke(ctx, iii.Call{FunctionID: "code-runner::register_function", Data: data,
		Traceparent: "00-" + traceID + "-b7ad6b7169203331-01"}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = tel.ForceFlush(ctx)
		frames := e.OtelFrames()
		var checks int
		for _, sp := range spansOf(t, frames) {
			if sp.Name != "call engine::functions::list" {
				continue
			}
			checks++
			if sp.TraceID != traceID || sp.ParentSpanID == "" {
				t.Fatalf("an ownership check is span %s in trace %s (parent %q), want a child in %s", sp.SpanID, sp.TraceID, sp.ParentSpanID, traceID)
			}
		}
		if checks >= 2 { // register_function's own check and the guest's registerFunction
			if got := metricPoints(t, frames, "code_runner.bridge.calls"); len(got) != 0 {
				t.Fatalf("the worker's own checks were counted as guest calls: %v", got)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ownership-check spans reached the engine, want 2", checks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every frame says which worker sent it: service.instance.id is the
// worker's name.
func TestTelemetryNamesTheWorkerInstance(t *testing.T) {
	e, tel, _, _ := traceRig(t, 0)
	if _, eb := runNode(t, e, map[string]any{"code": "return 1"}); eb != nil {
		t.Fatal(eb)
	}
	_ = tel.ForceFlush(ctxT(t))
	for _, f := range e.OtelFrames() {
		if bytes.HasPrefix(f, []byte("OTLP")) {
			if !bytes.Contains(f, []byte(`"key":"service.instance.id","value":{"stringValue":"code-runner"}`)) {
				t.Fatalf("no service.instance.id: %.400s", f)
			}
			return
		}
	}
	t.Fatal("no OTLP frame")
}

// A call answered code-runner::engine leaves one WARN record an operator
// finds by the call's trace id, saying what failed, with no runtime id
// and no guest text (issue 48 item 4): here the isolate host of a kept
// runtime is killed while a call waits in it.
func TestAnEngineFailureLeavesAWarnRecordWithTheTrace(t *testing.T) {
	e, tel, caller, _ := traceRig(t, 0)
	ctx := ctxT(t)
	kept, eb := runNode(t, e, map[string]any{"keep": true, "code": "return 1"})
	if eb != nil {
		t.Fatal(eb)
	}
	rid, _ := kept["runtime_id"].(string)
	const traceID = "5cf92f3577b34da6a3ce929d0e0e4737"
	done := make(chan error, 1)
	go func() {
		_, err := caller.Invoke(ctx, iii.Call{FunctionID: "code-runner::run", Traceparent: "00-" + traceID + "-00f067aa0ba902b7-01",
			Data: json.RawMessage(`{"runtime_id":"` + rid + `","code":"console.log('guest-words'); await new Promise((r) => setTimeout(r, 5000)); return 2","timeout_ms":20000}`)})
		done <- err
	}()
	time.Sleep(500 * time.Millisecond) // the call is waiting in its host
	hosts := procfs.Descendants(os.Getpid())
	if len(hosts) == 0 {
		t.Fatal("no isolate host to kill")
	}
	for _, pid := range hosts {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "code-runner::engine") {
		t.Fatalf("the call answered %v, want code-runner::engine", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_ = tel.ForceFlush(ctx)
		for _, f := range e.OtelFrames() {
			if bytes.Contains(f, []byte("guest-words")) || bytes.Contains(f, []byte(rid)) {
				t.Fatalf("telemetry carries guest text or the runtime id: %.300s", f)
			}
		}
		for _, r := range logRecordsOf(t, e.OtelFrames()) {
			if r.body == "a call answered code-runner::engine" && r.traceID == traceID {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no WARN record with the call's trace id")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
