//go:build soak

package worker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/procfs"
)

// TestSoakGroup is the soak's group variant (contract §24): two workers on
// one engine — a survivor served in this process and a victim,
// the real binary, SIGKILLed and started again every SOAK_GROUP_KILL_EVERY
// (60 s) for SOAK_GROUP_FOR (4 min) — and 8 callers of mixed work through
// the shared ids. No answer may be wrong; a failed call must be explained
// by a kill: expired on a runtime of the victim, or any error for work
// that was in flight at a kill or began within the 5 s the contract gives
// another worker to take the shared ids over. The survivor's RSS (its own
// process and its isolate hosts), goroutines and descriptors must not
// grow by more than 10 % from the first kill to the end.
//
// Registered functions are invoked throughout (contract §26): before each
// kill the victim publishes a namespace of its own, node and python; after
// each kill every function registered so far answers again within 10 s
// (the survivor restores the victim's from their records), and none
// answers wrongly.
func TestSoakGroup(t *testing.T) {
	// Both engine modes (contract §24): a 0.22 engine, where the last
	// writer of a shared id wins, and a 0.23 one, which refuses it.
	for _, mode := range []struct {
		name     string
		refusing bool
	}{{"engine-0.22", false}, {"engine-0.23", true}} {
		t.Run(mode.name, func(t *testing.T) { soakGroup(t, mode.refusing) })
	}
}

func soakGroup(t *testing.T, refusing bool) {
	every, span := soakDuration("SOAK_GROUP_KILL_EVERY", 60*time.Second), soakDuration("SOAK_GROUP_FOR", 4*time.Minute)
	bin := filepath.Join(t.TempDir(), "code-runner")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/code-runner").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	e, err := iiitest.New(iiitest.Options{Logger: quiet(), DiscardFrames: true, Refusing: refusing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ctx := context.Background()
	victimTag := Tag("cr-victim")
	var victim *exec.Cmd
	var victimLog bytes.Buffer
	startVictim := func() {
		victim = exec.Command(bin, "serve", "--url", e.URL())
		victim.Env = append(os.Environ(), "III_WORKER_NAME=cr-victim")
		victimLog.Reset()
		victim.Stderr = &victimLog
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := e.WaitUntil(wctx, func() bool { return e.HasFunction("code-runner::run@" + victimTag) }); err != nil {
			t.Fatalf("the victim never served: %v\n%s", err, victimLog.String())
		}
	}
	// The victim starts first, so it holds the shared ids and the first
	// kill is a failover; the survivor joins on standby. A restarted
	// victim leaves the ids with the survivor (a rolling restart), so the
	// later kills are of a worker whose runtimes the survivor forwards to.
	startVictim()
	defer func() { _ = victim.Process.Kill(); _ = victim.Wait() }()
	survivor := startServe(t, e, ServeOptions{WorkerName: "cr-survivor"})
	defer survivor.stop()

	var mu sync.Mutex
	var kills []time.Time
	// The registered functions so far: id → the n it adds.
	durable := map[string]int{}
	publishOnVictim := func(round int) {
		for i, lang := range []string{"node", "node", "python"} {
			id := fmt.Sprintf("durable%d::f%d", round, i)
			add := round*10 + i
			src := fmt.Sprintf("export function handler(p) { return p.n + %d }", add)
			if lang == "python" {
				src = fmt.Sprintf("def handler(p):\n    return p['n'] + %d", add)
			}
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			err := soakCall(cctx, e, "code-runner::register_function@"+victimTag, map[string]any{"function_id": id, "lang": lang, "source": src}, nil)
			cancel()
			if err != nil {
				t.Fatalf("publishing %s on the victim: %v\n%s", id, err, victimLog.String())
			}
			mu.Lock()
			durable[id] = add
			mu.Unlock()
		}
	}
	// everyDurableAnswers waits up to 10 s after the kill at k for every
	// registered function to answer right.
	everyDurableAnswers := func(k time.Time) {
		mu.Lock()
		ids := make(map[string]int, len(durable))
		for id, add := range durable {
			ids[id] = add
		}
		mu.Unlock()
		for id, add := range ids {
			var got int
			var err error
			for {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				err = soakCall(cctx, e, id, map[string]any{"n": 1}, &got)
				cancel()
				if err == nil && got == add+1 || time.Since(k) > 10*time.Second {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil || got != add+1 {
				t.Errorf("%s did not answer right within 10 s of a kill: %d %v", id, got, err)
			}
		}
	}
	publishOnVictim(0)
	failures := map[string]int{} // explained failures by function and code
	// explained reports whether err, for a task that ran from t0 to t1, is
	// one a kill explains.
	explained := func(err error, t0, t1 time.Time) bool {
		if strings.Contains(err.Error(), "code-runner::expired") && strings.Contains(err.Error(), "rt-"+victimTag) {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		// 5 s to take the shared ids over (§24.3), 10 s to restore a
		// namespace (§26.2).
		grace := 5 * time.Second
		if strings.HasPrefix(err.Error(), "durable") {
			grace = 10 * time.Second
		}
		for _, k := range kills {
			if !t0.After(k.Add(grace)) && !t1.Before(k) {
				return true
			}
		}
		return false
	}
	var wrong, explainedN, done atomic.Int64
	var firstWrong sync.Once
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < soakCallers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w * 10000000; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var task soakTask
				switch rand.IntN(6) {
				case 5:
					mu.Lock()
					var id string
					add := 0
					for k, v := range durable { // any one
						id, add = k, v
						break
					}
					mu.Unlock()
					task = soakTask{"registered function", func(ctx context.Context, e *iiitest.Engine) error {
						var got int
						if err := soakCall(ctx, e, id, map[string]any{"n": i}, &got); err != nil {
							return err
						}
						if got != i+add {
							return fmt.Errorf("%w: %s answered %d, want %d", errWrongAnswer, id, got, i+add)
						}
						return nil
					}}
				case 0:
					task = nodeOneShot(i)
				case 1:
					task = pythonOneShot(i)
				case 2:
					task = keptCycle("node", i)
				case 3:
					task = keptCycle("python", i)
				default:
					task = registerCycle(i)
				}
				cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				t0 := time.Now()
				err := task.run(cctx, e)
				cancel()
				done.Add(1)
				switch {
				case err == nil:
				case !errors.Is(err, errWrongAnswer) && explained(err, t0, time.Now()):
					explainedN.Add(1)
					kind := err.Error()
					if i := strings.Index(kind, ": "); i > 0 {
						if j := strings.Index(kind[i+2:], ": "); j > 0 {
							kind = kind[:i+2+j] // "<function>: <code>"
						}
					}
					mu.Lock()
					failures[kind]++
					mu.Unlock()
					time.Sleep(50 * time.Millisecond) // a caller backs off after a failure
				default:
					wrong.Add(1)
					firstWrong.Do(func() { t.Errorf("%s: %v", task.kind, err) })
				}
			}
		}(w)
	}
	gauges := func() soakGauges {
		time.Sleep(13 * time.Second) // pools settle after a burst
		runtime.GC()
		g := soakGauges{rssKB: procfs.RSSKB(os.Getpid()), goroutines: int64(runtime.NumGoroutine())}
		for _, pid := range nodeOf(survivor.app).HostPIDs() {
			g.rssKB += procfs.RSSKB(pid)
		}
		if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
			g.fds = int64(len(fds))
		}
		g.children = int64(len(nodeOf(survivor.app).HostPIDs()))
		return g
	}
	began := time.Now()
	var first soakGauges
	for n := 0; time.Since(began)+every <= span || n == 0; n++ {
		time.Sleep(every)
		mu.Lock()
		kills = append(kills, time.Now())
		mu.Unlock()
		_ = victim.Process.Kill()
		_ = victim.Wait()
		everyDurableAnswers(kills[len(kills)-1])
		startVictim()
		publishOnVictim(n + 1)
		if n == 0 {
			first = gauges()
		}
	}
	close(stop)
	wg.Wait()
	end := gauges()
	t.Logf("%d tasks in %v, %d kills of the victim, %d failures explained by a kill, %d wrong", done.Load(), time.Since(began).Round(time.Second), len(kills), explainedN.Load(), wrong.Load())
	for kind, n := range failures {
		t.Logf("  explained: %6d × %s", n, kind)
	}
	t.Logf("%-40s %10s %10s", "survivor gauge", "first kill", "end")
	for i, g := range first.list() {
		if g.name == "entries in the worker's TMPDIR" {
			continue
		}
		en := end.list()[i].v
		t.Logf("%-40s %10d %10d", g.name, g.v, en)
		if float64(en) > float64(g.v)*1.10 {
			t.Errorf("the survivor's %s grew by more than 10%% (%d → %d)", g.name, g.v, en)
		}
	}
	if done.Load()-explainedN.Load()-wrong.Load() == 0 {
		t.Error("no task succeeded")
	}
}

// soakDuration reads a duration from the environment (a quick rehearsal:
// SOAK_GROUP_KILL_EVERY=15s SOAK_GROUP_FOR=40s), else def.
func soakDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(key)); err == nil && d > 0 {
		return d
	}
	return def
}
