package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/engines/python/pywasm"
)

// What one tenant does to the descriptor table of a pooled interpreter
// never reaches the next: closing the standard library's preopen, closing
// stderr and opening a read-only file into its number, or leaving hundreds
// of files open. The next tenant imports, writes stderr, and gets the
// lowest free descriptor (10, after stdio and the seven preopens).
func TestResetRestoresTheDescriptorTable(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	check := "import fractions, os, sys\nsys.stderr.write('e'); sys.stderr.flush()\nfd = os.open('/run/main.py', os.O_RDONLY)\nos.close(fd)\nresult = fd"
	for _, dirty := range []string{
		"import os\nos.close(4)\nresult = 1",
		"import os\nos.close(2)\nos.open('/run/iii.json', os.O_RDONLY)\nresult = 1",
		"import os\nfds = [os.open('/run/main.py', os.O_RDONLY) for _ in range(500)]\nresult = len(fds)",
		"import os\nopen('/work/a', 'w').write('x')\nfds = [os.open('/work/a', os.O_RDONLY) for _ in range(50)]\nresult = 1",
	} {
		waitPooled(t, r)
		if res := r.mustRun(t, dirty); !res.Success {
			t.Fatalf("%q: %+v", dirty, res)
		}
		r.eng.bg.Wait()
		waitPooled(t, r)
		res := r.mustRun(t, check)
		if !res.Success || res.Stderr != "e" || string(res.Result) != "10" {
			t.Fatalf("after %q the next tenant got %s, stderr %q", dirty, res.Result, res.Stderr)
		}
		r.eng.bg.Wait()
	}
}

// Files left open are closed by the reset, and the interpreter is still
// recycled (not booted anew): the table goes back to the snapshot's.
func TestFilesLeftOpenDoNotCostARecycle(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitPooled(t, r)
	r.mustRun(t, "result = 1")
	r.eng.bg.Wait()
	waitPooled(t, r)
	booted := interpSeq.Load()
	for i := 0; i < 3; i++ {
		r.mustRun(t, "import os\nfds = [os.open('/run/main.py', os.O_RDONLY) for _ in range(100)]\nresult = 1")
		r.eng.bg.Wait()
		waitPooled(t, r)
	}
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters booted; files left open should be closed by the reset, not cost the interpreter", n)
	}
}

// One interpreter holds at most maxOpenFiles files open at once; past that
// an open fails (and nothing else does), and closing gives the room back.
func TestOpenFilesAreCappedPerInterpreter(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, fmt.Sprintf(`import os
fds = []
err = None
try:
    for _ in range(%d):
        fds.append(os.open('/run/main.py', os.O_RDONLY))
except OSError as e:
    err = type(e).__name__
n = len(fds)
for fd in fds:
    os.close(fd)
again = os.open('/run/main.py', os.O_RDONLY)
os.close(again)
result = [n, err, again]`, 3*maxOpenFiles))
	var got []any
	_ = json.Unmarshal(res.Result, &got)
	if len(got) != 3 || got[1] != "BlockingIOError" || got[0].(float64) >= maxOpenFiles || got[0].(float64) < maxOpenFiles-16 || got[2].(float64) != 10 {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
}

// The reset reads wazero's descriptor table by reflection: this pins where
// it is. Should a wazero upgrade move it, this fails (and interpreters are
// no longer recycled, which is safe).
func TestDescriptorTableIsReadable(t *testing.T) {
	ip := bootSnapshotted(t)
	var names []string
	for _, e := range ip.fds {
		names = append(names, e.name)
	}
	want := []string{"stdin", "stdout", "stderr", "/run", pywasm.StdlibDir, pywasm.SitePackagesDir, pywasm.ZoneinfoDir, pywasm.DocDir, "/out", "/work"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("the snapshot's table is %q, want %q", names, want)
	}
}

// A preopened directory read with fd_readdir keeps what it read in
// wazero's listing cache, which a reset cannot clear: the next tenant's read
// with a cookie would get the last one's names. CPython never does that
// (it lists through a descriptor of its own), so the test makes the cache
// as fd_readdir would, and the reset must refuse the interpreter.
func TestAResetRefusesAPreopenThatWasListed(t *testing.T) {
	ip := bootSnapshotted(t)
	if err := ip.reset(context.Background(), -1); err != nil {
		t.Fatalf("a reset with nothing listed: %v", err)
	}
	work := ip.fds[len(ip.fds)-1]
	if work.name != "/work" {
		t.Fatalf("the last snapshotted descriptor is %q, want /work", work.name)
	}
	entry := reflect.NewAt(ip.fdView.items.Type().Elem().Elem(), work.entry) // *FileEntry, callable
	out := entry.MethodByName("DirentCache").Call(nil)
	if errno := out[1].Uint(); errno != 0 || out[0].IsNil() {
		t.Fatalf("fd_readdir's cache for /work: errno %d", errno)
	}
	if err := ip.reset(context.Background(), -1); err == nil || !strings.Contains(err.Error(), "was listed") {
		t.Fatalf("a reset after /work's preopen was listed: %v, want a refusal", err)
	}
}

// After a kill, every host call the guest reaches ends the instance at
// once instead of doing its work: stdout, stderr, its files, clocks and
// randomness.
func TestHostCallsEndTheInstanceAfterAKill(t *testing.T) {
	killed := make(chan struct{})
	close(killed)
	g := &hostGate{killed: killed}
	events := make(chan []byte, 1)
	dir := t.TempDir()
	fsys := &limitedFS{FS: newGuardedFS(newBudget(dir, "/work", 1<<20, 10), &openFiles{}), limit: &fileLimit{max: 8}, worker: &fileLimit{max: 8}, gate: &hostGate{killed: make(chan struct{})}}
	f, errno := fsys.OpenFile("f", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	if errno != 0 {
		t.Fatal(errno)
	}
	fsys.gate = g // the kill comes after the open
	for name, call := range map[string]func(){
		"stdout": func() { _, _ = newStdoutScanner("s", events, g).Write([]byte("x")) },
		"stderr": func() { _, _ = (&stderrWriter{gate: g}).Write([]byte("x")) },
		"write":  func() { _, _ = f.Write([]byte("x")) },
		"pwrite": func() { _, _ = f.Pwrite([]byte("x"), 0) },
		"read":   func() { _, _ = f.Read(make([]byte, 1)) },
		"open": func() {
			_, _ = (&limitedFS{FS: fsys.FS, limit: &fileLimit{}, gate: g}).OpenFile("f", experimentalsys.O_RDONLY, 0)
		},
		"walltime": func() { g.walltime() },
		"random":   func() { _, _ = gatedReader{g: g, r: strings.NewReader("xx")}.Read(make([]byte, 2)) },
	} {
		func() {
			defer func() {
				var ee *sys.ExitError
				if p := recover(); p == nil || !errors.As(p.(error), &ee) {
					t.Errorf("%s after a kill: %v, want the instance ended", name, p)
				}
			}()
			call()
		}()
	}
	_ = f.Close()
}

// All interpreters together hold at most the worker's share of
// descriptors: an open past it fails although the interpreter's own limit
// has room, and a close gives the slot back.
func TestOpenFilesAreCappedWorkerWide(t *testing.T) {
	worker := &fileLimit{max: 3}
	mount := func() *limitedFS {
		return &limitedFS{FS: newGuardedFS(newBudget(t.TempDir(), "/work", 1<<20, 10), &openFiles{}), limit: &fileLimit{max: maxOpenFiles}, worker: worker, gate: &hostGate{killed: make(chan struct{})}}
	}
	a, b := mount(), mount()
	var open []experimentalsys.File
	for i, m := range []*limitedFS{a, b, a} {
		f, errno := m.OpenFile(fmt.Sprint(i), experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
		if errno != 0 {
			t.Fatalf("open %d: %v", i, errno)
		}
		open = append(open, f)
	}
	if _, errno := b.OpenFile("x", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600); errno != experimentalsys.EAGAIN {
		t.Fatalf("an open past the worker's share: %v, want EAGAIN", errno)
	}
	if b.limit.n.Load() != 1 {
		t.Fatalf("a refused open stayed counted against its interpreter: %d", b.limit.n.Load())
	}
	_ = open[0].Close()
	_ = open[0].Close() // a second close gives nothing back twice
	if f, errno := b.OpenFile("x", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600); errno != 0 {
		t.Fatalf("after a close: %v", errno)
	} else {
		_ = f.Close()
	}
	if worker.n.Load() != 2 {
		t.Fatalf("the worker counts %d open files, want 2", worker.n.Load())
	}
}

// A write of any size to stdout costs the worker at most a piece of it,
// not a copy of the whole: 96 MiB written eight times allocate far less
// than one copy.
func TestStdoutWritesCostNoCopyOfTheWrite(t *testing.T) {
	s := newStdoutScanner("00000000-0000-0000-0000-000000000000", make(chan []byte, 1), &hostGate{killed: make(chan struct{})})
	var c capture
	s.setCapture(&c)
	b := make([]byte, 96<<20)
	for i := range b {
		b[i] = 'x'
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 8; i++ {
		if n, err := s.Write(b); n != len(b) || err != nil {
			t.Fatal(n, err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("writing 8 × 96 MiB allocated %d MiB", grew>>20)
	}
	if c.buf.Len() != streamMaxBytes || c.dropped != 8*int64(len(b))-streamMaxBytes {
		t.Fatalf("captured %d, dropped %d", c.buf.Len(), c.dropped)
	}
}

// A guest that writes huge buffers to stdout in a loop past its deadline is
// killed as a timeout, and the worker's heap does not grow by the writes.
func TestAStdoutFloodIsKilledWithoutWorkerMemory(t *testing.T) {
	r := newRig(t, nil)
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := r.run(t, map[string]any{"timeout_ms": 1000, "memory_mb": 256, "code": "import os\nb = b'x' * (96 << 20)\nwhile True: os.write(1, b)"})
	runtime.ReadMemStats(&after)
	if err == nil || err.Code != "code-runner::timeout" {
		t.Fatalf("%v", err)
	}
	// One 96 MiB copy per write was the old cost: a second's worth of
	// writes allocated gigabytes.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<20 {
		t.Fatalf("the flood allocated %d MiB in the worker", grew>>20)
	}
}

// An overwrite in place grows nothing and is admitted however large the
// file; only growth past the end counts against /work's budget.
func TestAnOverwriteInPlaceIsNotGrowth(t *testing.T) {
	dir := t.TempDir()
	b := newBudget(dir, "/work", 10<<20, 10)
	b.reset()
	fsys := newGuardedFS(b, &openFiles{})
	f, errno := fsys.OpenFile("big", experimentalsys.O_CREAT|experimentalsys.O_RDWR, 0o600)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer f.Close()
	if _, errno := f.Write(make([]byte, 9<<20)); errno != 0 {
		t.Fatal(errno)
	}
	chunk := make([]byte, 8<<20)
	for i := 0; i < 4; i++ {
		if _, errno := f.Seek(0, io.SeekStart); errno != 0 {
			t.Fatal(errno)
		}
		if n, errno := f.Write(chunk); errno != 0 || n != len(chunk) {
			t.Fatalf("overwrite %d: %d %v", i, n, errno)
		}
		if n, errno := f.Pwrite(chunk, 1<<20); errno != 0 || n != len(chunk) {
			t.Fatalf("pwrite in place %d: %d %v", i, n, errno)
		}
	}
	if b.over {
		t.Fatal("overwrites in place marked the budget over")
	}
	if _, errno := f.Seek(0, io.SeekEnd); errno != 0 {
		t.Fatal(errno)
	}
	if !endsTheInstance(func() { _, _ = f.Write(make([]byte, 2<<20)) }) {
		t.Fatal("growing past the budget did not end the instance")
	}
	// An appending file grows by every byte it writes.
	fsys = newGuardedFS(newBudget(t.TempDir(), "/work", 1<<20, 10), &openFiles{})
	a, errno := fsys.OpenFile("log", experimentalsys.O_CREAT|experimentalsys.O_RDWR|experimentalsys.O_APPEND, 0o600)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer a.Close()
	if !endsTheInstance(func() { _, _ = a.Write(make([]byte, 2<<20)) }) {
		t.Fatal("an append past the budget did not end the instance")
	}
}

// Permits bound computation, not waiting: a chain of nested python runs
// deeper than the permits (each turn waits in iii.trigger for the next)
// completes, where it once waited for itself until its deadline.
func TestWaitingTurnsHoldNoPermit(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.MaxRuntimes = 32; c.MaxTimeoutMS = 120000 })
	// Each level's code is the template with its depth: it runs the next
	// level, one shallower, and adds one to its result.
	depth := maxExecuting + 2
	body := `result = 0
if D > 0:
    r = iii.trigger({"function_id": "code-runner::run", "timeout_ms": 100000, "payload": {"lang": "python", "timeout_ms": 100000 - 2000 * (20 - D), "code": "D = %d\nT = %r\n" % (D - 1, T) + T}})
    if not r["success"]:
        raise RuntimeError(str(D) + ": " + r["stderr"][-1500:])
    result = r["result"] + 1`
	lit, _ := json.Marshal(body)
	code := fmt.Sprintf("D = %d\nT = %s\n%s", depth, lit, body)
	res, err := r.run(t, map[string]any{"code": code, "timeout_ms": 110000})
	if err != nil || !res.Success || string(res.Result) != fmt.Sprint(depth) {
		t.Fatalf("%+v %v", res, err)
	}
}

// Every tenant of a recycled interpreter draws its own random seeds (the
// random module is imported after the snapshot, seeded from the host).
func TestRecycledTenantsDrawTheirOwnSeeds(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		waitPooled(t, r)
		res := r.mustRun(t, "import random, uuid, os\nresult = [random.random(), str(uuid.uuid4()), os.urandom(8).hex()]")
		if seen[string(res.Result)] {
			t.Fatalf("tenant %d drew what an earlier one drew: %s", i, res.Result)
		}
		seen[string(res.Result)] = true
		r.eng.bg.Wait()
	}
}

// A kept runtime's /work is emptied before teardown answers, whether its
// interpreter then goes back to the pool (reset) or is disposed of with
// the directory: the moment the caller has its answer, no file of the
// tenant is left.
func TestWorkIsEmptiedBeforeTeardownAnswers(t *testing.T) {
	for _, pool := range []int64{0, 1} {
		r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = pool })
		if err := r.eng.WaitReady(context.Background()); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			k, err := r.run(t, map[string]any{"keep": true, "code": "import os\nos.mkdir('/work/d')\nfor n in range(50):\n    open('/work/d/f%d' % n, 'w').write('tenant')\nresult = 1"})
			if err != nil || k.RuntimeID == "" {
				t.Fatalf("%+v %v", k, err)
			}
			kept, _ := r.reg.Lookup(k.RuntimeID)
			dir := kept.Runtime.(*pyRuntime).workDir
			if _, err := r.call(t, "code-runner::teardown", map[string]any{"runtime_id": k.RuntimeID}); err != nil {
				t.Fatal(err)
			}
			if entries, err := os.ReadDir(dir); err == nil && len(entries) != 0 {
				t.Fatalf("pool %d: /work still holds %d entries when teardown answered", pool, len(entries))
			}
			r.eng.bg.Wait()
		}
	}
}

// A namespace torn down while one of its handlers waits in time.sleep —
// blocked on stdin, but inside its turn — is not reset under that turn and
// handed to the pool: its interpreter is stopped, the waiting call ends,
// and the next one-shot is served, pristine, by another interpreter.
func TestATeardownDuringAWaitingTurnNeverRecyclesItsInterpreter(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.call(t, "code-runner::register_function", map[string]any{"function_id": "slp::f", "lang": "python",
		"source": "import time\nsecret = 'tenant A'\ndef handler(p):\n    time.sleep(3)\n    return secret"}); err != nil {
		t.Fatal(err)
	}
	waitPooled(t, r)
	done := make(chan error, 1)
	go func() { _, err := r.bus.Invoke(t, "slp::f", `{}`); done <- err }()
	// The interpreter inside a turn is the one capturing output.
	var ip *interp
	for ip == nil || !ip.stdin.blocked() || len(r.eng.gate) != 0 { // the handler sleeps: parked on stdin, no permit held
		time.Sleep(10 * time.Millisecond)
		r.eng.mu.Lock()
		for live := range r.eng.live {
			live.stdout.mu.Lock()
			if live.stdout.out != nil {
				ip = live
			}
			live.stdout.mu.Unlock()
		}
		r.eng.mu.Unlock()
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := r.call(t, "code-runner::teardown", map[string]any{"namespace": "slp"}); err != nil {
		t.Fatal(err)
	}
	if !ip.dead() {
		t.Fatal("teardown answered with the waiting turn's interpreter still alive")
	}
	<-done
	r.eng.bg.Wait()
	res := r.mustRun(t, "result = globals().get('secret', 'fresh')")
	if string(res.Result) != `"fresh"` {
		t.Fatalf("%s", res.Result)
	}
}

// endsTheInstance reports whether fn, a host call, ended the guest's
// instance (the panic wazero turns into the module's exit) rather than
// returning an error the guest could catch.
func endsTheInstance(fn func()) (ended bool) {
	defer func() {
		if v := recover(); v != nil {
			_, ended = v.(*sys.ExitError)
		}
	}()
	fn()
	return false
}
