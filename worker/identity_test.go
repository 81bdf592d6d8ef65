package worker

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
)

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
		e, err := iiitest.New(iiitest.Options{Logger: quiet(), Refusing: refusing})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		err = serveOnce(t, e, "cr-a")
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
		e, err := iiitest.New(iiitest.Options{Logger: quiet(), Refusing: refusing})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
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
