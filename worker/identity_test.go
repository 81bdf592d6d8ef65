package worker

import (
	"context"
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
