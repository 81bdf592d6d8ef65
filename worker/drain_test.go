package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii/iiitest"
)

// slowRun starts a node run that answers 7 after ms milliseconds and
// answers its result (or error code) on the channel.
func slowRun(t *testing.T, e *iiitest.Engine, ms int) <-chan string {
	out := make(chan string, 1)
	go func() {
		res, eb, err := e.Invoke(ctxT(t), core.FnRun, map[string]any{"lang": "node", "timeout_ms": 20000,
			"code": "await new Promise((r) => setTimeout(r, " + jsonInt(ms) + ")); return 7"}, nil)
		switch {
		case err != nil:
			out <- "error " + err.Error()
		case eb != nil:
			out <- "error " + eb.Code
		default:
			var r struct {
				Result json.RawMessage `json:"result"`
			}
			_ = json.Unmarshal(res, &r)
			out <- string(r.Result)
		}
	}()
	return out
}

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

// stopping cancels s's context (SIGTERM) and answers a channel closed when
// Serve has returned.
func stopping(s *served) <-chan struct{} {
	done := make(chan struct{})
	s.stopOnce.Do(func() { // the test's cleanup then waits for nothing
		s.cancel()
		go func() {
			<-s.done
			close(done)
		}()
	})
	return done
}

// A lone worker that drains answers the call already running, refuses new
// ones cleanly (its ids are gone: function_not_found, never a hang), and
// stops as soon as the call has answered — not at drain_secs.
func TestADrainingWorkerFinishesWhatItStarted(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{WorkerName: "cr-drain"})
	setLive(t, e, s, func(c *configsvc.Config) { c.DrainSecs = 20 })
	register(t, e, map[string]any{"function_id": "drain-ns::f", "lang": "node", "source": "export function handler() { return 1 }"})
	running := slowRun(t, e, 3000)
	time.Sleep(500 * time.Millisecond) // the run is in flight
	start := time.Now()
	stopped := stopping(s)
	s.waitLog(t, "code-runner draining")
	for _, id := range []string{core.FnRun, "drain-ns::f"} {
		if got := answersWith(t, e, id, `{"lang":"node","code":"return 1"}`); got != "error function_not_found" {
			t.Fatalf("%s during the drain: %s", id, got)
		}
	}
	if got := <-running; got != "7" {
		t.Fatalf("the run in flight answered %s\n%s", got, s.logs.String())
	}
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not stop once its call had answered")
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("the worker stopped after %v: it waited for drain_secs", took)
	}
	if !strings.Contains(s.logs.String(), "every call in flight finished") {
		t.Fatalf("no drained line:\n%s", s.logs.String())
	}
	// The namespace's records stay: it was handed over, not torn down.
	if got := recordedKeys(e); got != "drain-ns::f" {
		t.Fatalf("records after the drain: %s", got)
	}
}

// drain_secs 0 stops at once; a second signal ends a drain at once.
func TestADrainEndsAtZeroOrOnASecondSignal(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{WorkerName: "cr-zero"})
	setLive(t, e, s, func(c *configsvc.Config) { c.DrainSecs = 0 })
	running := slowRun(t, e, 5000)
	time.Sleep(500 * time.Millisecond)
	select {
	case <-stopping(s):
	case <-time.After(4 * time.Second):
		t.Fatal("drain_secs 0 did not stop at once")
	}
	if got := <-running; got == "7" {
		t.Fatal("the run answered although drain_secs was 0")
	}

	abort := make(chan struct{})
	s = startServe(t, e, ServeOptions{WorkerName: "cr-abort", Abort: abort})
	setLive(t, e, s, func(c *configsvc.Config) { c.DrainSecs = 300 })
	_ = slowRun(t, e, 20000)
	time.Sleep(500 * time.Millisecond)
	stopped := stopping(s)
	s.waitLog(t, "code-runner draining")
	select {
	case <-stopped:
		t.Fatal("the drain ended before the call or the second signal")
	case <-time.After(time.Second):
	}
	close(abort)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("a second signal did not end the drain")
	}
	if !strings.Contains(s.logs.String(), "a second signal") {
		t.Fatalf("no second-signal line:\n%s", s.logs.String())
	}
}

// In a group, the worker that drains hands the shared ids and its
// namespaces over at once: calls made during its drain are served by the
// other worker, its own call in flight still answers.
func TestAGroupServesThroughADrain(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		t.Run(map[bool]string{false: "0.22", true: "0.23"}[refusing], func(t *testing.T) {
			e := engineMode(t, refusing)
			a := startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: 200 * time.Millisecond})
			b := startServe(t, e, ServeOptions{WorkerName: "cr-b", HoldInterval: 200 * time.Millisecond})
			setLive(t, e, a, func(c *configsvc.Config) { c.DrainSecs = 20 })
			if h := sharedHolder(t, e); h != "cr-a" {
				t.Fatalf("holder %s", h)
			}
			register(t, e, map[string]any{"function_id": "group-ns::f", "lang": "node", "source": "export function handler() { return 'f' }"})
			if servers := listedFunctions(t, e, "group-ns::"); servers["group-ns::f"] != "cr-a" {
				t.Fatalf("servers %v", servers)
			}
			running := slowRun(t, e, 3000)
			time.Sleep(500 * time.Millisecond)
			stopped := stopping(a)
			a.waitLog(t, "code-runner draining")
			eventuallyAnswers(t, 5*time.Second, `"f"`, func() string { return answersWith(t, e, "group-ns::f", `{}`) })
			eventuallyAnswers(t, 5*time.Second, "42", func() string { return runNodeResult(t, e, "return 6 * 7") })
			if h := sharedHolder(t, e); h != "cr-b" {
				t.Fatalf("holder during the drain %s", h)
			}
			if got := <-running; got != "7" {
				t.Fatalf("the call in flight on the draining worker: %s", got)
			}
			<-stopped
			_ = b
		})
	}
}
