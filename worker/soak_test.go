//go:build soak

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/procfs"
)

// The soak's size: every count is split over its two halves. `make soak`
// runs it (build tag soak); it is not part of `make test`.
const (
	soakNodeOneShots   = 10000
	soakPythonOneShots = 10000
	soakKeptCycles     = 1000 // per language
	soakRegisterCycles = 1000
	soakCallers        = 8
)

// soakTask is one unit of the soak's work; run returns an error for any
// answer other than the one expected.
type soakTask struct {
	kind string
	run  func(ctx context.Context, e *iiitest.Engine) error
}

// soakGauges is what the soak watches for growth.
type soakGauges struct {
	rssKB, goroutines, fds, children, tempEntries int64
	selfKB, goHeapKB                              int64 // parts of rssKB, printed only
}

func (g soakGauges) list() []struct {
	name string
	v    int64
} {
	return []struct {
		name string
		v    int64
	}{{"RSS (worker, test engine and isolate hosts), KiB", g.rssKB}, {"goroutines", g.goroutines},
		{"open descriptors", g.fds}, {"child processes", g.children}, {"entries in the worker's TMPDIR", g.tempEntries}}
}

// TestSoak runs the soak through the test engine with 8 concurrent
// callers: node and python one-shots, kept runtimes created, used and torn
// down in both languages, and functions registered, invoked and torn down,
// with one engine disconnect and reconnect between its two halves. Every
// answer is checked; the gauges are taken at the start, the middle and the
// end (each after the pools have settled) and must not grow by more than
// 10 % from the middle to the end. The worker's Ps are sized as `serve`
// sizes them (internal/tuning), so the soak goes through the governor's
// raises and calms too.
func TestSoak(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	gov := tuning.ServeGovernor(false)
	defer gov.Close()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	e := discardingEngine(t)
	s := startServe(t, e, ServeOptions{Procs: gov})
	defer s.stop()
	ctx := context.Background()
	// Warm up: both engines ready and every code path taken once.
	for _, task := range []soakTask{nodeOneShot(0), pythonOneShot(0), keptCycle("node", 0), keptCycle("python", 0), registerCycle(0)} {
		if err := task.run(ctx, e); err != nil {
			t.Fatalf("warm-up: %v", err)
		}
	}
	start := soakMeasure(t, tmp)
	half := func(part int) {
		tasks := soakPlan(part)
		began := time.Now()
		var failed atomic.Int64
		var first sync.Once
		var mu sync.Mutex
		busy := map[string]time.Duration{}
		count := map[string]int{}
		queue := make(chan soakTask)
		var wg sync.WaitGroup
		for w := 0; w < soakCallers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for task := range queue {
					cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
					t0 := time.Now()
					err := task.run(cctx, e)
					cancel()
					mu.Lock()
					busy[task.kind] += time.Since(t0)
					count[task.kind]++
					mu.Unlock()
					if err != nil {
						failed.Add(1)
						first.Do(func() { t.Errorf("half %d: %v", part, err) })
					}
				}
			}()
		}
		for _, task := range tasks {
			queue <- task
		}
		close(queue)
		wg.Wait()
		t.Logf("half %d: %d tasks in %v, %d wrong answers", part, len(tasks), time.Since(began).Round(time.Millisecond), failed.Load())
		for _, k := range []string{"node one-shot", "python one-shot", "node kept cycle", "python kept cycle", "register cycle"} {
			if count[k] > 0 {
				t.Logf("  %-18s %6d, mean %v each (8 callers overlapping)", k, count[k], (busy[k] / time.Duration(count[k])).Round(time.Microsecond))
			}
		}
		if failed.Load() > 0 {
			t.FailNow()
		}
	}
	half(1)
	middle := soakMeasure(t, tmp)
	// The engine drops the worker's connection as a crash would; the worker
	// reconnects and registers its functions again.
	if n := e.CloseConnection("code-runner"); n != 1 {
		t.Fatalf("closed %d connections, want 1", n)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	if _, err := e.WaitWorker(wctx, "code-runner"); err != nil {
		t.Fatalf("the worker did not reconnect: %v", err)
	}
	if err := e.WaitUntil(wctx, func() bool { return e.HasFunction("code-runner::run") }); err != nil {
		t.Fatalf("code-runner::run not registered again: %v", err)
	}
	cancel()
	half(2)
	end := soakMeasure(t, tmp)
	t.Logf("%-52s %10s %10s %10s", "gauge", "start", "middle", "end")
	t.Logf("%-52s %10d %10d %10d", "(of the RSS: this process, KiB)", start.selfKB, middle.selfKB, end.selfKB)
	t.Logf("%-52s %10d %10d %10d", "(of that: Go heap in use, KiB)", start.goHeapKB, middle.goHeapKB, end.goHeapKB)
	for i, g := range start.list() {
		m, en := middle.list()[i].v, end.list()[i].v
		t.Logf("%-52s %10d %10d %10d", g.name, g.v, m, en)
		if float64(en) > float64(m)*1.10 {
			t.Errorf("%s grew by more than 10%% from the middle (%d) to the end (%d)", g.name, m, en)
		}
	}
}

// soakPlan returns half part's tasks, shuffled. SOAK_DIVISOR=n divides
// every count by n (a quick rehearsal of the soak, not the soak).
func soakPlan(part int) []soakTask {
	div := 1
	if _, err := fmt.Sscan(os.Getenv("SOAK_DIVISOR"), &div); err != nil || div < 1 {
		div = 1
	}
	var tasks []soakTask
	base := part * 1000000
	for i := 0; i < soakNodeOneShots/2/div; i++ {
		tasks = append(tasks, nodeOneShot(base+i))
	}
	for i := 0; i < soakPythonOneShots/2/div; i++ {
		tasks = append(tasks, pythonOneShot(base+i))
	}
	for i := 0; i < soakKeptCycles/2/div; i++ {
		tasks = append(tasks, keptCycle("node", base+i), keptCycle("python", base+i))
	}
	for i := 0; i < soakRegisterCycles/2/div; i++ {
		tasks = append(tasks, registerCycle(base+i))
	}
	rand.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	return tasks
}

// soakCall invokes fn and decodes its result into out.
func soakCall(ctx context.Context, e *iiitest.Engine, fn string, req map[string]any, out any) error {
	raw, eb, err := e.Invoke(ctx, fn, req, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	if eb != nil {
		return fmt.Errorf("%s: %s: %s", fn, eb.Code, eb.Message)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%s: decode %s: %w", fn, raw, err)
	}
	return nil
}

// soakRun is the part of a run response the soak checks.
type soakRun struct {
	Result    json.RawMessage `json:"result"`
	RuntimeID string          `json:"runtime_id"`
	ExitCode  int             `json:"exit_code"`
}

// errWrongAnswer marks an answer that arrived and was wrong — never
// excused, not even by a kill (TestSoakGroup).
var errWrongAnswer = errors.New("wrong answer")

func expectResult(what string, got soakRun, want int) error {
	if got.ExitCode != 0 || string(got.Result) != fmt.Sprint(want) {
		return fmt.Errorf("%w: %s: result %s exit %d, want %d", errWrongAnswer, what, got.Result, got.ExitCode, want)
	}
	return nil
}

func nodeOneShot(i int) soakTask {
	return soakTask{"node one-shot", func(ctx context.Context, e *iiitest.Engine) error {
		var res soakRun
		if err := soakCall(ctx, e, "code-runner::run", map[string]any{"lang": "node", "code": fmt.Sprintf("return %d * 2", i)}, &res); err != nil {
			return err
		}
		return expectResult("node one-shot", res, i*2)
	}}
}

func pythonOneShot(i int) soakTask {
	return soakTask{"python one-shot", func(ctx context.Context, e *iiitest.Engine) error {
		var res soakRun
		if err := soakCall(ctx, e, "code-runner::run", map[string]any{"lang": "python", "code": fmt.Sprintf("result = %d * 2", i)}, &res); err != nil {
			return err
		}
		return expectResult("python one-shot", res, i*2)
	}}
}

// keptCycle creates a kept runtime holding i, reads it back in a second
// run, and tears the runtime down.
func keptCycle(lang string, i int) soakTask {
	set, get := fmt.Sprintf("globalThis.x = %d; return 0", i), "return x + 1"
	if lang == "python" {
		set, get = fmt.Sprintf("x = %d\nresult = 0", i), "result = x + 1"
	}
	return soakTask{lang + " kept cycle", func(ctx context.Context, e *iiitest.Engine) error {
		var res soakRun
		if err := soakCall(ctx, e, "code-runner::run", map[string]any{"lang": lang, "keep": true, "code": set}, &res); err != nil {
			return err
		}
		if res.RuntimeID == "" {
			return fmt.Errorf("%s kept run: no runtime_id in %+v", lang, res)
		}
		id := res.RuntimeID
		res = soakRun{}
		if err := soakCall(ctx, e, "code-runner::run", map[string]any{"runtime_id": id, "code": get}, &res); err != nil {
			return err
		}
		if err := expectResult(lang+" kept runtime", res, i+1); err != nil {
			return err
		}
		return soakCall(ctx, e, "code-runner::teardown", map[string]any{"runtime_id": id}, nil)
	}}
}

// registerCycle publishes a node function, calls it over the bus, and tears
// its namespace down.
func registerCycle(i int) soakTask {
	ns := fmt.Sprintf("soak%d", i)
	id := ns + "::double"
	return soakTask{"register cycle", func(ctx context.Context, e *iiitest.Engine) error {
		if err := soakCall(ctx, e, "code-runner::register_function", map[string]any{"function_id": id, "lang": "node",
			"source": "function handler(p) { return p.n * 2 }"}, nil); err != nil {
			return err
		}
		var got int
		if err := soakCall(ctx, e, id, map[string]any{"n": i}, &got); err != nil {
			return err
		}
		if got != i*2 {
			return fmt.Errorf("%w: %s answered %d, want %d", errWrongAnswer, id, got, i*2)
		}
		return soakCall(ctx, e, "code-runner::teardown", map[string]any{"namespace": ns}, nil)
	}}
}

// soakMeasure waits for the pools to settle (a burst keeps extra runtimes
// for 10 s), collects garbage, and reads the gauges.
func soakMeasure(t *testing.T, tmp string) soakGauges {
	t.Helper()
	time.Sleep(13 * time.Second)
	runtime.GC()
	debug.FreeOSMemory()
	pid := os.Getpid()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	g := soakGauges{rssKB: procfs.TreeRSSKB(pid), goroutines: int64(runtime.NumGoroutine()),
		selfKB: procfs.RSSKB(pid), goHeapKB: int64(ms.HeapInuse >> 10)}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		g.fds = int64(len(fds))
	}
	g.children = int64(len(procfs.Descendants(pid)))
	if ents, err := os.ReadDir(tmp); err == nil {
		g.tempEntries = int64(len(ents))
	}
	return g
}
