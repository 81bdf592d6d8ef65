package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
)

// engineMode starts a test engine that behaves as a 0.22 engine (the last
// writer of an id wins) or, refusing, as a 0.23 one.
func engineMode(t *testing.T, refusing bool) *iiitest.Engine {
	t.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet(), Refusing: refusing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// serveOnce runs Serve for a worker named name until it returns (or the
// bound passes) and gives back what it returned.
func serveOnce(t *testing.T, e *iiitest.Engine, name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	return Serve(ctx, ServeOptions{URL: e.URL(), WorkerName: name, ConfigSource: "engine", Env: envFrom(nil), Log: quiet(),
		NodeHost: []string{os.Args[0]}, NodeEnv: []string{"CODE_RUNNER_ISOLATE_HOST=1"}, PythonCacheDir: testCacheDir, NameWait: 500 * time.Millisecond})
}

// A second worker under the name of a live one is refused at start with a
// message naming III_WORKER_NAME, on a last-writer (0.22) engine — where it
// would otherwise take the first worker's ids over — and on a refusing
// (0.23) engine alike; the first worker goes on serving.
func TestASecondWorkerUnderALiveWorkersNameIsRefused(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		err := serveOnce(t, e, "cr-a")
		if err == nil || !strings.Contains(err.Error(), "III_WORKER_NAME") || !strings.Contains(err.Error(), `"cr-a"`) {
			t.Fatalf("refusing=%v: the second worker returned %v", refusing, err)
		}
		out, eb := runNode(t, e, map[string]any{"code": "return 7"})
		if eb != nil || out["result"] != float64(7) {
			t.Fatalf("refusing=%v: the first worker after the refusal: %v %+v", refusing, out, eb)
		}
	}
}

// When the worker holding the shared ids leaves, another worker holds them
// within seconds, on a last-writer (0.22) engine — where the leaving
// holder takes the ids with it — and on a refusing (0.23) engine — where
// the survivor's registrations had been refused — and serves runs.
func TestASurvivorTakesTheSharedIDsOverWhenTheHolderLeaves(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a := startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: 200 * time.Millisecond})
		b := startServe(t, e, ServeOptions{WorkerName: "cr-b", HoldInterval: 200 * time.Millisecond})
		holder := func() string {
			res, eb, err := e.Invoke(ctxT(t), "engine::functions::list", map[string]any{"prefix": "code-runner::run", "include_internal": true}, nil)
			if err != nil || eb != nil {
				t.Fatal(err, eb)
			}
			var out struct {
				Functions []struct {
					FunctionID string `json:"function_id"`
					WorkerName string `json:"worker_name"`
				} `json:"functions"`
			}
			_ = json.Unmarshal(res, &out)
			for _, f := range out.Functions {
				if f.FunctionID == "code-runner::run" {
					return f.WorkerName
				}
			}
			return ""
		}
		// 0.22: the last to register holds the ids; 0.23: the first.
		first, leaving, staying := "cr-b", b, "cr-a"
		if refusing {
			first, leaving, staying = "cr-a", a, "cr-b"
		}
		deadline := time.Now().Add(15 * time.Second)
		for holder() != first {
			if time.Now().After(deadline) {
				t.Fatalf("refusing=%v: the shared ids are held by %q, want %s", refusing, holder(), first)
			}
			time.Sleep(20 * time.Millisecond)
		}
		leaving.stop()
		deadline = time.Now().Add(15 * time.Second)
		for holder() != staying {
			if time.Now().After(deadline) {
				t.Fatalf("refusing=%v: after %s left, the shared ids are held by %q", refusing, first, holder())
			}
			time.Sleep(50 * time.Millisecond)
		}
		out, eb := runNode(t, e, map[string]any{"code": "return 6 * 7"})
		if eb != nil || out["result"] != float64(42) {
			t.Fatalf("refusing=%v: a run after the takeover: %v %+v", refusing, out, eb)
		}
	}
}

// A kept runtime lives on the worker that made it and is served there
// whichever worker holds the shared ids: its id carries that worker's tag,
// a call on code-runner::run or teardown is forwarded to it, and once that
// worker is gone its runtimes answer expired — on both engine behaviours.
func TestAKeptRuntimeIsServedByItsWorkerWhicheverHoldsTheSharedIDs(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a := startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		b := startServe(t, e, ServeOptions{WorkerName: "cr-b"})
		// 0.22: the last to register (b) holds the shared ids; 0.23: the first.
		otherName := "cr-a"
		if refusing {
			otherName = "cr-b"
		}
		ctx := ctxT(t)
		invoke := func(fn string, req map[string]any) (map[string]any, string) {
			t.Helper()
			res, eb, err := e.Invoke(ctx, fn, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if eb != nil {
				return nil, eb.Code
			}
			var out map[string]any
			_ = json.Unmarshal(res, &out)
			return out, ""
		}
		mine := "code-runner::run@" + Tag(otherName)
		if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(mine) }); err != nil {
			t.Fatalf("refusing=%v: %s never registered", refusing, mine)
		}
		kept, code := invoke(mine, map[string]any{"lang": "python", "keep": true, "code": "n = 1\nresult = n"})
		id, _ := kept["runtime_id"].(string)
		if code != "" || !strings.HasPrefix(id, "rt-"+Tag(otherName)) {
			t.Fatalf("refusing=%v: a kept runtime on %s: %v %s", refusing, otherName, kept, code)
		}
		// Through the shared id, which the other worker may hold: the same runtime, its globals.
		deadline := time.Now().Add(15 * time.Second)
		for i := 2; i <= 4; i++ {
			out, code := invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "n += 1\nresult = n"})
			if code != "" || out["result"] != float64(i) || out["runtime_id"] != id {
				t.Fatalf("refusing=%v: turn %d through the shared id: %v %s", refusing, i, out, code)
			}
			if time.Now().After(deadline) {
				t.Fatal("too slow")
			}
		}
		td, code := invoke("code-runner::teardown", map[string]any{"runtime_id": id})
		if code != "" || td["torn_down"] != true {
			t.Fatalf("refusing=%v: teardown through the shared id: %v %s", refusing, td, code)
		}
		if _, code := invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "result = 1"}); code != "code-runner::runtime_not_found" {
			t.Fatalf("refusing=%v: after its teardown: %s", refusing, code)
		}
		// Its worker goes: its runtimes expire.
		kept, _ = invoke(mine, map[string]any{"lang": "node", "keep": true, "code": "return 1"})
		id, _ = kept["runtime_id"].(string)
		if refusing {
			b.stop()
		} else {
			a.stop()
		}
		_, code = invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "return 2"})
		for code == "code-runner::engine" && time.Now().Before(deadline) { // the holder may be changing hands
			time.Sleep(100 * time.Millisecond)
			_, code = invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "return 2"})
		}
		if code != "code-runner::expired" {
			t.Fatalf("refusing=%v: a runtime of a departed worker answered %q, want expired", refusing, code)
		}
	}
}

// One register_function namespace never spans two workers: a function
// registered through the shared id in a namespace another worker serves
// is registered there — in the same runtime, sharing its globals — and
// tearing the namespace down through the shared id tears it down there.
func TestANamespaceStaysOnTheWorkerThatServesIt(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		startServe(t, e, ServeOptions{WorkerName: "cr-b"})
		// The worker that does not hold the shared ids serves the namespace.
		otherName := "cr-a"
		if refusing {
			otherName = "cr-b"
		}
		ctx := ctxT(t)
		direct := "code-runner::register_function@" + Tag(otherName)
		if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(direct) && e.HasFunction("code-runner::register_function") }); err != nil {
			t.Fatal(err)
		}
		register := func(fn, id, source string) {
			t.Helper()
			res, eb, err := e.Invoke(ctx, fn, map[string]any{"function_id": id, "lang": "node", "source": source}, nil)
			if err != nil || eb != nil {
				t.Fatalf("refusing=%v: %s %s: %s %+v %v", refusing, fn, id, res, eb, err)
			}
		}
		register(direct, "nsx::inc", "function handler() { globalThis.n = (globalThis.n || 0) + 1; return globalThis.n }")
		if !refusing {
			// 0.22: the last worker to register holds the shared ids; wait
			// until that is cr-b, so the next call lands on the other one.
			if err := e.WaitUntil(ctx, func() bool {
				res, _, _ := e.Invoke(ctx, "engine::functions::list", map[string]any{"prefix": "code-runner::register_function", "include_internal": true}, nil)
				return strings.Contains(string(res), `"function_id":"code-runner::register_function","worker_name":"cr-b"`)
			}); err != nil {
				t.Fatal(err)
			}
		}
		register("code-runner::register_function", "nsx::read", "function handler() { return globalThis.n || 0 }")
		res, _, _ := e.Invoke(ctx, "engine::functions::list", map[string]any{"prefix": "nsx::"}, nil)
		if strings.Count(string(res), `"worker_name":"`+otherName+`"`) != 2 {
			t.Fatalf("refusing=%v: the namespace spans workers: %s", refusing, res)
		}
		for i := 1; i <= 2; i++ {
			if v, eb, err := e.Invoke(ctx, "nsx::inc", map[string]any{}, nil); err != nil || eb != nil || string(v) != fmt.Sprint(i) {
				t.Fatalf("%s %+v %v", v, eb, err)
			}
		}
		if v, eb, err := e.Invoke(ctx, "nsx::read", map[string]any{}, nil); err != nil || eb != nil || string(v) != "2" {
			t.Fatalf("refusing=%v: a function registered through the shared id does not share the namespace's runtime: %s %+v %v", refusing, v, eb, err)
		}
		td, eb, err := e.Invoke(ctx, "code-runner::teardown", map[string]any{"namespace": "nsx"}, nil)
		if err != nil || eb != nil || !strings.Contains(string(td), `"nsx::inc"`) || !strings.Contains(string(td), `"nsx::read"`) {
			t.Fatalf("refusing=%v: teardown through the shared id: %s %+v %v", refusing, td, eb, err)
		}
		if err := e.WaitUntil(ctx, func() bool { return !e.HasFunction("nsx::inc") && !e.HasFunction("nsx::read") }); err != nil {
			t.Fatalf("refusing=%v: the namespace's functions outlived its teardown", refusing)
		}
	}
}

// A listed worker under this name that is no code-runner answering its own
// id — a predecessor the engine still lists after it died without closing
// its connection, say — does not keep a restarted worker from serving.
func TestARestartIsNotRefusedForAPredecessorThatDoesNotAnswer(t *testing.T) {
	e := newTestEngine(t)
	ghost := iii.New(iii.Options{URL: e.URL(), Name: "cr-z", Logger: quiet()})
	t.Cleanup(func() { _ = ghost.Close() })
	if _, err := e.WaitWorker(ctxT(t), "cr-z"); err != nil {
		t.Fatal(err)
	}
	startServe(t, e, ServeOptions{WorkerName: "cr-z", NameWait: 300 * time.Millisecond})
	out, eb := runNode(t, e, map[string]any{"code": "return 5"})
	if eb != nil || out["result"] != float64(5) {
		t.Fatalf("%v %+v", out, eb)
	}
}
