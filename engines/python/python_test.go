package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/enginetest"
	"github.com/code-runner-go/code-runner/internal/tuning"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testCacheDir is shared by every test engine so python.wasm compiles once
// per machine, as the worker's on-disk cache does.
var testCacheDir = filepath.Join(os.TempDir(), "code-runner-test-cache")

type rig struct {
	eng    *Engine
	reg    *core.Registry
	router *core.Router
	ns     *core.Namespaces
	cfg    configsvc.Config
	lb     *enginetest.Loopback
	bus    *enginetest.Bus
}

func newRig(t testing.TB, mut func(*configsvc.Config)) *rig {
	t.Helper()
	return newRigWith(t, mut, nil)
}

// newRigWith is newRig with guest calls answered by tr (nil: the loopback).
func newRigWith(t testing.TB, mut func(*configsvc.Config), tr core.Transport) *rig {
	t.Helper()
	cfg := configsvc.Defaults()
	cfg.WarmPoolPython = 0
	if mut != nil {
		mut(&cfg)
	}
	r := &rig{reg: core.NewRegistry(nil), cfg: cfg, lb: &enginetest.Loopback{}, bus: enginetest.NewBus()}
	if tr == nil {
		tr = r.lb
	}
	r.router = core.NewRouter(cfg, "test", tr, quiet())
	// Guest functions are routes, as in the worker.
	r.eng = New(Options{Registry: r.reg, Bus: &core.GuestRoutes{Router: r.router, Bus: r.bus}, Transport: tr, Live: r.router.Live, Log: quiet(), CacheDir: testCacheDir})
	t.Cleanup(r.eng.Close)
	svc := &core.RunService{Registry: r.reg, Engines: map[core.Lang]core.Engine{Lang: r.eng}}
	r.ns = &core.Namespaces{Registry: r.reg, Engines: svc.Engines, Run: svc}
	r.lb.Router = r.router
	for id, route := range core.Routes(svc, r.ns) {
		r.router.Handle(id, route)
	}
	return r
}

// setDefaultTimeout changes default_timeout_ms as a reload would: the
// router's table is swapped, then the engine told.
func (r *rig) setDefaultTimeout(ms int64) {
	r.cfg.DefaultTimeoutMS = ms
	r.router.Swap(r.router.Provision(r.cfg, "test"))
	r.eng.Commit(r.router.Live())
}

func (r *rig) call(t testing.TB, fn string, req any) (json.RawMessage, *core.Error) {
	t.Helper()
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := r.router.Invoke(ctx, fn, b, nil)
	if err != nil {
		var ce *core.Error
		if !errors.As(err, &ce) {
			t.Fatalf("non-wire error %v", err)
		}
		return nil, ce
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(res)
	return json.RawMessage(strings.TrimSuffix(buf.String(), "\n")), nil
}

type resp struct {
	RuntimeID string          `json:"runtime_id"`
	Stdout    string          `json:"stdout"`
	Stderr    string          `json:"stderr"`
	ExitCode  int             `json:"exit_code"`
	Success   bool            `json:"success"`
	Result    json.RawMessage `json:"result"`
}

func (r *rig) run(t testing.TB, req map[string]any) (resp, *core.Error) {
	t.Helper()
	if req["lang"] == nil && req["runtime_id"] == nil {
		req["lang"] = "python"
	}
	out, err := r.call(t, core.FnRun, req)
	var res resp
	if err == nil {
		_ = json.Unmarshal(out, &res)
	}
	return res, err
}

func (r *rig) mustRun(t testing.TB, code string) resp {
	t.Helper()
	res, err := r.run(t, map[string]any{"code": code})
	if err != nil {
		t.Fatalf("%v", err)
	}
	return res
}

func TestPythonRunBasics(t *testing.T) {
	r := newRig(t, nil)
	tests := []struct {
		name, code, stdout, stderrHas, result string
		exit                                  int
	}{
		{"result", "result = 2 + 2", "", "", "4", 0},
		{"print and stderr", "import sys\nprint('out')\nprint('err', file=sys.stderr)", "out\n", "err\n", "null", 0},
		{"non-ASCII", "s = 'olá — 日本語 ±3°'\nprint(s)\nresult = s", "olá — 日本語 ±3°\n", "", `"olá — 日本語 ±3°"`, 0},
		{"no result is null", "x = 1", "", "", "null", 0},
		{"tuple is array; dict keys per json", "result = {'t': (1, 2), 1: 'one'}", "", "", `{"t":[1,2],"1":"one"}`, 0},
		{"unserializable is null", "result = float('nan')", "", "", "null", 0},
		{"object is null", "result = object()", "", "", "null", 0},
		{"SystemExit(0) succeeds with the result", "import sys\nresult = 5\nsys.exit(0)", "", "", "5", 0},
		{"D5 failure keeps streams", "print('before')\nraise ValueError('x')", "before\n", "ValueError: x\nTraceback (most recent call last):\n  File \"<code>\", line 2, in <module>\n", "null", 1},
		{"syntax error", "def (:", "", "invalid syntax (line 1)\n", "null", 1},
		{"top-level return", "return 1", "", "'return' outside function (line 1)\n", "null", 1},
		{"os._exit", "import os\nprint('x', flush=True)\nos._exit(7)", "x\n", "code exited with status 7 before completing\n", "null", 1},
		{"envelope too large", "result = 'x' * (1024 * 1024)", "", "serialized result envelope is 1048599 bytes; max 1048576\n", "null", 1},
		{"time.sleep is routed to the host", "import time\nt = time.time()\ntime.sleep(0.05)\nresult = time.time() - t >= 0.04", "", "", "true", 0},
		{"iii repr and namespace", "result = [repr(iii), iii.namespace.startswith('code-runner::')]", "", "", `["<iii: host client. e.g. iii.trigger({'function_id': 'worker::fn', 'payload': {}}); iii.namespace is the prefix this runtime may register under>",true]`, 0},
		{"payload is None for run", "result = payload", "", "", "null", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := r.mustRun(t, tc.code)
			if string(res.Result) == "" {
				res.Result = json.RawMessage("null")
			}
			if res.Stdout != tc.stdout || !strings.Contains(res.Stderr, tc.stderrHas) || string(res.Result) != tc.result || res.ExitCode != tc.exit || res.Success != (tc.exit == 0) {
				t.Fatalf("stdout=%q stderr=%q result=%s exit=%d", res.Stdout, res.Stderr, res.Result, res.ExitCode)
			}
		})
	}
}

// TestSmallObjectsComeFromPymalloc: the build turns on CPython's small-object
// allocator, which its configure leaves off for WASI (every int, tuple and
// dict entry would go through wasi-libc's malloc), and a one-shot after a
// tenant that filled its pools finds them as the snapshot left them.
func TestSmallObjectsComeFromPymalloc(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	stats := "import sys\nsys._debugmallocstats()"
	// All three one-shots on the one pooled interpreter: another boot's
	// figures differ by a few bytes (its own hash seed lays dicts out
	// otherwise), and a first one-shot that found the pool still booting
	// would boot its own.
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitPooled(t, r)
	booted := interpSeq.Load()
	res := r.mustRun(t, stats)
	if !strings.Contains(res.Stderr, "Small block threshold = 512") {
		t.Fatalf("no pymalloc statistics; the build allocates small objects with malloc:\n%.400s", res.Stderr)
	}
	blocksInUse := func(s string) string {
		for _, line := range strings.Split(s, "\n") {
			if strings.HasPrefix(line, "# bytes in allocated blocks") {
				return line
			}
		}
		t.Fatalf("no allocated-blocks line in:\n%.400s", s)
		return ""
	}
	before := blocksInUse(res.Stderr)
	// A tenant that keeps ~8 MB of small objects alive when its turn ends
	// (inside the snapshot's headroom: the interpreter is reset, not
	// replaced).
	waitPooled(t, r)
	r.mustRun(t, "import builtins\nbuiltins.keep = [(i, str(i)) for i in range(10**5)]")
	waitPooled(t, r)
	after := blocksInUse(r.mustRun(t, stats).Stderr)
	waitPooled(t, r)
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters were booted; the test needs the tenant's reset one", n)
	}
	if after != before {
		t.Fatalf("a one-shot after a tenant's allocations found %q, the first found %q", after, before)
	}
}

// TestBootReturnsTheCompilersGarbage: loading python.wasm (a compile far
// more) leaves tens of MiB of garbage that an idle worker kept for good: no
// collection comes until the heap grows, and Go's scavenger returns only
// free spans. Once booted, with nothing disposed of, the engine hands the
// heap back to the system.
func TestBootReturnsTheCompilersGarbage(t *testing.T) {
	returned := make(chan struct{}, 8)
	e := New(Options{Log: quiet(), CacheDir: testCacheDir, FreeMemory: func() { returned <- struct{}{} }})
	t.Cleanup(e.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := e.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-returned:
	case <-time.After(tuning.ReturnDelay + 30*time.Second):
		t.Fatal("the engine booted and never returned its heap to the system")
	}
}

// TestStandardLibraryGuestsRelyOn uses what the earlier npm build offered
// and a guest may rely on — the compression modules and SQLite among them —
// and reads a standard-library source line through a traceback (the
// embedded library is mounted read-only and its files seek).
func TestStandardLibraryGuestsRelyOn(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, `import zlib, bz2, lzma, sqlite3, json, re, decimal, datetime, hashlib, statistics, unicodedata, zoneinfo, xml.etree.ElementTree as ET, csv, io, gzip, zipfile
c = sqlite3.connect('/work/db.sqlite')
c.execute('create table t(x)')
c.executemany('insert into t values (?)', [(i,) for i in range(10)])
c.commit()
buf = io.BytesIO()
with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
    z.writestr('a.txt', 'hello ' * 100)
result = {
    'zlib': zlib.decompress(zlib.compress(b'abc' * 100)) == b'abc' * 100,
    'bz2': bz2.decompress(bz2.compress(b'xyz' * 100)) == b'xyz' * 100,
    'gzip': gzip.decompress(gzip.compress(b'q')) == b'q',
    'lzma': [lzma.decompress(lzma.compress(b'xz' * 1000)) == b'xz' * 1000,
             lzma.decompress(lzma.compress(b'alone', format=lzma.FORMAT_ALONE)) == b'alone',
             lzma.decompress(lzma.compress(b'raw', format=lzma.FORMAT_RAW, filters=[{'id': lzma.FILTER_LZMA2}]), format=lzma.FORMAT_RAW, filters=[{'id': lzma.FILTER_LZMA2}]) == b'raw'],
    'zip': zipfile.ZipFile(buf).read('a.txt').startswith(b'hello'),
    'sqlite': c.execute('select sum(x) from t').fetchone()[0],
    'decimal': str(decimal.Decimal('0.1') + decimal.Decimal('0.2')),
    'sha256': hashlib.sha256(b'').hexdigest()[:8],
    'xml': ET.fromstring('<a><b>1</b></a>').find('b').text,
}
try:
    json.loads('{')
except json.JSONDecodeError:
    import traceback
    result['traceback'] = 'obj, end = self.scan_once(s, idx)' in traceback.format_exc()
import os
lib = os.path.dirname(os.__file__)
before = open(lib + '/os.py', 'rb').read()
refused = 0
for attempt in (lambda: open(lib + '/os.py', 'ab').write(b'#') and None, lambda: os.remove(lib + '/json/__init__.py'),
                lambda: open(lib + '/new.py', 'w').close(), lambda: os.mkdir(lib + '/d')):
    try:
        f = attempt()
    except OSError:
        refused += 1
import gc; gc.collect()
result['readonly'] = [refused, open(lib + '/os.py', 'rb').read() == before, os.path.exists(lib + '/new.py')]
`)
	want := `{"zlib":true,"bz2":true,"gzip":true,"lzma":[true,true,true],"zip":true,"sqlite":45,"decimal":"0.3","sha256":"e3b0c442","xml":"1","traceback":true,"readonly":[4,true,false]}`
	if !res.Success || string(res.Result) != want {
		t.Fatalf("result %s, stderr %s", res.Result, res.Stderr)
	}
}

// TestNewRuntimeFollowsTheCallsSnapshot: a runtime is made under the
// configuration of the call that asked for it, not the engine's own view:
// with scratch_root changed on the routes only, a kept runtime's /work is
// created under the call's root.
func TestNewRuntimeFollowsTheCallsSnapshot(t *testing.T) {
	r := newRig(t, nil)
	root := t.TempDir()
	c := r.cfg
	c.ScratchRoot = &root
	r.router.Swap(r.router.Provision(c, "test")) // the engine is not told (Commit)
	res, err := r.run(t, map[string]any{"code": "open('/work/f', 'w').write('x')", "keep": true})
	if err != nil || !res.Success {
		t.Fatalf("%+v %v", res, err)
	}
	entries, _ := os.ReadDir(root)
	var names []string
	for _, e := range entries {
		names = append(names, strings.SplitN(e.Name(), "-", 3)[2]) // iii-python-<work|out>-<random>
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "work") || !strings.Contains(got, "out") {
		t.Fatalf("the call's scratch root holds %v, want its /work and /out", entries)
	}
	if _, err := r.call(t, core.FnTeardown, map[string]any{"runtime_id": res.RuntimeID}); err != nil {
		t.Fatal(err)
	}
}

func TestPythonKeepAndWork(t *testing.T) {
	r := newRig(t, nil)
	first, err := r.run(t, map[string]any{"keep": true, "code": "n = 41\nopen('/work/f.txt', 'w').write('kept')\nimport json\nresult = 1"})
	if err != nil || first.RuntimeID == "" {
		t.Fatalf("%+v %v", first, err)
	}
	again, err := r.run(t, map[string]any{"runtime_id": first.RuntimeID, "code": "result = [n + 1, open('/work/f.txt').read(), json.dumps([1])]"})
	if err != nil || string(again.Result) != `[42,"kept","[1]"]` {
		t.Fatalf("%+v %v", again, err)
	}
	// result is cleared before each turn.
	again, _ = r.run(t, map[string]any{"runtime_id": first.RuntimeID, "code": "x = 1"})
	if string(again.Result) != "null" {
		t.Fatalf("previous result leaked: %s", again.Result)
	}
	// lang node on a python runtime is refused.
	if _, err := r.run(t, map[string]any{"runtime_id": first.RuntimeID, "lang": "node", "code": "x"}); err == nil || err.Code != core.CodeInvalidRequest {
		t.Fatalf("%v", err)
	}
	// A timeout kills only the interpreter: /work survives, globals do not.
	if _, err := r.run(t, map[string]any{"runtime_id": first.RuntimeID, "code": "while True: pass", "timeout_ms": 500}); err == nil || err.Code != core.CodeTimeout {
		t.Fatalf("%v", err)
	}
	after, err := r.run(t, map[string]any{"runtime_id": first.RuntimeID, "code": "result = [open('/work/f.txt').read(), 'n' in globals()]"})
	if err != nil || string(after.Result) != `["kept",false]` {
		t.Fatalf("%+v %v", after, err)
	}
	// D12: one-shot runs get a private /work.
	r.mustRun(t, "open('/work/x', 'w').write('one')")
	res := r.mustRun(t, "import os\nresult = os.listdir('/work')")
	if string(res.Result) != "[]" {
		t.Fatalf("a one-shot /work leaked: %s", res.Result)
	}
}

func TestPythonWorkCannotBeEscaped(t *testing.T) {
	r := newRig(t, nil)
	secret := filepath.Join(t.TempDir(), "secret.txt")
	_ = os.WriteFile(secret, []byte("host secret"), 0o600)
	code := fmt.Sprintf(`
import os
out = {}
def attempt(name, f):
    try:
        out[name] = repr(f())
    except BaseException as e:
        out[name] = type(e).__name__
attempt('symlink_rel', lambda: os.symlink('../../../../../../..%[1]s', '/work/l1'))
attempt('symlink_abs', lambda: os.symlink('%[1]s', '/work/l2'))
attempt('hardlink', lambda: os.link('/work/a', '/work/b'))
open('/work/a', 'w').write('a')
attempt('hardlink_existing', lambda: os.link('/work/a', '/work/c'))
attempt('dotdot', lambda: open('/work/../../../../..%[1]s').read())
attempt('absolute', lambda: open('%[1]s').read())
attempt('passwd', lambda: open('/etc/passwd').read())
attempt('listdir_root', lambda: os.listdir('/'))
attempt('system', lambda: os.system('id'))
attempt('subprocess', lambda: __import__('subprocess').run(['id']))
attempt('socket', lambda: __import__('socket').create_connection(('127.0.0.1', 22)))
result = out
`, secret)
	res := r.mustRun(t, code)
	if strings.Contains(string(res.Result), "host secret") || strings.Contains(string(res.Result), "root:") {
		t.Fatalf("escaped: %s", res.Result)
	}
	var out map[string]string
	_ = json.Unmarshal(res.Result, &out)
	for _, k := range []string{"symlink_rel", "symlink_abs", "hardlink_existing", "dotdot", "absolute", "passwd"} {
		if !strings.HasSuffix(out[k], "Error") {
			t.Fatalf("%s: %q (all: %v)", k, out[k], out)
		}
	}
	if strings.Contains(out["listdir_root"], "etc") || strings.Contains(out["system"], "uid=") {
		t.Fatalf("%v", out)
	}
}

func TestPythonBridge(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, `
echo = iii.trigger({'function_id': 'test::echo', 'payload': {'x': 1}})
none = iii.trigger({'function_id': 'test::echo'})
nested = iii.trigger({'function_id': 'code-runner::run', 'payload': {'lang': 'python', 'code': 'result = 40 + 2'}})
errs = []
for req in ['x', {}, {'function_id': 'a::b', 'timeout_ms': 'x'}, {'function_id': 'a::b', 'timeout': []}, {'function_id': 'nope::x'}, {'function_id': 'harness::state::get'}, {'function_id': 'a::b', 'payload': float('nan')}]:
    try:
        iii.trigger(req)
        errs.append('ok')
    except Exception as e:
        errs.append(type(e).__name__ + ': ' + str(e))
result = [echo, none, nested['result'], errs]`)
	var got []json.RawMessage
	_ = json.Unmarshal(res.Result, &got)
	if string(got[0]) != `{"x":1}` || string(got[1]) != "null" || string(got[2]) != "42" {
		t.Fatalf("%s", res.Result)
	}
	var errs []string
	_ = json.Unmarshal(got[3], &errs)
	want := []string{
		"TypeError: iii.trigger: request must be a dict",
		"TypeError: iii.trigger: function_id must be a non-empty string",
		"TypeError: iii.trigger: timeout_ms must be a number when given",
		"TypeError: iii.trigger: timeout must be a number when given",
		"RuntimeError: iii.trigger: function_not_found: Function nope::x not found",
		"RuntimeError: iii.trigger: operator-only function `harness::state::get` is not available through code-runner",
		"ValueError: Out of range float values are not JSON compliant", // CPython 3.11's text (3.12 appends ": nan")
	}
	if strings.Join(errs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(errs, "\n"), strings.Join(want, "\n"))
	}
	// D10: the guest timeout is clamped to the run's remaining budget.
	res, err := r.run(t, map[string]any{"timeout_ms": 1000, "code": "try:\n    iii.trigger({'function_id': 'test::never', 'timeout_ms': 30000})\nexcept RuntimeError as e:\n    result = str(e)"})
	if err != nil || !strings.Contains(string(res.Result), "TIMEOUT: invocation timed out after") {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestPythonAttacks(t *testing.T) {
	// 20,000 file creations take long under the race detector.
	r := newRig(t, func(c *configsvc.Config) { c.MaxRuntimes = 8; c.MaxTimeoutMS = 180000 })
	pid := os.Getpid()
	trivial := func() {
		t.Helper()
		if os.Getpid() != pid {
			t.Fatal("pid changed")
		}
		if res := r.mustRun(t, "result = 1"); string(res.Result) != "1" {
			t.Fatalf("%+v", res)
		}
	}
	t.Run("busy loop times out and others proceed meanwhile", func(t *testing.T) {
		done := make(chan *core.Error, 1)
		go func() {
			_, err := r.run(t, map[string]any{"code": "while True: pass", "timeout_ms": 1500})
			done <- err
		}()
		time.Sleep(200 * time.Millisecond)
		trivial() // the spinning guest does not freeze the worker
		if err := <-done; err == nil || err.Code != core.CodeTimeout {
			t.Fatalf("%v", err)
		}
		trivial()
	})
	t.Run("bytearray(1<<30)", func(t *testing.T) {
		_, err := r.run(t, map[string]any{"code": "b = bytearray(1 << 30)"})
		if err == nil || err.Error() != "code-runner::resource_exhausted: run exceeded its memory cap of 128 MiB and was killed (a run that creates a runtime may ask for up to 512 MiB with memory_mb)" {
			t.Fatalf("%v", err)
		}
		trivial()
	})
	t.Run("list growth to the cap with memory_mb 64", func(t *testing.T) {
		_, err := r.run(t, map[string]any{"code": "a = []\nwhile True: a.append('x' * 1000000)", "memory_mb": 64, "timeout_ms": 20000})
		if err == nil || err.Code != core.CodeResourceExhausted {
			t.Fatalf("%v", err)
		}
		trivial()
	})
	t.Run("unbounded recursion", func(t *testing.T) {
		res := r.mustRun(t, "def f(): return f()\nf()")
		if res.ExitCode != 1 || !strings.Contains(res.Stderr, "RecursionError") && !strings.Contains(res.Stderr, "abnormally") {
			t.Fatalf("%+v", res.Stderr)
		}
		trivial()
	})
	t.Run("50 MB of prints", func(t *testing.T) {
		res, err := r.run(t, map[string]any{"code": "line = 'p' * 1000\nfor i in range(50000): print(line)\nresult = 'done'", "timeout_ms": 60000})
		if err != nil || string(res.Result) != `"done"` || !strings.Contains(res.Stderr, "[code-runner] output was truncated; further output is dropped") || len(res.Stdout) > 16384 {
			t.Fatalf("%v %d %q", err, len(res.Stdout), res.Stderr)
		}
		trivial()
	})
	t.Run("filling /work past its budget", func(t *testing.T) {
		kept, _ := r.run(t, map[string]any{"keep": true, "code": "result = 1"})
		_, err := r.run(t, map[string]any{"runtime_id": kept.RuntimeID, "timeout_ms": 180000, "code": "i = 0\nwhile True:\n    open('/work/f%d' % i, 'w').close()\n    i += 1"})
		if err == nil || err.Error() != "code-runner::resource_exhausted: run wrote more than 268435456 bytes (or more than 20000 files) under /work and was killed" {
			t.Fatalf("%v", err)
		}
		if _, err := r.run(t, map[string]any{"runtime_id": kept.RuntimeID, "code": "result = 1"}); err == nil || err.Code != core.CodeExpired {
			t.Fatalf("R4: %v", err)
		}
		trivial()
	})
	t.Run("100 concurrent one-shot runs with max_runtimes 8", func(t *testing.T) {
		var wg sync.WaitGroup
		var ok, capacity atomic.Int64
		for i := 0; i < 100; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := r.run(t, map[string]any{"code": "result = 1"})
				switch {
				case err == nil && string(res.Result) == "1":
					ok.Add(1)
				case err != nil && err.Code == core.CodeCapacity:
					capacity.Add(1)
				default:
					t.Errorf("%+v %v", res, err)
				}
			}()
		}
		wg.Wait()
		if ok.Load() == 0 || r.reg.SlotsInUse() != 0 {
			t.Fatalf("ok %d capacity %d slots %d", ok.Load(), capacity.Load(), r.reg.SlotsInUse())
		}
	})
}

func TestPythonRegisterFunction(t *testing.T) {
	r := newRig(t, nil)
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-py::count", "lang": "python",
		"source": "import itertools\n_c = itertools.count(1)\ndef handler(p):\n    return {'n': next(_c), 'ns': iii.namespace, 'p': p}"}); err != nil {
		t.Fatal(err)
	}
	a, _ := r.bus.Invoke(t, "e2e-py::count", `{"x":1}`)
	b, _ := r.bus.Invoke(t, "e2e-py::count", `{"x":2}`)
	if string(a) != `{"n":1,"ns":"e2e-py::","p":{"x":1}}` || string(b) != `{"n":2,"ns":"e2e-py::","p":{"x":2}}` {
		t.Fatalf("%s %s", a, b)
	}
	if d := r.bus.Registration("e2e-py::count").Description; d != "Registered through code-runner::register_function; implemented in Python." {
		t.Fatal(d)
	}
	// No handler → invalid_request mentioning handler(payload); nothing left behind.
	_, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-bad::f", "lang": "python", "source": "x = 1"})
	if err == nil || err.Code != core.CodeInvalidRequest || !strings.Contains(err.Text, "TypeError: register_function: your source must define handler(payload) — a callable taking one argument. Found: None") {
		t.Fatalf("%v", err)
	}
	if _, err := r.call(t, core.FnTeardown, map[string]any{"namespace": "e2e-bad"}); err == nil || err.Code != core.CodeRuntimeNotFound {
		t.Fatalf("%v", err)
	}
	// D4: a raising handler → handler_error with the guest's text.
	_, _ = r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-py::boom", "lang": "python", "source": "def handler(p):\n    raise KeyError('k')"})
	_, ierr := r.bus.Invoke(t, "e2e-py::boom", `{}`)
	if ierr == nil || !strings.HasPrefix(ierr.Error(), "code-runner::handler_error: KeyError: 'k'\nTraceback") {
		t.Fatalf("%v", ierr)
	}
	// D7: an invocation that overruns → timeout; the next succeeds (restored, state restarted).
	r.setDefaultTimeout(800)
	_, _ = r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-py::slow", "lang": "python", "source": "def handler(p):\n    if p.get('spin'):\n        while True: pass\n    return 'fine'"})
	if _, err := r.bus.Invoke(t, "e2e-py::slow", `{"spin":true}`); err == nil || !strings.Contains(err.Error(), "code-runner::timeout") {
		t.Fatalf("%v", err)
	}
	if v, err := r.bus.Invoke(t, "e2e-py::slow", `{}`); err != nil || string(v) != `"fine"` {
		t.Fatalf("%s %v", v, err)
	}
	if v, err := r.bus.Invoke(t, "e2e-py::count", `{}`); err != nil || !strings.HasPrefix(string(v), `{"n":1,`) {
		t.Fatalf("state did not restart with the replay: %s %v", v, err)
	}
	r.setDefaultTimeout(5000)
	// The same interpreter cannot call its own function from inside a turn.
	_, _ = r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-py::self", "lang": "python", "source": "def handler(p):\n    try:\n        return iii.trigger({'function_id': 'e2e-py::count'})\n    except RuntimeError as e:\n        return str(e)"})
	if v, _ := r.bus.Invoke(t, "e2e-py::self", `{}`); string(v) != `"iii.trigger: e2e-py::count is served by this same interpreter and cannot be called from inside a turn"` {
		t.Fatalf("%s", v)
	}
	// One id, one engine; teardown by namespace.
	out, err := r.call(t, core.FnTeardown, map[string]any{"namespace": "e2e-py::"})
	if err != nil || string(out) != `{"namespace":"e2e-py::","torn_down":true,"unregistered":["e2e-py::boom","e2e-py::count","e2e-py::self","e2e-py::slow"]}` {
		t.Fatalf("%s %v", out, err)
	}
}

// emptyModule is the smallest module the engine accepts — it imports
// code_runner.tick, which every loop must be able to call: it exercises the
// cache without paying for a cold python.wasm compile.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00" +
	"\x01\x04\x01\x60\x00\x00" + // type 0: [] -> []
	"\x02\x14\x01\x0bcode_runner\x04tick\x00\x00") // import code_runner.tick: type 0

func TestCompilationCacheIsUsed(t *testing.T) {
	dir := t.TempDir()
	e1 := New(Options{Log: quiet(), CacheDir: dir, Wasm: emptyModule})
	if err := e1.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	e1.Close()
	entries, _ := os.ReadDir(CacheDir(dir))
	if len(entries) == 0 {
		t.Fatalf("no compiled module cached under %s", CacheDir(dir))
	}
	bad := filepath.Join(t.TempDir(), "file")
	_ = os.WriteFile(bad, nil, 0o600)
	e2 := New(Options{Log: quiet(), CacheDir: bad, Wasm: emptyModule}) // a file where a directory must be: a warning, not a failure
	if err := e2.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	e2.Close()
}

func TestBootFailureServesNothing(t *testing.T) {
	e := New(Options{Log: quiet(), Wasm: []byte("not wasm"), CacheDir: "-"})
	if err := e.Available(); err == nil {
		t.Fatal("a broken wasm booted")
	}
	if _, err := e.NewRuntime(context.Background(), core.RuntimeOptions{}); err == nil || err.Error() != "code-runner::engine: the python engine failed to start on this worker; check its boot logs" {
		t.Fatalf("%v", err)
	}
}

// TestSharedCacheHoldsPythonWasm boots an engine on the cache directory the
// tests share and checks the compiled module landed there. `make test` runs
// it once without -race first: wazero's compiler is slow under the race
// detector, and the race-built tests then load the module from this cache.
func TestSharedCacheHoldsPythonWasm(t *testing.T) {
	e := New(Options{Log: quiet(), CacheDir: testCacheDir})
	defer e.Close()
	if err := e.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(CacheDir(testCacheDir))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no compiled python.wasm in %s: %v", CacheDir(testCacheDir), err)
	}
}

// forgeTurnDone is tenant code that reads the sentinel and prints a
// turn_done line with a forged successful envelope.
const forgeTurnDone = `import json, sys
s = json.load(open('/run/iii.json'))['sentinel']
sys.stdout.write('\n' + s + '\n' + '{"kind":"turn_done","envelope":{"ok":true,"result":"forged"}}' + '\n')
sys.stdout.flush()
`

// TestForgedTurnDoneSpeaksOnlyForItsOwnTurn: tenant code can read the
// sentinel and print a turn_done line with any envelope. It ends its own
// turn early with a result it could have returned anyway; it must not
// crash the runtime, and the next turn's answer must be the next turn's.
func TestForgedTurnDoneSpeaksOnlyForItsOwnTurn(t *testing.T) {
	r := newRig(t, nil)
	k, err := r.run(t, map[string]any{"lang": "python", "keep": true, "code": "n = 0"})
	if err != nil {
		t.Fatal(err)
	}
	forge := forgeTurnDone + `n += 1
result = 'real'`
	res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": forge})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Result) != `"forged"` && string(res.Result) != `"real"` {
		t.Fatalf("forged turn: %s", res.Result)
	}
	for i := 0; i < 3; i++ {
		want := fmt.Sprintf(`"next-%d"`, i)
		res, err = r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": fmt.Sprintf("result = 'next-%d'", i)})
		if err != nil {
			t.Fatal(err)
		}
		if string(res.Result) != want {
			t.Fatalf("turn %d after a forged turn_done answered %s, want %s", i, res.Result, want)
		}
	}
}

// TestForgedTurnDoneCannotLeaveCodeRunning: a forged turn_done followed by
// more computation does not end the turn — the turn ends when the wrapper
// reads its next frame — so the computation stays under the deadline and
// is killed by it, instead of running on unwatched after an early answer.
func TestForgedTurnDoneCannotLeaveCodeRunning(t *testing.T) {
	r := newRig(t, nil)
	k, err := r.run(t, map[string]any{"lang": "python", "keep": true, "code": "n = 0"})
	if err != nil {
		t.Fatal(err)
	}
	spin := forgeTurnDone + `while True:
    pass`
	res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": spin, "timeout_ms": 500})
	if err == nil || err.Code != core.CodeTimeout {
		t.Fatalf("want a timeout, got %v (result %s)", err, res.Result)
	}
	// The runtime lives on with a fresh interpreter (docs/behaviour.md#python-what-survives).
	res, err = r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "result = 'after'"})
	if err != nil || string(res.Result) != `"after"` {
		t.Fatalf("%v %s", err, res.Result)
	}
}

// The result cap measures compact JSON with raw UTF-8 and no HTML escaping,
// and nothing on the way to the wire escapes <, >, &, U+2028 or U+2029.
func TestResultCapMeasuresUnescapedJSON(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range enginetest.CapCases {
		t.Run(tc.Name, func(t *testing.T) {
			unit, _ := json.Marshal(tc.Unit)
			code := fmt.Sprintf("print(%s)\nresult = %s * %d", unit, unit, tc.N)
			out, err := r.call(t, core.FnRun, map[string]any{"lang": "python", "code": code})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(out), `"stdout":"`+tc.Unit+`\n"`) {
				t.Fatalf("stdout escaped on the wire: %.200s", out)
			}
			var res resp
			_ = json.Unmarshal(out, &res)
			if tc.Capped == "" {
				if !strings.Contains(string(out), `"result":"`+strings.Repeat(tc.Unit, tc.N)+`"`) {
					t.Fatalf("result changed or escaped: %.200s", res.Result)
				}
				return
			}
			if !strings.Contains(string(res.Result), "<omitted: result was "+tc.Capped+";") {
				t.Fatalf("marker %s", res.Result)
			}
		})
	}
}

// TestUnavailableIsTheContractsText: while the engine cannot serve, a
// python request is answered with the contract's words, whatever the boot
// error was (that goes to the logs).
func TestUnavailableIsTheContractsText(t *testing.T) {
	got := (&Engine{}).Unavailable(errors.New("no wasm")).Error()
	if want := "code-runner::engine: the python engine failed to start on this worker; check its boot logs"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestAsyncioRunsOnWasi: asyncio's own loop needs a socket pair WASI does
// not have; the sandbox's loop sleeps between timers through the host. A
// program using gather, a bounded Queue, wait_for timing out and a
// TaskGroup gives CPython's answers, its sleeps really sleep, and nothing
// of asyncio is imported before the guest asks for it.
func TestAsyncioRunsOnWasi(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, `import sys
before = 'asyncio' in sys.modules
import asyncio, time
log = []
async def worker(name, delay):
    await asyncio.sleep(delay)
    log.append(name)
    return name.upper()
async def producer(q, n):
    for i in range(n):
        await q.put(i)
    await q.put(None)
async def consumer(q):
    total = 0
    while (item := await q.get()) is not None:
        total += item
    return total
async def main():
    t0 = time.monotonic()
    gathered = await asyncio.gather(worker('c', 0.03), worker('a', 0.01), worker('b', 0.02))
    q = asyncio.Queue(maxsize=2)
    _, total = await asyncio.gather(producer(q, 10), consumer(q))
    try:
        await asyncio.wait_for(asyncio.sleep(10), timeout=0.05)
        timed_out = False
    except asyncio.TimeoutError:
        timed_out = True
    async with asyncio.TaskGroup() as tg:
        t1 = tg.create_task(worker('x', 0.01))
        t2 = tg.create_task(worker('y', 0))
    return {'gathered': gathered, 'order': list(log), 'total': total, 'timed_out': timed_out,
            'group': [t1.result(), t2.result()], 'slept': time.monotonic() - t0 >= 0.09}
result = asyncio.run(main())
result['imported_before'] = before
result['again'] = asyncio.run(worker('z', 0))
`)
	want := `{"gathered":["C","A","B"],"order":["a","b","c","y","x"],"total":45,"timed_out":true,"group":["X","Y"],"slept":true,"imported_before":false,"again":"Z"}`
	if !res.Success || string(res.Result) != want {
		t.Fatalf("result %s, want %s\nstderr %s", res.Result, want, res.Stderr)
	}
}

// TestAsyncioCannotOutliveItsDeadline: a task spinning forever, a sleep
// past the deadline and a future nobody sets all end at the run's deadline
// as the timeout kill, and the next run is served.
func TestAsyncioCannotOutliveItsDeadline(t *testing.T) {
	r := newRig(t, nil)
	for name, code := range map[string]string{
		"spin":   "import asyncio\nasync def spin():\n    while True:\n        pass\nasyncio.run(spin())",
		"sleep":  "import asyncio\nasyncio.run(asyncio.sleep(60))",
		"future": "import asyncio\nasync def wait():\n    await asyncio.get_running_loop().create_future()\nasyncio.run(wait())",
	} {
		_, err := r.run(t, map[string]any{"code": code, "timeout_ms": 300})
		if err == nil || err.Code != core.CodeTimeout {
			t.Fatalf("%s: %v, want the timeout kill", name, err)
		}
	}
	if res := r.mustRun(t, "import asyncio\nresult = asyncio.run(asyncio.sleep(0, 'after'))"); string(res.Result) != `"after"` {
		t.Fatalf("the run after the kills: %s", res.Result)
	}
}

// TestSleepLengthsAreCPythons: time.sleep refuses what CPython 3.11
// refuses, with its words, and a length CPython accepts but no run lasts
// sleeps until the kill instead of returning at once (a huge float once
// overflowed into a negative duration on the host).
func TestSleepLengthsAreCPythons(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, `import time
out = []
for v in (float('nan'), float('inf'), 1e10, 10**10, float('-inf'), -1):
    try:
        time.sleep(v)
        out.append('slept')
    except Exception as e:
        out.append(type(e).__name__ + ': ' + str(e))
result = out`)
	want := `["ValueError: Invalid value NaN (not a number)","OverflowError: timestamp out of range for platform time_t","OverflowError: timestamp out of range for platform time_t","OverflowError: timestamp too large to convert to C _PyTime_t","OverflowError: timestamp out of range for platform time_t","ValueError: sleep length must be non-negative"]`
	if string(res.Result) != want {
		t.Fatalf("result %s, want %s", res.Result, want)
	}
	for _, v := range []string{"1e9", "9223372036"} {
		if _, err := r.run(t, map[string]any{"code": "import time\ntime.sleep(" + v + ")", "timeout_ms": 300}); err == nil || err.Code != core.CodeTimeout {
			t.Fatalf("sleep(%s): %v, want the timeout kill", v, err)
		}
	}
}
