package iii_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newEngine(t *testing.T) *iiitest.Engine {
	t.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func newEngineB(b *testing.B) *iiitest.Engine {
	b.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(e.Close)
	return e
}

func newClient(t *testing.T, url, name string, mut func(*iii.Options)) *iii.Client {
	t.Helper()
	o := iii.Options{URL: url, Name: name, Version: "test", Description: "test worker", Logger: quiet(),
		BackoffInitial: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond}
	if mut != nil {
		mut(&o)
	}
	c := iii.New(o)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestCallsBothWaysWithMetadataAndCallerID(t *testing.T) {
	e := newEngine(t)
	a := newClient(t, e.URL(), "a", nil)
	b := newClient(t, e.URL(), "b", nil)
	var got iii.Request
	b.RegisterFunction(iii.FunctionDef{ID: "b::echo", Description: "echo"}, func(ctx context.Context, r iii.Request) (any, error) {
		got = r
		return map[string]any{"data": r.Data, "html": "<&>"}, nil
	})
	ctx := ctx10(t)
	if _, err := e.WaitWorker(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("b::echo") })
	res, err := a.Invoke(ctx, iii.Call{FunctionID: "b::echo", Data: json.RawMessage(`{"x":1}`), Metadata: json.RawMessage(`{"tenant":"t1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `"html":"<&>"`) {
		t.Fatalf("result HTML-escaped or wrong: %s", res)
	}
	if string(got.Metadata) != `{"tenant":"t1"}` {
		t.Fatalf("metadata %s", got.Metadata)
	}
	var data map[string]any
	_ = json.Unmarshal(got.Data, &data)
	if data["_caller_worker_id"] != a.WorkerID() || data["x"] != float64(1) {
		t.Fatalf("data %s (caller %s)", got.Data, a.WorkerID())
	}
	// Unknown function → function_not_found from the engine.
	_, err = a.Invoke(ctx, iii.Call{FunctionID: "nope::x"})
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != "function_not_found" || ie.Message != "Function nope::x not found" {
		t.Fatalf("%v", err)
	}
	// A handler error travels with its code.
	b.RegisterFunction(iii.FunctionDef{ID: "b::fail"}, func(ctx context.Context, r iii.Request) (any, error) {
		return nil, &iii.InvocationError{Code: "code-runner::timeout", Message: "code-runner::timeout: execution exceeded its deadline"}
	})
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("b::fail") })
	_, err = a.Invoke(ctx, iii.Call{FunctionID: "b::fail", Data: json.RawMessage(`{}`)})
	if !errors.As(err, &ie) || ie.Code != "code-runner::timeout" {
		t.Fatalf("%v", err)
	}
}

func TestWorkerFunctionNotFoundAndPanics(t *testing.T) {
	e := newEngine(t)
	b := newClient(t, e.URL(), "b", nil)
	b.RegisterFunction(iii.FunctionDef{ID: "b::panic"}, func(ctx context.Context, r iii.Request) (any, error) { panic("boom") })
	ctx := ctx10(t)
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("b::panic") })
	_, eb, err := e.Invoke(ctx, "b::panic", map[string]int{}, nil)
	if err != nil || eb == nil || eb.Code != "invocation_failed" {
		t.Fatalf("%+v %v", eb, err)
	}
	// The client answers function_not_found for an id it no longer serves.
	b.UnregisterFunction("b::panic")
	b.RegisterFunction(iii.FunctionDef{ID: "b::other"}, func(ctx context.Context, r iii.Request) (any, error) { return 1, nil })
	_ = e.WaitUntil(ctx, func() bool { return !e.HasFunction("b::panic") })
	_, eb, _ = e.Invoke(ctx, "b::panic", nil, nil)
	if eb == nil || eb.Code != "function_not_found" {
		t.Fatalf("%+v", eb)
	}
}

func TestVoidAndEnqueue(t *testing.T) {
	e := newEngine(t)
	a := newClient(t, e.URL(), "a", nil)
	var hits atomic.Int64
	a.RegisterFunction(iii.FunctionDef{ID: "a::count"}, func(ctx context.Context, r iii.Request) (any, error) {
		hits.Add(1)
		return nil, nil
	})
	ctx := ctx10(t)
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("a::count") })
	res, err := a.Invoke(ctx, iii.Call{FunctionID: "a::count", Data: json.RawMessage(`{}`), Action: json.RawMessage(`{"type":"void"}`)})
	if err != nil || res != nil {
		t.Fatalf("%s %v", res, err)
	}
	if err := e.WaitUntil(ctx, func() bool { return hits.Load() == 1 }); err != nil {
		t.Fatal("void call never arrived")
	}
	// The void frame carried no invocation_id and data was present.
	r, err := e.WaitFrame(ctx, func(r iiitest.Recorded) bool {
		return r.Inbound && r.Frame.Type == iii.TypeInvokeFunction && r.Frame.FunctionID == "a::count"
	})
	if err != nil || r.Frame.InvocationID != "" || !strings.Contains(string(r.Raw), `"data"`) {
		t.Fatalf("void frame %s", r.Raw)
	}
	_, err = a.Invoke(ctx, iii.Call{FunctionID: "a::count", Action: json.RawMessage(`{"type":"enqueue","queue":"q"}`)})
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != "enqueue_error" {
		t.Fatalf("enqueue without a queue provider: %v", err)
	}
}

func TestEnqueueWithInMemoryQueue(t *testing.T) {
	e, err := iiitest.New(iiitest.Options{Logger: quiet(), Enqueue: iiitest.EnqueueInMemory})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	a := newClient(t, e.URL(), "a", nil)
	done := make(chan struct{}, 1)
	a.RegisterFunction(iii.FunctionDef{ID: "a::job"}, func(ctx context.Context, r iii.Request) (any, error) {
		done <- struct{}{}
		return "ignored", nil
	})
	ctx := ctx10(t)
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("a::job") })
	res, err := a.Invoke(ctx, iii.Call{FunctionID: "a::job", Data: json.RawMessage(`{}`), Action: json.RawMessage(`{"type":"enqueue","queue":"payments"}`)})
	if err != nil || !strings.Contains(string(res), "messageReceiptId") {
		t.Fatalf("%s %v", res, err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("enqueued job never ran")
	}
}

// TestReconnectReattachesAndReplaysInOrder drops the worker's socket the way
// an engine crash would and checks the replay order of docs/behaviour.md#wire-replay-order.
func TestReconnectReattachesAndReplaysInOrder(t *testing.T) {
	e := newEngine(t)
	w := newClient(t, e.URL(), "w", nil)
	w.RegisterTriggerType(iii.TriggerTypeDef{ID: "w-tt", Description: "tt"}, &recordingProvider{})
	w.RegisterFunction(iii.FunctionDef{ID: "w::f"}, func(ctx context.Context, r iii.Request) (any, error) { return "ok", nil })
	w.RegisterTrigger(iii.Trigger{ID: "trig-1", TriggerType: "cron", FunctionID: "w::f", Config: json.RawMessage(`{"x":1}`)})
	ctx := ctx10(t)
	first, err := e.WaitWorker(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	// The client sends its metadata without waiting for workerregistered, so
	// the engine can know the worker before the worker knows its id. Reattach
	// needs that id: drop the socket only once the client has read it.
	if err := e.WaitUntil(ctx, func() bool { return w.WorkerID() == first }); err != nil {
		t.Fatalf("the client never learned its worker id %s (has %q)", first, w.WorkerID())
	}
	if n := e.CloseConnection("w"); n != 1 {
		t.Fatalf("closed %d connections", n)
	}
	var second string
	if err := e.WaitUntil(ctx, func() bool {
		id, _ := e.WaitWorker(ctx, "w")
		second = id
		return id != "" && id != first
	}); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range e.Frames() {
		if r.Inbound && r.WorkerID == second {
			switch r.Frame.Type {
			case iii.TypeInvokeFunction:
				order = append(order, r.Frame.Type+":"+r.Frame.FunctionID)
			case "metadata":
			default:
				order = append(order, r.Frame.Type)
			}
		}
	}
	want := []string{"reattach", "registertriggertype", "registerfunction", "registertrigger", "invokefunction:engine::workers::register"}
	if len(order) < len(want) || strings.Join(order[:len(want)], ",") != strings.Join(want, ",") {
		t.Fatalf("replay order %v, want %v", order, want)
	}
	res, eb, _ := e.Invoke(ctx, "w::f", nil, nil)
	if eb != nil || string(res) != `"ok"` {
		t.Fatalf("%s %+v", res, eb)
	}
}

type recordingProvider struct {
	mu    sync.Mutex
	reg   []iii.Binding
	unreg []string
	fail  string
}

func (p *recordingProvider) RegisterTrigger(ctx context.Context, b iii.Binding) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != "" {
		return errors.New(p.fail)
	}
	p.reg = append(p.reg, b)
	return nil
}

func (p *recordingProvider) UnregisterTrigger(ctx context.Context, b iii.Binding) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.unreg = append(p.unreg, b.ID)
	return nil
}

func (p *recordingProvider) snapshot() ([]iii.Binding, []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]iii.Binding{}, p.reg...), append([]string{}, p.unreg...)
}

func TestTriggerTypesBindAndUnbind(t *testing.T) {
	e := newEngine(t)
	prov := newClient(t, e.URL(), "prov", nil)
	p := &recordingProvider{}
	prov.RegisterTriggerType(iii.TriggerTypeDef{ID: "g-tt", Description: "test type"}, p)
	reg := newClient(t, e.URL(), "reg", nil)
	ctx := ctx10(t)
	id := reg.RegisterTrigger(iii.Trigger{TriggerType: "g-tt", FunctionID: "reg::hello", Config: json.RawMessage(`{"every":1}`), Metadata: json.RawMessage(`{"m":1}`)})
	if err := e.WaitUntil(ctx, func() bool { r, _ := p.snapshot(); return len(r) == 1 }); err != nil {
		t.Fatal(err)
	}
	r, _ := p.snapshot()
	if r[0].ID != id || r[0].FunctionID != "reg::hello" || string(r[0].Config) != `{"every":1}` || string(r[0].Metadata) != `{"m":1}` {
		t.Fatalf("%+v", r[0])
	}
	reg.UnregisterTrigger(id)
	if err := e.WaitUntil(ctx, func() bool { _, u := p.snapshot(); return len(u) == 1 && u[0] == id }); err != nil {
		t.Fatal(err)
	}
	// A provider rejection reaches the registrant and parks the binding.
	p.fail = "bad config"
	id2 := reg.RegisterTrigger(iii.Trigger{TriggerType: "g-tt", FunctionID: "reg::hello"})
	fr, err := e.WaitFrame(ctx, func(r iiitest.Recorded) bool {
		return !r.Inbound && r.Frame.Type == iii.TypeTriggerRegistrationResult && r.Frame.ID == id2 && r.Frame.Error != nil
	})
	if err != nil || fr.Frame.Error.Code != "trigger_registration_failed" || fr.Frame.Error.Message != "bad config" {
		t.Fatalf("%+v %v", fr, err)
	}
	// A type the client no longer provides answers trigger_type_not_found.
	prov.UnregisterTriggerType("g-tt")
	reg.RegisterTrigger(iii.Trigger{ID: "t-late", TriggerType: "g-tt", FunctionID: "reg::hello"})
	fr, err = e.WaitFrame(ctx, func(r iiitest.Recorded) bool {
		return r.Inbound && r.Frame.Type == iii.TypeTriggerRegistrationResult && r.Frame.ID == "t-late"
	})
	if err != nil || fr.Frame.Error == nil || fr.Frame.Error.Code != "trigger_type_not_found" {
		t.Fatalf("%+v %v", fr, err)
	}
}

// TestInvocationStoppedWhenServerDrops: the serving side disappears
// mid-call; the caller gets invocation_stopped.
func TestInvocationStoppedWhenServerDrops(t *testing.T) {
	e := newEngine(t)
	a := newClient(t, e.URL(), "a", nil)
	b := newClient(t, e.URL(), "b", func(o *iii.Options) { o.BackoffInitial = 5 * time.Second })
	entered := make(chan struct{})
	b.RegisterFunction(iii.FunctionDef{ID: "b::slow"}, func(ctx context.Context, r iii.Request) (any, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ctx := ctx10(t)
	// The engine knows b by name only once b's metadata call has arrived,
	// and knows b::slow once its registration has: wait for both.
	if _, err := e.WaitWorker(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("b::slow") }); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := a.Invoke(ctx, iii.Call{FunctionID: "b::slow", Data: json.RawMessage(`{}`)})
		errc <- err
	}()
	select {
	case <-entered:
	case err := <-errc:
		t.Fatalf("the call ended before the handler ran: %v", err)
	}
	if n := e.CloseConnection("b"); n != 1 {
		t.Fatalf("closed %d connections, want 1", n)
	}
	err := <-errc
	var ie *iii.InvocationError
	if !errors.As(err, &ie) || ie.Code != "invocation_stopped" {
		t.Fatalf("%v", err)
	}
}

// TestUnansweredCallTimesOutWithoutLeaks: a peer that never answers; the
// caller times out cleanly and goroutines return to their baseline.
func TestUnansweredCallTimesOutWithoutLeaks(t *testing.T) {
	e := newEngine(t)
	b := newClient(t, e.URL(), "b", nil)
	hold := make(chan struct{})
	defer close(hold)
	b.RegisterFunction(iii.FunctionDef{ID: "b::never"}, func(ctx context.Context, r iii.Request) (any, error) {
		<-hold
		return nil, nil
	})
	a := newClient(t, e.URL(), "a", nil)
	ctx := ctx10(t)
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("b::never") })
	base := settledGoroutines(t)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := a.Invoke(ctx, iii.Call{FunctionID: "b::never", Timeout: 50 * time.Millisecond})
			var ie *iii.InvocationError
			if !errors.Is(err, iii.ErrTimeout) || !errors.As(err, &ie) || ie.Message != "invocation timed out after 50ms" {
				t.Errorf("%v", err)
			}
		}()
	}
	wg.Wait()
	// The 20 handler goroutines in b are still blocked (by design, b never
	// answers); every caller-side goroutine and timer must be gone.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+20 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+20 {
		t.Fatalf("goroutines %d, baseline %d (+20 blocked handlers)", n, base)
	}
}

func TestOfflineCallsAreBufferedAndEngineRestartIsSurvived(t *testing.T) {
	e := newEngine(t)
	addr := strings.TrimPrefix(e.URL(), "ws://")
	offline := make(chan struct{}, 1)
	w := newClient(t, e.URL(), "w", func(o *iii.Options) {
		o.OnDialFailed = func(int, bool, error) {
			select {
			case offline <- struct{}{}:
			default:
			}
		}
	})
	w.RegisterFunction(iii.FunctionDef{ID: "w::f"}, func(ctx context.Context, r iii.Request) (any, error) { return "ok", nil })
	ctx := ctx10(t)
	_, _ = e.WaitWorker(ctx, "w")
	e.Close() // the engine goes away while the worker lives
	select {
	case <-offline: // the worker knows: its reconnect failed
	case <-ctx.Done():
		t.Fatal("the worker never noticed the engine had gone")
	}
	type answer struct {
		res json.RawMessage
		err error
	}
	answered := make(chan answer, 1)
	go func() { // made while offline: buffered until a connection is back
		res, err := w.Invoke(ctx, iii.Call{FunctionID: "w::f", Timeout: 5 * time.Second})
		answered <- answer{res, err}
	}()
	e2, err := iiitest.New(iiitest.Options{Logger: quiet(), Addr: addr})
	if err != nil {
		t.Skipf("skipped_port_reuse_unavailable: %v", err)
	}
	defer e2.Close()
	got := <-answered
	if got.err != nil || string(got.res) != `"ok"` {
		t.Fatalf("call across an engine restart: %s %v", got.res, got.err)
	}
}

// TestJSONPingAndDeadConnection: the client answers a JSON ping with pong
// and drops a connection that stays silent past the idle timeout.
func TestJSONPingAndDeadConnection(t *testing.T) {
	var conns atomic.Int64
	gotPong := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		n := conns.Add(1)
		ctx := context.Background()
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"type":"workerregistered","worker_id":"`+fmt.Sprint("00000000-0000-4000-8000-00000000000", n)+`","reattach_token":"x"}`))
		_ = ws.Write(ctx, websocket.MessageText, []byte(`{"type":"ping"}`))
		if n == 1 {
			for {
				_, b, err := ws.Read(ctx)
				if err != nil {
					return
				}
				if strings.Contains(string(b), `"pong"`) {
					select {
					case gotPong <- struct{}{}:
					default:
					}
					// Go silent: stop reading, so WS pings are never answered.
					time.Sleep(10 * time.Second)
					return
				}
			}
		}
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c := iii.New(iii.Options{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Logger: quiet(),
		PingInterval: 50 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, BackoffInitial: 10 * time.Millisecond})
	defer c.Close()
	select {
	case <-gotPong:
	case <-time.After(5 * time.Second):
		t.Fatal("no pong")
	}
	deadline := time.Now().Add(5 * time.Second)
	for conns.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if conns.Load() < 2 {
		t.Fatal("a silent connection was never declared dead")
	}
}

func TestGarbageAndMalformedFramesAreDropped(t *testing.T) {
	e := newEngine(t)
	ctx := ctx10(t)
	ws, _, err := websocket.Dial(ctx, e.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(-1)
	frames := []string{
		`not json at all`,
		`{"no_type":1}`,
		`{"type":"invokefunction","function_id":"x::y","invocation_id":"c0b265fe-e9ab-40cc-8dde-a28b2645df71"}`,
		`{"type":"invokefunction","function_id":"x::y","invocation_id":"not-a-uuid","data":{}}`,
		`{"type":"registertriggertype","id":"t"}`,
		`{"type":"somethingnew","x":1}`,
		`{"type":"registerfunction","id":"raw::fn","message_type":"registerfunction","surprise":true}`,
	}
	for _, f := range frames {
		if err := ws.Write(ctx, websocket.MessageText, []byte(f)); err != nil {
			t.Fatal(err)
		}
	}
	huge := `{"type":"registerfunction","id":"raw::huge","description":"` + strings.Repeat("h", 5<<20) + `"}`
	if err := ws.Write(ctx, websocket.MessageText, []byte(huge)); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("raw::huge") }); err != nil {
		t.Fatal("a 5 MiB frame was not accepted")
	}
	if !e.HasFunction("raw::fn") {
		t.Fatal("unknown fields made a valid frame undecodable")
	}
	if d := e.Dropped(); len(d) != 5 {
		t.Fatalf("dropped %d frames, want 5: %v", len(d), d)
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte(`{"type":"invokefunction","invocation_id":"c0b265fe-e9ab-40cc-8dde-a28b2645df71","function_id":"a::b","data":{}}`))
	f.Add([]byte(`{"type":"invocationresult","invocation_id":"c0b265fe-e9ab-40cc-8dde-a28b2645df71","function_id":"a","error":{"code":"x","message":"y"}}`))
	f.Add([]byte(`{"type":"registertrigger","id":"t","trigger_type":"x","function_id":"f","config":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := iii.DecodeFrame(b)
		if err != nil {
			if !errors.Is(err, iii.ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
			return
		}
		if fr.Type == "" {
			t.Fatal("decoded a frame without a type")
		}
		if fr.Type == iii.TypeInvokeFunction && fr.Data == nil {
			t.Fatal("invokefunction decoded without data")
		}
	})
}

// settledGoroutines returns the goroutine count once it has held still for
// five samples in a row (connections finish their hand-shakes in the
// background), so it can serve as a baseline.
func settledGoroutines(t *testing.T) int {
	t.Helper()
	last, still := runtime.NumGoroutine(), 0
	for deadline := time.Now().Add(5 * time.Second); still < 5 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		if n := runtime.NumGoroutine(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
	return last
}

// A worker with a namespace resolves its outbound calls there, as the 0.23
// SDKs do (iii-wire §10) — unless the call names another — while engine::
// and configuration:: calls always go to "default"; a worker without one
// sends no namespace.
func TestOutboundCallsCarryTheWorkersNamespace(t *testing.T) {
	e := newEngine(t)
	serve := newClient(t, e.URL(), "callee", nil)
	serve.RegisterFunction(iii.FunctionDef{ID: "callee::echo"}, func(ctx context.Context, r iii.Request) (any, error) { return 1, nil })
	if err := e.WaitUntil(ctx10(t), func() bool { return e.HasFunction("callee::echo") }); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		worker, call, fn, want string
	}{
		{"team-a", "", "callee::echo", "team-a"},
		{"team-a", "default", "callee::echo", "default"},
		{"team-a", "", "engine::functions::list", "default"},
		{"team-a", "", "configuration::get", "default"},
		{"", "", "callee::echo", ""},
	} {
		name := fmt.Sprintf("caller-%d", i)
		c := newClient(t, e.URL(), name, func(o *iii.Options) { o.Namespace = tc.worker })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = c.Invoke(ctx, iii.Call{FunctionID: tc.fn, Data: json.RawMessage(`{}`), Namespace: tc.call, Timeout: time.Second})
		cancel()
		id, _ := e.WaitWorker(ctx10(t), name)
		got, found := "", false
		for _, r := range e.Frames() {
			if r.Inbound && r.WorkerID == id && r.Frame.Type == iii.TypeInvokeFunction && r.Frame.FunctionID == tc.fn {
				got, found = r.Frame.Namespace, true
			}
		}
		if !found || got != tc.want {
			t.Fatalf("worker namespace %q, call %q, %s: sent namespace %q (found %v), want %q", tc.worker, tc.call, tc.fn, got, found, tc.want)
		}
	}
}

// Frames the writer finds queued together go out corked, in one write:
// 400 void calls sent back to back from one goroutine, while 32 callers on
// the engine's side keep answers queuing, all arrive, in the order sent.
func TestFramesQueuedTogetherArriveWholeAndInOrder(t *testing.T) {
	e := newEngine(t)
	a := newClient(t, e.URL(), "a", nil)
	a.RegisterFunction(iii.FunctionDef{ID: "a::echo"}, func(ctx context.Context, r iii.Request) (any, error) {
		return json.RawMessage(r.Data), nil
	})
	var seen atomic.Int64
	a.RegisterFunction(iii.FunctionDef{ID: "a::seq"}, func(ctx context.Context, r iii.Request) (any, error) {
		seen.Add(1)
		return nil, nil
	})
	ctx := ctx10(t)
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("a::echo") && e.HasFunction("a::seq") })
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				res, eb, err := e.Invoke(ctx, "a::echo", json.RawMessage(want), nil)
				if err != nil || eb != nil || string(res) != want {
					errs <- fmt.Errorf("echo %s answered %s (%v, %v)", want, res, eb, err)
					return
				}
			}
		}()
	}
	const n = 400
	for i := 0; i < n; i++ {
		if _, err := a.Invoke(ctx, iii.Call{FunctionID: "a::seq", Data: json.RawMessage(fmt.Sprint(i)), Action: json.RawMessage(`{"type":"void"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := e.WaitUntil(ctx, func() bool { return seen.Load() == n }); err != nil {
		t.Fatalf("%d of %d void calls arrived", seen.Load(), n)
	}
	next := 0
	for _, r := range e.Frames() {
		if r.Inbound && r.Frame.Type == iii.TypeInvokeFunction && r.Frame.FunctionID == "a::seq" {
			if string(r.Frame.Data) != fmt.Sprint(next) {
				t.Fatalf("void call %s arrived where %d was due", r.Frame.Data, next)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("the engine recorded %d of %d void calls", next, n)
	}
}

// A standby function is kept, not sent: only Reregister registers it, and
// a reconnect replays every other function but not it. OnConnected is
// called after each connection's replay.
func TestStandbyFunctionsAreSentOnlyWhenAsked(t *testing.T) {
	e := newEngine(t)
	var connects atomic.Int32
	w := newClient(t, e.URL(), "w", func(o *iii.Options) { o.OnConnected = func() { connects.Add(1) } })
	w.RegisterStandby(iii.FunctionDef{ID: "w::standby"}, func(ctx context.Context, r iii.Request) (any, error) { return "standby", nil })
	w.RegisterFunction(iii.FunctionDef{ID: "w::f"}, func(ctx context.Context, r iii.Request) (any, error) { return "ok", nil })
	ctx := ctx10(t)
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("w::f") }); err != nil {
		t.Fatal(err)
	}
	sent := func(conn, id string) bool {
		for _, r := range e.Frames() {
			if r.Inbound && r.WorkerID == conn && r.Frame.Type == iii.TypeRegisterFunction && r.Frame.ID == id {
				return true
			}
		}
		return false
	}
	first, err := e.WaitWorker(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	if e.HasFunction("w::standby") || sent(first, "w::standby") {
		t.Fatal("a standby function was registered before Reregister")
	}
	w.Reregister("w::standby")
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("w::standby") }); err != nil {
		t.Fatal(err)
	}
	if res, eb, _ := e.Invoke(ctx, "w::standby", nil, nil); eb != nil || string(res) != `"standby"` {
		t.Fatalf("%s %+v", res, eb)
	}
	if err := e.WaitUntil(ctx, func() bool { return w.WorkerID() == first }); err != nil {
		t.Fatal(err)
	}
	e.CloseConnection("w")
	var second string
	if err := e.WaitUntil(ctx, func() bool {
		id, _ := e.WaitWorker(ctx, "w")
		second = id
		return id != "" && id != first && e.HasFunction("w::f") && connects.Load() == 2
	}); err != nil {
		t.Fatalf("reconnect: %v (OnConnected called %d times)", err, connects.Load())
	}
	if sent(second, "w::standby") || !sent(second, "w::f") {
		t.Fatalf("the replay: standby sent %v, w::f sent %v", sent(second, "w::standby"), sent(second, "w::f"))
	}
}
