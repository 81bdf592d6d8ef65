package python

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/procfs"

	"github.com/tetratelabs/wazero/sys"
)

const (
	workOverText = "code-runner::resource_exhausted: run wrote more than 268435456 bytes (or more than 20000 files) under /work and was killed"
	outOverText  = "code-runner::resource_exhausted: run wrote more than 4194304 bytes (or more than 64 files) under /out and was killed"
)

// A write that crosses a budget is refused at the file system (no
// overshoot), and the turn then ends as the budget kill even when the guest
// catches the refusal — in one-shot, kept and namespace runtimes alike.
func TestBudgetCrossingEndsTheTurnAsTheBudgetKill(t *testing.T) {
	// 20,000 file creations take long under the race detector.
	r := newRig(t, func(c *configsvc.Config) { c.MaxTimeoutMS = 180000 })
	fastWriter := "chunk = b'x' * (1 << 20)\nf = open('/work/big', 'wb')\ntry:\n    while True:\n        f.write(chunk)\nexcept OSError:\n    pass\nresult = 'survived'"
	manyFiles := "i = 0\ntry:\n    while True:\n        open('/work/f%d' % i, 'w').close()\n        i += 1\nexcept OSError:\n    pass\nresult = 'survived'"
	for _, tc := range []struct{ name, code string }{{"bytes", fastWriter}, {"entries", manyFiles}} {
		t.Run("one-shot "+tc.name, func(t *testing.T) {
			res, err := r.run(t, map[string]any{"code": tc.code, "timeout_ms": 180000})
			if err == nil || err.Error() != workOverText {
				t.Fatalf("got %v (result %s)", err, res.Result)
			}
		})
	}
	t.Run("kept runtime is destroyed and its id expires", func(t *testing.T) {
		k, _ := r.run(t, map[string]any{"keep": true, "code": "result = 1"})
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": fastWriter, "timeout_ms": 60000}); err == nil || err.Error() != workOverText {
			t.Fatalf("%v", err)
		}
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "result = 1"}); err == nil || err.Code != core.CodeExpired {
			t.Fatalf("after the kill: %v", err)
		}
	})
	t.Run("an /out overflow names /out and keeps the runtime and its /work", func(t *testing.T) {
		k, _ := r.run(t, map[string]any{"keep": true, "code": "open('/work/keep', 'w').write('kept')"})
		tiny := "try:\n    for i in range(65):\n        open('/out/f%d' % i, 'w').close()\nexcept OSError:\n    pass"
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": tiny}); err == nil || err.Error() != outOverText {
			t.Fatalf("%v", err)
		}
		res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "result = open('/work/keep').read()"})
		if err != nil || string(res.Result) != `"kept"` {
			t.Fatalf("/work after an /out overflow: %v %s", err, res.Result)
		}
	})
	t.Run("namespace runtime is emptied and restarts", func(t *testing.T) {
		src := "def handler(p):\n    if p.get('fill'):\n        f = open('/work/big', 'wb')\n        try:\n            while True:\n                f.write(b'x' * (1 << 20))\n        except OSError:\n            return 'survived'\n    import os\n    return sorted(os.listdir('/work'))"
		if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "bud::f", "lang": "python", "source": src}); err != nil {
			t.Fatal(err)
		}
		r.setDefaultTimeout(60000)
		defer r.setDefaultTimeout(configsvc.Defaults().DefaultTimeoutMS)
		if _, err := r.bus.Invoke(t, "bud::f", `{"fill":true}`); err == nil || !strings.Contains(err.Error(), "under /work and was killed") {
			t.Fatalf("%v", err)
		}
		out, err := r.bus.Invoke(t, "bud::f", `{}`)
		if err != nil || string(out) != `[]` {
			t.Fatalf("after the kill: %s %v", out, err)
		}
	})
}

// Guest output that imitates the wrapper's protocol cannot wedge a turn,
// hold an execution permit, or leave goroutines behind; neither can a guest
// that swallows the interruption of time.sleep. The deadline always wins.
func TestForgedProtocolCannotWedgeTheEngine(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.MaxRuntimes = 64 })
	r.mustRun(t, "result = 1")
	before := runtime.NumGoroutine()
	forge := `import json, sys
s = json.load(open('/run/iii.json'))['sentinel']
`
	cases := []struct{ name, code string }{
		{"a forged request it never reads the answer to", forge + "sys.stdout.write('\\n' + s + '\\n' + json.dumps({'kind': 'sleep', 'seconds': 0}) + '\\n'); sys.stdout.flush()\nwhile True:\n    pass"},
		{"50,000 forged requests", forge + "line = '\\n' + s + '\\n' + json.dumps({'kind': 'sleep', 'seconds': 0}) + '\\n'\nfor i in range(50000):\n    sys.stdout.write(line)\n    sys.stdout.flush()\nwhile True:\n    pass"},
		{"a sleep whose interruption is swallowed", "import time\nwhile True:\n    try:\n        time.sleep(1e9)\n    except BaseException:\n        pass"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// More runs than there are execution permits: a wedged turn
			// would keep its permit and starve the last ones.
			var wg sync.WaitGroup
			errs := make(chan string, 10)
			for i := 0; i < 10; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					res, err := r.run(t, map[string]any{"code": tc.code, "timeout_ms": 1000})
					if err != nil && err.Code != core.CodeTimeout {
						errs <- err.Error()
					}
					if err == nil && res.ExitCode != 1 {
						errs <- "answered success: " + string(res.Result)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Fatal(e)
			}
			r.mustRun(t, "result = 1")
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+10 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before+10 {
		t.Fatalf("goroutines %d after the forged runs, %d before", n, before)
	}
}

// Only a real exhaustion of linear memory is reported as the memory kill;
// an exit with status 0 is reported as the exit it is.
func TestPythonOutcomesSayWhatHappened(t *testing.T) {
	r := newRig(t, nil)
	for _, tc := range []struct{ name, code, stderr string }{
		{"raise MemoryError", "raise MemoryError('mine')", "MemoryError: mine"},
		{"os._exit(0)", "import os\nos._exit(0)", "code exited with status 0 before completing\n"},
		{"os._exit(3)", "import os\nos._exit(3)", "code exited with status 3 before completing\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := r.run(t, map[string]any{"code": tc.code})
			if err != nil || res.ExitCode != 1 || !strings.Contains(res.Stderr, tc.stderr) {
				t.Fatalf("%v %+v", err, res)
			}
		})
	}
	t.Run("a denied growth is the memory kill", func(t *testing.T) {
		_, err := r.run(t, map[string]any{"code": "b = bytearray(1 << 30)"})
		if err == nil || err.Error() != "code-runner::resource_exhausted: run exceeded its memory cap of 128 MiB and was killed (a run that creates a runtime may ask for up to 512 MiB with memory_mb)" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("a kept runtime that caught a denial answers its next raise as an exception", func(t *testing.T) {
		k, _ := r.run(t, map[string]any{"keep": true, "code": "try:\n    b = bytearray(1 << 30)\nexcept MemoryError:\n    pass\nresult = 'caught'"})
		if k.RuntimeID == "" || string(k.Result) != `"caught"` {
			t.Fatalf("%+v", k)
		}
		res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "raise MemoryError('mine')"})
		if err != nil || res.ExitCode != 1 {
			t.Fatalf("%v %+v", err, res)
		}
	})
}

// The worker's memory grows by about what the guest uses, not by several
// times its cap while linear memory is reallocated and copied.
func TestWorkerMemoryFollowsTheGuestCap(t *testing.T) {
	r := newRig(t, nil)
	r.mustRun(t, "result = 1")
	runtime.GC()
	base := procfs.RSSKB(os.Getpid())
	var peak int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if v := procfs.RSSKB(os.Getpid()); v > peak {
				peak = v
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	_, err := r.run(t, map[string]any{"memory_mb": 256, "timeout_ms": 60000, "code": "a = []\nwhile True:\n    a.append(bytearray(4 << 20))"})
	close(stop)
	<-sampled
	if err == nil || err.Code != core.CodeResourceExhausted {
		t.Fatalf("%v", err)
	}
	growthMiB := (peak - base) / 1024
	if growthMiB > 256+32 {
		t.Fatalf("worker RSS grew by %d MiB for a guest capped at 256 MiB", growthMiB)
	}
	t.Logf("worker RSS grew by %d MiB for a guest capped at 256 MiB", growthMiB)
}

// Every disposed interpreter gives back its module, its directory
// descriptors and its memory, whichever way it ended.
func TestDisposedInterpretersLeakNothing(t *testing.T) {
	r := newRig(t, nil)
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	fds := func() int {
		entries, _ := os.ReadDir("/proc/self/fd")
		return len(entries)
	}
	one := func() {
		dir, err := r.eng.newWorkDir(r.eng.config())
		if err != nil {
			t.Error(err)
			return
		}
		ip, err := r.eng.bootInterp(context.Background(), defaultMemMB, dir)
		if err != nil {
			t.Error(err)
			return
		}
		ip.dispose()
		r.eng.removeWorkDir(dir)
	}
	one()
	before := fds()
	const n = 64
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			one()
		}()
	}
	wg.Wait()
	r.eng.mu.Lock()
	live := len(r.eng.live)
	r.eng.mu.Unlock()
	if live != 0 {
		t.Fatalf("%d interpreters still registered as live", live)
	}
	if after := fds(); after > before+2 {
		t.Fatalf("open descriptors %d after %d disposals, %d before", after, n, before)
	}
}

// Closing the engine removes every directory it created, including the
// /work of runtimes still alive and of those destroyed just before.
func TestCloseLeavesNoDirectories(t *testing.T) {
	root := t.TempDir()
	r := newRig(t, func(c *configsvc.Config) { s := root; c.ScratchRoot = &s; c.WarmPoolPython = 2 })
	k, err := r.run(t, map[string]any{"keep": true, "code": "open('/work/x', 'w').write('x' * 100000)"})
	if err != nil || k.RuntimeID == "" {
		t.Fatal(err)
	}
	r.mustRun(t, "open('/work/y', 'w').write('y')")
	k2, _ := r.run(t, map[string]any{"keep": true, "code": "open('/work/z', 'w').write('z')"})
	if _, err := r.call(t, core.FnTeardown, map[string]any{"runtime_id": k2.RuntimeID}); err != nil {
		t.Fatal(err)
	}
	for _, kk := range r.reg.Kept() {
		if r.reg.Forget(kk, false) {
			kk.Runtime.Destroy()
		}
	}
	r.eng.Close()
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("left behind: %v", names)
	}
}

// TestASpinningGuestCannotHoldTheWorkerThread: on a one-CPU worker
// (GOMAXPROCS=1) a guest spinning in Python must leave the worker's other
// goroutines the thread often, not only when the scheduler gets to preempt
// it (after 10 ms, and only where the wasm code enters Go). A goroutine
// counts how often it gets the thread; the guest reads the count (a guest
// call) before and after a loop of 3·10⁶ iterations, which it times
// itself. The tick yields once a millisecond (yieldEvery): the counter got
// ~220 turns in a ~220 ms loop. With the tick entering Go without yielding
// it got ~10 — one per ~20 ms. The bar, one turn per 5 ms of the loop,
// lies between the two with room for a loaded machine on either side; it
// is a bound on how long the thread is held, not on how fast anything runs.
func TestASpinningGuestCannotHoldTheWorkerThread(t *testing.T) {
	var turns atomic.Int64
	r := newRigWith(t, nil, countTransport{&turns})
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.mustRun(t, "result = 1") // boot outside the single-thread window
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				turns.Add(1)
				runtime.Gosched()
			}
		}
	}()
	res, cerr := r.run(t, map[string]any{"timeout_ms": 30000,
		"code": "import time\na = iii.trigger({'function_id': 'probe::turns'})\nt = time.perf_counter()\nfor i in range(3 * 10**6):\n    pass\nms = (time.perf_counter() - t) * 1000\nb = iii.trigger({'function_id': 'probe::turns'})\nresult = [b - a, ms]"})
	if cerr != nil {
		t.Fatal(cerr)
	}
	var got [2]float64
	if err := json.Unmarshal(res.Result, &got); err != nil || res.ExitCode != 0 {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
	during, ms := got[0], got[1]
	if during < ms/5 || during < 10 {
		t.Fatalf("another goroutine got the only thread %.0f times while the guest spun 3·10⁶ iterations for %.0f ms (want one turn per 5 ms at least)", during, ms)
	}
}

// countTransport answers every guest call with the count so far.
type countTransport struct{ n *atomic.Int64 }

func (c countTransport) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	return json.RawMessage(strconv.FormatInt(c.n.Load(), 10)), nil
}

// TestGuestsSpinningInsideCAreKilled: loops that never return to the
// bytecode loop — a C iterator summed forever, a regular expression
// backtracking — still end at their deadline (every loop of the
// interpreter calls code_runner.tick, which ends a killed instance), and
// the worker serves on.
func TestGuestsSpinningInsideCAreKilled(t *testing.T) {
	r := newRig(t, nil)
	for _, code := range []string{
		"while True: pass",
		"import itertools\nsum(itertools.repeat(1))",
		"import re\nre.match(r'(a+)+$', 'a' * 64 + 'b')",
		"import collections, itertools\ncollections.deque(itertools.count(), maxlen=0)",
	} {
		done := make(chan *core.Error, 1)
		go func() {
			_, err := r.run(t, map[string]any{"code": code, "timeout_ms": 300})
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || err.Code != core.CodeTimeout {
				t.Fatalf("%q: %v", code, err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("%q outlived its 300 ms deadline by a minute", code)
		}
		if res := r.mustRun(t, "result = 1"); string(res.Result) != "1" {
			t.Fatalf("after %q: %s %s", code, res.Result, res.Stderr)
		}
	}
}

// A kill ends the interpreter where it stands: none of the tenant's code
// runs after it — not its atexit handlers, not its finalizers, which
// CPython would run on its way out if the killed read handed the wrapper an
// end of file. Each leaves a file in /work if it ever runs.
func TestNoTenantCodeRunsAfterAKill(t *testing.T) {
	ip, dir := bootLoose(t)
	code := "import atexit\n" +
		"def _bye():\n    open('/work/atexit-ran', 'w').write('x')\n" +
		"atexit.register(_bye)\n" +
		"class _Last:\n    def __del__(self):\n        open('/work/finalizer-ran', 'w').write('x')\n" +
		"keep_me = _Last()\n"
	frame, _ := json.Marshal(map[string]any{"kind": "run", "code": code})
	if err := ip.ping(context.Background(), frame); err != nil {
		t.Fatalf("the turn that registers them: %v", err)
	}
	ip.dispose()
	for _, name := range []string{"atexit-ran", "finalizer-ran"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			t.Errorf("%s: tenant code ran after the kill", name)
		}
	}
	var ee *sys.ExitError
	if !errors.As(ip.exitErr, &ee) || ee.ExitCode() != sys.ExitCodeContextCanceled {
		t.Errorf("the instance ended with %v, want the kill's exit", ip.exitErr)
	}
}
