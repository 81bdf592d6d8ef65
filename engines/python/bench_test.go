package python

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/engines/python/pywasm"
	"github.com/code-runner-go/code-runner/internal/benchutil"
	"github.com/code-runner-go/code-runner/internal/wasmloops"
)

func benchRun(b testing.TB, r *rig, req map[string]any) resp {
	res, err := r.run(b, req)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

func py(code string) map[string]any { return map[string]any{"lang": "python", "code": code} }

// BenchmarkPythonOneShot: one-shot `result = 2+2` with a warm pool and
// without, beside `/usr/bin/python3 -c` spawned per run (the system
// interpreter, never a version manager's shim first on PATH).
func BenchmarkPythonOneShot(b *testing.B) {
	n := max(b.N, 10)
	warm := newRig(b, func(c *configsvc.Config) { c.WarmPoolPython = 2 })
	_ = warm.eng.WaitReady(context.Background())
	time.Sleep(3 * time.Second)
	pooled := benchutil.TimeEach(n, func() { benchRun(b, warm, py("result = 2+2")) },
		func() { time.Sleep(600 * time.Millisecond) }) // a parked interpreter boots in the background in ~0.4 s
	cold := newRig(b, nil)
	_ = cold.eng.WaitReady(context.Background())
	fresh := benchutil.Time(n, func() { benchRun(b, cold, py("result = 2+2")) })
	base := benchutil.Time(n, func() { benchutil.Spawn(b, "/usr/bin/python3", "-c", "print(2+2)") })
	pooled.Report(b, "warm-pool")
	fresh.Report(b, "no-pool")
	base.Report(b, "python3-c")
	benchutil.Ratio(b, "x-faster-than-python3-c", pooled, base)
}

// BenchmarkPythonKeptTurn: a turn in an existing kept runtime, and a guest
// iii.trigger round trip measured inside one turn.
func BenchmarkPythonKeptTurn(b *testing.B) {
	r := newRig(b, nil)
	k := benchRun(b, r, map[string]any{"lang": "python", "keep": true, "code": "n = 0"})
	turns := benchutil.Time(max(b.N, 300), func() { benchRun(b, r, map[string]any{"runtime_id": k.RuntimeID, "code": "n += 1\nresult = n"}) })
	turns.Report(b, "kept-turn")
	res := benchRun(b, r, map[string]any{"runtime_id": k.RuntimeID, "code": "import time\nt = time.perf_counter()\nfor i in range(200): iii.trigger({'function_id': 'test::echo', 'payload': i})\nresult = (time.perf_counter() - t) / 200 * 1000"})
	var perCall float64
	_ = jsonUnmarshal(res.Result, &perCall)
	b.ReportMetric(perCall, "trigger-roundtrip-ms")
}

// BenchmarkPythonBoot: engine boot to ready with a warm compilation cache,
// and cold (a fresh cache directory).
func BenchmarkPythonBoot(b *testing.B) {
	warm := New(Options{Log: quiet(), CacheDir: testCacheDir})
	_ = warm.WaitReady(context.Background())
	warm.Close()
	t := time.Now()
	e := New(Options{Log: quiet(), CacheDir: testCacheDir})
	_ = e.WaitReady(context.Background())
	b.ReportMetric(float64(time.Since(t).Milliseconds()), "boot-warm-cache-ms")
	e.Close()
	t = time.Now()
	e = New(Options{Log: quiet(), CacheDir: b.TempDir()})
	_ = e.WaitReady(context.Background())
	b.ReportMetric(float64(time.Since(t).Milliseconds()), "boot-cold-ms")
	e.Close()
}

// BenchmarkPythonParkedRSS: resident memory per parked interpreter.
func BenchmarkPythonParkedRSS(b *testing.B) {
	r := newRig(b, nil)
	_ = r.eng.WaitReady(context.Background())
	before := benchutil.RSSKB(os.Getpid())
	const n = 6
	var kept []string
	for i := 0; i < n; i++ {
		kept = append(kept, benchRun(b, r, map[string]any{"lang": "python", "keep": true, "code": "x = 1"}).RuntimeID)
	}
	after := benchutil.RSSKB(os.Getpid())
	b.ReportMetric(float64(after-before)/n/1024, "MiB/parked-interpreter")
	_ = kept
}

// BenchmarkPythonCompute: sum(i*i for i in range(10**6)) in a kept runtime
// beside python3 -c.
func BenchmarkPythonCompute(b *testing.B) {
	r := newRig(b, nil)
	k := benchRun(b, r, map[string]any{"lang": "python", "keep": true, "code": "x = 1"})
	code := "result = sum(i*i for i in range(10**6))"
	ours := benchutil.Time(max(b.N, 5), func() { benchRun(b, r, map[string]any{"runtime_id": k.RuntimeID, "code": code, "timeout_ms": 30000}) })
	base := benchutil.Time(max(b.N, 5), func() {
		if out, err := exec.Command("/usr/bin/python3", "-c", "print(sum(i*i for i in range(10**6)))").CombinedOutput(); err != nil {
			b.Fatalf("%v %s", err, out)
		}
	})
	ours.Report(b, "wasm-turn")
	base.Report(b, "python3-c")
	benchutil.Ratio(b, "x-faster-than-python3-c", ours, base)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// BenchmarkPythonMemoryReturns: worker RSS idle, with 50 kept python
// runtimes, and how soon after tearing them down it is back within 10 % of
// idle (given up after 60 s).
func BenchmarkPythonMemoryReturns(b *testing.B) {
	r := newRig(b, func(c *configsvc.Config) { c.MaxRuntimes = 64 })
	_ = r.eng.WaitReady(context.Background())
	benchRun(b, r, py("result = 1"))
	idle := benchutil.RSSKB(os.Getpid())
	var kept []string
	for i := 0; i < 50; i++ {
		kept = append(kept, benchRun(b, r, map[string]any{"lang": "python", "keep": true, "code": "x = list(range(10000))"}).RuntimeID)
	}
	peak := benchutil.RSSKB(os.Getpid())
	for _, id := range kept {
		if _, err := r.call(b, "code-runner::teardown", map[string]any{"runtime_id": id}); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	after := benchutil.RSSKB(os.Getpid())
	for after > idle*11/10 && time.Since(start) < 60*time.Second {
		time.Sleep(250 * time.Millisecond)
		after = benchutil.RSSKB(os.Getpid())
	}
	b.ReportMetric(float64(idle)/1024, "idle-MiB")
	b.ReportMetric(float64(peak)/1024, "with-50-kept-MiB")
	b.ReportMetric(float64(after)/1024, "after-teardown-MiB")
	b.ReportMetric(time.Since(start).Seconds(), "seconds-to-within-10pct-of-idle")
}

// killabilityProgram times three workloads in-process, best of three, and
// prints "sum dict json" in ms.
const killabilityProgram = `import time, json
def best(f):
    b = 1e9
    for _ in range(3):
        t = time.perf_counter(); f(); b = min(b, time.perf_counter() - t)
    return round(b * 1000)
def s(): sum(i*i for i in range(10**6))
def d():
    m = {}
    for i in range(300000): m[str(i)] = i
def j(): json.loads(json.dumps([{"a": i, "b": str(i)} for i in range(100000)]))
print(best(s), best(d), best(j))`

// BenchmarkPythonKillability: what it costs to keep a computing guest
// killable. The same program runs on python.wasm compiled three ways —
// with no kill mechanism at all (cannot be stopped), with every loop
// rewritten to call code_runner.tick (what the engine runs), and with
// wazero's own kill checks (what it ran before) — beside /usr/bin/python3
// in the same run. The measurement (three cold compiles) is made once per
// process whatever b.N is; a second round reports the same figures.
func BenchmarkPythonKillability(b *testing.B) {
	killability.once.Do(func() {
		killability.none, killability.loops, killability.checks, killability.system = measureKillability(b)
	})
	none, loops, wazeroChecks, system := killability.none, killability.loops, killability.checks, killability.system
	for i, w := range []string{"sum", "dict", "json"} {
		b.ReportMetric(none[i], w+"-no-checks-ms")
		b.ReportMetric(loops[i], w+"-loop-ticks-ms")
		b.ReportMetric(wazeroChecks[i], w+"-wazero-checks-ms")
		b.ReportMetric(system[i], w+"-python3-ms")
		b.ReportMetric(loops[i]/none[i], w+"-loop-ticks-x-no-checks")
		b.ReportMetric(wazeroChecks[i]/none[i], w+"-wazero-checks-x-no-checks")
	}
}

var killability struct {
	once                        sync.Once
	none, loops, checks, system []float64
}

func measureKillability(b *testing.B) (none, loops, wazeroChecks, system []float64) {
	ctx := context.Background()
	plain, err := pywasm.Wasm()
	if err != nil {
		b.Fatal(err)
	}
	std, err := pywasm.Stdlib()
	if err != nil {
		b.Fatal(err)
	}
	rewritten, err := wasmloops.Instrument(plain, tickModule, tickName, loopTickInterval)
	if err != nil {
		b.Fatal(err)
	}
	measure := func(wasm []byte, checks bool) []float64 {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCloseOnContextDone(checks).WithDebugInfoEnabled(false))
		defer rt.Close(ctx)
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		if err := instantiateTick(ctx, rt); err != nil {
			b.Fatal(err)
		}
		var out, errs strings.Builder
		fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: std}}, pywasm.StdlibDir)
		cfg := wazero.NewModuleConfig().WithArgs("python", "-I", "-c", killabilityProgram).WithStdout(&out).WithStderr(&errs).
			WithFSConfig(fsc).WithSysWalltime().WithSysNanotime()
		// As the engine runs it: the instance's queue in its context, so the
		// tick yields as it does in production (once a millisecond).
		if _, err := rt.InstantiateWithConfig(withRewind(ctx, newStdinQueue()), wasm, cfg); err != nil {
			b.Fatalf("%v: %s", err, errs.String())
		}
		return parseTimes(b, out.String())
	}
	none = measure(plain, false)
	loops = measure(rewritten, false)
	wazeroChecks = measure(plain, true)
	native, err := exec.Command("/usr/bin/python3", "-I", "-c", killabilityProgram).Output()
	if err != nil {
		b.Fatal(err)
	}
	return none, loops, wazeroChecks, parseTimes(b, string(native))
}

func parseTimes(b *testing.B, s string) []float64 {
	var v [3]float64
	if n, err := fmt.Sscan(s, &v[0], &v[1], &v[2]); n != 3 || err != nil {
		b.Fatalf("timings %q: %v", s, err)
	}
	return v[:]
}

// BenchmarkPythonDocumentImports: one-shots importing the document
// libraries (`import openpyxl`, `import rich` + a table, `import pypdf`),
// each beside a fresh /usr/bin/python3 importing the very same files (the
// bundle's site-packages, .pyc included, unpacked to a directory).
func BenchmarkPythonDocumentImports(b *testing.B) {
	pkgs, err := pywasm.Packages()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	if err := os.CopyFS(dir, pkgs); err != nil {
		b.Fatal(err)
	}
	site := dir + "/site-packages"
	r := newRig(b, func(c *configsvc.Config) { c.WarmPoolPython = 2 })
	_ = r.eng.WaitReady(context.Background())
	time.Sleep(3 * time.Second)
	n := max(b.N, 10)
	for _, m := range []struct{ name, code string }{
		{"openpyxl", "import openpyxl"},
		{"rich", "import rich.console, rich.table\nrich.table.Table('a')"},
		{"pypdf", "import pypdf"},
	} {
		ours := benchutil.TimeEach(n, func() { benchRun(b, r, py(m.code)) }, func() { time.Sleep(600 * time.Millisecond) })
		base := benchutil.Time(n, func() {
			benchutil.Spawn(b, "/usr/bin/python3", "-c", "import sys; sys.path.insert(0, "+fmt.Sprintf("%q", site)+")\n"+m.code)
		})
		ours.Report(b, m.name)
		base.Report(b, m.name+"-python3")
		benchutil.Ratio(b, "x-faster-than-python3/"+m.name, ours, base)
	}
}
