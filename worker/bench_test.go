package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/benchutil"
)

// discardingEngine is a test engine that keeps no frames (a benchmark's
// or the soak's millions would make its own garbage collector stall the
// callers being measured), closed when tb ends — after the workers
// started on it stop.
func discardingEngine(tb testing.TB) *iiitest.Engine {
	tb.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet(), DiscardFrames: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	return e
}

// BenchmarkRunOverBus: one-shot runs through the test engine (caller →
// engine → worker → engine → caller) with warm pools, both languages.
func BenchmarkRunOverBus(b *testing.B) {
	e := discardingEngine(b)
	startServe(b, e, ServeOptions{})
	time.Sleep(3 * time.Second) // pools fill
	for _, tc := range []struct{ name, lang, code string }{{"node", "node", "return 2+2"}, {"python", "python", "result = 2+2"}} {
		s := benchutil.TimeEach(max(b.N, 10), func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": tc.lang, "code": tc.code}, nil); err != nil || eb != nil {
				b.Fatalf("%v %+v", err, eb)
			}
		}, func() { time.Sleep(1500 * time.Millisecond) })
		s.Report(b, "bus-"+tc.name)
	}
}

// BenchmarkLargeResultOverBus: a kept python runtime answering turns whose
// result is a 900 KB string — which crosses the interpreter's stdout and the
// engine's turn loop whole, and reaches the caller as the max_result_bytes
// marker (default 32 KiB) — beside the same turns with a 1 KB result in the
// same run, through the test engine: p50 of each, their ratio, and CPU per
// large turn of this process (worker, test engine and caller).
func BenchmarkLargeResultOverBus(b *testing.B) {
	e := discardingEngine(b)
	startServe(b, e, ServeOptions{})
	ctx := context.Background()
	raw, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python", "code": "result = 1", "keep": true}, nil)
	if err != nil || eb != nil {
		b.Fatalf("%v %+v", err, eb)
	}
	var kept struct {
		RuntimeID string `json:"runtime_id"`
	}
	if err := json.Unmarshal(raw, &kept); err != nil || kept.RuntimeID == "" {
		b.Fatalf("keep run answered %s (%v)", raw, err)
	}
	turns := func(size int) (benchutil.Samples, time.Duration) {
		code := fmt.Sprintf("result = 'x' * %d", size)
		c0 := benchutil.ProcessCPU(os.Getpid())
		s := benchutil.Time(max(b.N, 40), func() {
			out, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"code": code, "runtime_id": kept.RuntimeID}, nil)
			if err != nil || eb != nil || !bytes.Contains(out, []byte(`"success":true`)) {
				b.Fatalf("%v %+v %.200s", err, eb, out)
			}
		})
		return s, (benchutil.ProcessCPU(os.Getpid()) - c0) / time.Duration(len(s))
	}
	small, _ := turns(1 << 10)
	large, cpu := turns(900000)
	small.Report(b, "result-1KB")
	large.Report(b, "result-900KB")
	benchutil.Ratio(b, "result-900KB-vs-1KB", large, small)
	b.ReportMetric(float64(cpu.Microseconds())/1000, "result-900KB-cpu-ms/turn")
}

// BenchmarkConcurrentOneShotsOverBus: 8 callers issuing one-shot runs
// through the test engine for 5 s per language, warm pools: calls/s, p50,
// p99, and CPU per call — this process (the worker, the test engine and the
// callers, which share it) plus every node isolate host alive at the end.
func BenchmarkConcurrentOneShotsOverBus(b *testing.B) {
	e := discardingEngine(b)
	s := startServe(b, e, ServeOptions{})
	time.Sleep(3 * time.Second) // pools fill
	cpu := func() time.Duration {
		t := benchutil.ProcessCPU(os.Getpid())
		for _, pid := range nodeOf(s.app).HostPIDs() {
			t += benchutil.ProcessCPU(pid)
		}
		return t
	}
	for _, tc := range []struct{ lang, code string }{{"node", "return 2+2"}, {"python", "result = 2+2"}} {
		load, err := benchutil.Concurrent(8, 5*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": tc.lang, "code": tc.code}, nil)
			if err == nil && eb != nil {
				err = fmt.Errorf("%s: %s", eb.Code, eb.Message)
			}
			return err
		}, cpu)
		if err != nil {
			b.Fatalf("%s: %v", tc.lang, err)
		}
		load.Report(b, tc.lang+"-8-callers")
	}
}

// BenchmarkNodeWhilePythonComputes: node one-shots from one caller over the
// bus, back to back for 3 s and then one every 25 ms for 10 s (~330 calls,
// so that the p99 is not simply the slowest call), while two
// python one-shots compute (pure bytecode, no host calls, for longer than
// that), beside the same node calls with python idle in the same run. Wasm code cannot be preempted by Go's garbage collector:
// a stop-the-world waits for every running guest to reach a check, so the
// node tail shows how long the worker stalls.
//
// A paced window beside one computing guest comes first: on its own a
// guest leaves the worker one P until its turn has run for
// python.DefaultLongTurn (internal/tuning).
//
// The process runs with the Ps a served worker has: the governor `serve`
// uses (GOMAXPROCS set in the environment fixes them, as it does for
// `serve`: GOMAXPROCS=2 measures the worker as it was without spare Ps).
func BenchmarkNodeWhilePythonComputes(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	_, set := os.LookupEnv("GOMAXPROCS")
	gov := tuning.ServeGovernor(set)
	defer gov.Close()
	e := discardingEngine(b)
	s := startServe(b, e, ServeOptions{Procs: gov})
	defer s.stop()
	time.Sleep(3 * time.Second) // pools fill
	// node calls for d: back to back (pace 0: each waits for the isolate
	// the last one left to be rebuilt, so the figure is CPU share) or one
	// every pace (a caller that is not saturating the engine: the figure is
	// how long the worker keeps a call waiting).
	node := func(d, pace time.Duration) benchutil.Samples {
		var out benchutil.Samples
		for start := time.Now(); time.Since(start) < d; {
			if pace > 0 && len(out) > 0 {
				time.Sleep(pace)
			}
			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "node", "code": "return [1,2,3].map(x => ({x})).length"}, nil)
			cancel()
			if err != nil || eb != nil {
				b.Fatalf("%v %+v", err, eb)
			}
			out = append(out, time.Since(t0))
		}
		return out
	}
	const paced = 10 * time.Second
	idle, idlePaced := node(3*time.Second, 0), node(paced, 25*time.Millisecond)
	done := make(chan struct{}, 2)
	compute := func(timeoutMS int) {
		go func() {
			defer func() { done <- struct{}{} }()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// Runs past the windows beside it; the deadline ends it.
			_, _, _ = e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python", "timeout_ms": timeoutMS,
				"code": "s = 0\nfor i in range(10**9):\n    s += i * i\nresult = s"}, nil)
		}()
	}
	compute(11000)
	time.Sleep(300 * time.Millisecond) // the guest is computing
	onePaced := node(paced, 25*time.Millisecond)
	<-done
	for i := 0; i < 2; i++ {
		compute(15000)
	}
	time.Sleep(300 * time.Millisecond) // both guests are computing
	busy, busyPaced := node(3*time.Second, 0), node(paced, 25*time.Millisecond)
	<-done
	<-done
	idle.Report(b, "node-python-idle")
	busy.Report(b, "node-python-computing")
	idlePaced.Report(b, "paced-node-python-idle")
	onePaced.Report(b, "paced-node-one-python-computing")
	busyPaced.Report(b, "paced-node-python-computing")
	benchutil.Ratio(b, "p50-x-slower-while-computing", idle, busy)
	b.ReportMetric(float64(busy.P(0.99))/float64(time.Millisecond), "p99-ms-while-computing")
	b.ReportMetric(float64(busyPaced.P(0.99))/float64(time.Millisecond), "paced-p99-ms-while-computing")
	b.ReportMetric(float64(len(busyPaced)), "paced-calls-while-computing")
	b.ReportMetric(float64(onePaced.P(0.99))/float64(time.Millisecond), "paced-p99-ms-while-one-computes")
}

// BenchmarkTelemetryCost: node one-shots over the bus with telemetry on
// (spans, metrics and logs to the engine's /otel socket) beside the same
// calls with OTEL_ENABLED=false, each on a fresh worker logging at the
// production level (info) in the same run. Four interleaved rounds each, so
// drift on a noisy machine hits both alike.
func BenchmarkTelemetryCost(b *testing.B) {
	e := discardingEngine(b)
	var on, off benchutil.Samples
	for round := 0; round < 4; round++ {
		for _, enabled := range []bool{round%2 == 0, round%2 != 0} {
			env := envFrom(map[string]string{"OTEL_ENABLED": "false"})
			if enabled {
				env = envFrom(nil)
			}
			s := startServe(b, e, ServeOptions{Env: env, Log: slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))})
			time.Sleep(2 * time.Second) // pools fill
			samples := benchutil.TimeEach(max(b.N, 50), func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "node", "code": "return 2+2"}, nil); err != nil || eb != nil {
					b.Fatalf("%v %+v", err, eb)
				}
			}, func() { time.Sleep(20 * time.Millisecond) }) // the host recycles between calls
			if enabled {
				on = append(on, samples...)
			} else {
				off = append(off, samples...)
			}
			s.stop()
		}
	}
	on.Report(b, "telemetry-on")
	off.Report(b, "telemetry-off")
	if off.P(0.5) > 0 {
		b.ReportMetric(float64(on.P(0.5))/float64(off.P(0.5)), "p50-on/off")
	}
}

// BenchmarkForwardedKeptTurnOverBus: two workers on one engine (contract
// §24), each the real binary in its own process as operators run them. A
// kept runtime on each; turns through the shared code-runner::run id,
// which the holder serves — on its own runtime directly, on the other
// worker's by forwarding to that worker's per-worker id — interleaved in
// one run, both languages: p50/p99 of each and the forwarded turn's p50
// over the direct one's (target ≤ 1.5), beside the floor any forward
// over the engine has: the direct turn plus one bare round trip.
func BenchmarkForwardedKeptTurnOverBus(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "code-runner")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/code-runner").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	e := discardingEngine(b)
	ctx := context.Background()
	for _, name := range []string{"cr-a", "cr-b"} {
		cmd := exec.Command(bin, "serve", "--url", e.URL())
		cmd.Env = append(os.Environ(), "III_WORKER_NAME="+name)
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() })
		wctx, cancel := context.WithTimeout(ctx, 120*time.Second)
		err := e.WaitUntil(wctx, func() bool { return e.HasFunction("code-runner::on-config-change@" + Tag(name)) })
		cancel()
		if err != nil {
			b.Fatalf("%s never served", name)
		}
	}
	// A last-writer (0.22) engine: cr-b, the last to register, holds the
	// shared ids.
	if err := e.WaitUntil(ctx, func() bool {
		res, _, _ := e.Invoke(ctx, "engine::functions::list", map[string]any{"prefix": "code-runner::run", "include_internal": true}, nil)
		return bytes.Contains(res, []byte(`"function_id":"code-runner::run","worker_name":"cr-b"`))
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(3 * time.Second) // pools fill
	for _, tc := range []struct{ lang, keep, turn string }{
		{"node", "globalThis.n = 0; return 0", "return ++globalThis.n"},
		{"python", "n = 0\nresult = n", "n += 1\nresult = n"},
	} {
		ids := map[string]string{}
		for _, name := range []string{"cr-a", "cr-b"} {
			raw, eb, err := e.Invoke(ctx, "code-runner::run@"+Tag(name), map[string]any{"lang": tc.lang, "keep": true, "code": tc.keep}, nil)
			var kept struct {
				RuntimeID string `json:"runtime_id"`
			}
			if err != nil || eb != nil || json.Unmarshal(raw, &kept) != nil || kept.RuntimeID == "" {
				b.Fatalf("%s on %s: %s %+v %v", tc.lang, name, raw, eb, err)
			}
			ids[name] = kept.RuntimeID
		}
		turn := func(id string) time.Duration {
			t := time.Now()
			out, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"runtime_id": id, "code": tc.turn}, nil)
			d := time.Since(t)
			if err != nil || eb != nil || !bytes.Contains(out, []byte(`"success":true`)) {
				b.Fatalf("%v %+v %.200s", err, eb, out)
			}
			return d
		}
		// hop is one engine round trip to cr-a with no guest work (a
		// request the pipeline refuses at once): what a forward adds at
		// least, since the engine offers no hand-off of an invocation.
		hop := func() time.Duration {
			t := time.Now()
			_, eb, err := e.Invoke(ctx, "code-runner::run@"+Tag("cr-a"), map[string]any{}, nil)
			d := time.Since(t)
			if err != nil || eb == nil {
				b.Fatalf("a run without code was not refused: %v %+v", err, eb)
			}
			return d
		}
		for i := 0; i < 20; i++ { // warm every path
			turn(ids["cr-a"])
			turn(ids["cr-b"])
			hop()
		}
		var direct, forwarded, hops, floor benchutil.Samples
		for i := 0; i < max(b.N, 200); i++ {
			d := turn(ids["cr-b"])
			h := hop()
			direct = append(direct, d)
			hops = append(hops, h)
			floor = append(floor, d+h)
			forwarded = append(forwarded, turn(ids["cr-a"]))
		}
		direct.Report(b, tc.lang+"-kept-direct")
		forwarded.Report(b, tc.lang+"-kept-forwarded")
		hops.Report(b, tc.lang+"-bare-hop")
		benchutil.Ratio(b, tc.lang+"-forwarded-over-direct-x", direct, forwarded)
		// The least a forwarded turn can cost: the direct turn plus one
		// bare round trip to the other worker, over the direct turn.
		benchutil.Ratio(b, tc.lang+"-floor-over-direct-x", direct, floor)
	}
}

// BenchmarkRegisterWithRecord: register_function of a new node id in a
// live namespace through the test engine, with its record written to the
// engine's state store, beside the same registration on an engine without
// a state store (memory-only) in the same run, alternating blocks of 10:
// p50 of each and their ratio.
func BenchmarkRegisterWithRecord(b *testing.B) {
	withStore := discardingEngine(b)
	bare, err := iiitest.New(iiitest.Options{Logger: quiet(), DiscardFrames: true, NoState: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(bare.Close)
	startServe(b, withStore, ServeOptions{WorkerName: "cr-record"})
	startServe(b, bare, ServeOptions{WorkerName: "cr-memory"})
	i := 0
	reg := func(e *iiitest.Engine) func() {
		return func() {
			i++
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": fmt.Sprintf("bench-rec::f%d", i), "lang": "node",
				"source": "export function handler(p) { return p }"}, nil); err != nil || eb != nil {
				b.Fatalf("%v %+v", err, eb)
			}
		}
	}
	reg(withStore)() // each namespace exists before the measurement
	reg(bare)()
	var recorded, memory benchutil.Samples
	for n := 0; n < max(b.N, 200); n += 10 {
		recorded = append(recorded, benchutil.Time(10, reg(withStore))...)
		memory = append(memory, benchutil.Time(10, reg(bare))...)
	}
	recorded.Report(b, "with-record")
	memory.Report(b, "memory-only")
	b.ReportMetric(float64(recorded.P(0.5))/float64(memory.P(0.5)), "x-record-vs-memory")
}

// BenchmarkRestoreAfterRestart: 1,000 registered functions (100 node
// namespaces of 10 ids) come back after their worker stops and another
// starts: the time from the new worker's start to the last one answering.
func BenchmarkRestoreAfterRestart(b *testing.B) {
	e := discardingEngine(b)
	cfg := func(s *served) {
		c := s.app.Router.Live().Config
		c.MaxRuntimes = 256
		if eb := e.Config.SetValue(context.Background(), "code-runner", json.RawMessage(c.JSON())); eb != nil {
			b.Fatal(eb)
		}
		for s.app.Router.Live().Config.MaxRuntimes != 256 {
			time.Sleep(10 * time.Millisecond)
		}
	}
	a := startServe(b, e, ServeOptions{WorkerName: "cr-restore"})
	cfg(a)
	ids := make([]string, 0, 1000)
	for ns := 0; ns < 100; ns++ {
		for f := 0; f < 10; f++ {
			id := fmt.Sprintf("restore%03d::f%d", ns, f)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": id, "lang": "node",
				"source": fmt.Sprintf("export function handler() { return %d }", ns*10+f)}, nil)
			cancel()
			if err != nil || eb != nil {
				b.Fatalf("%s: %v %+v", id, err, eb)
			}
			ids = append(ids, id)
		}
	}
	a.stop()
	start := time.Now()
	startServe(b, e, ServeOptions{WorkerName: "cr-restore"})
	ready := time.Since(start)
	for i, id := range ids {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, eb, err := e.Invoke(ctx, id, json.RawMessage(`{}`), nil)
			cancel()
			if err == nil && eb == nil && string(out) == fmt.Sprint(i) {
				break
			}
			if time.Since(start) > 120*time.Second {
				b.Fatalf("%s never came back: %s %+v %v", id, out, eb, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	b.ReportMetric(float64(ready.Milliseconds()), "ms-to-ready")
	b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms-to-last-answer")
}
