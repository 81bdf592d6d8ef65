package worker

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/syncbuf"
)

// refusing is a component that refuses one configuration.
type refusing struct {
	mu    sync.Mutex
	when  int64 // refuse a snapshot with this max_result_bytes
	calls []int64
}

func (r *refusing) Reconfigure(s *configsvc.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s.Config.MaxResultBytes)
	if s.Config.MaxResultBytes == r.when {
		return errors.New("refused")
	}
	return nil
}

// TestARefusedReloadLeavesTheOldConfigurationServing: when a component
// refuses a reload, every route, the live view and every component are
// back on the previous configuration, and the worker says so; the next good
// reload applies.
func TestARefusedReloadLeavesTheOldConfigurationServing(t *testing.T) {
	logs := &syncbuf.Buffer{}
	app, err := NewApp(AppOptions{Store: configsvc.NewStore(configsvc.Defaults(), "test"),
		NodeHost: []string{os.Args[0]}, NodeEnv: []string{"CODE_RUNNER_ISOLATE_HOST=1"}, PythonCacheDir: testCacheDir,
		Log: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	ref := &refusing{when: 4321}
	app.components = append(app.components, ref)
	app.Router.HandleCurrent("test::probe", func(_ context.Context, c *core.Call) (any, error) { return c.Config.MaxResultBytes, nil })
	probe := func() int64 {
		res, err := app.Router.Invoke(context.Background(), "test::probe", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.(int64)
	}
	withCap := func(n int64) configsvc.Config { c := configsvc.Defaults(); c.MaxResultBytes = n; return c }

	if err := app.ApplyConfig(context.Background(), withCap(1000), "test"); err != nil || probe() != 1000 {
		t.Fatalf("good reload: %v, route sees %d", err, probe())
	}
	if err := app.ApplyConfig(context.Background(), withCap(4321), "test"); err == nil {
		t.Fatal("a refused reload reported success")
	}
	if got := probe(); got != 1000 {
		t.Fatalf("after the refusal a route serves max_result_bytes %d, want the previous 1000", got)
	}
	if got := app.Store.Load().Config.MaxResultBytes; got != 1000 {
		t.Fatalf("after the refusal the live view holds %d", got)
	}
	ref.mu.Lock()
	calls := append([]int64(nil), ref.calls...)
	ref.mu.Unlock()
	if len(calls) != 3 || calls[0] != 1000 || calls[1] != 4321 || calls[2] != 1000 {
		t.Fatalf("the component saw %v, want [1000 4321 1000] (the refusal, then the rollback)", calls)
	}
	if !strings.Contains(logs.String(), "configuration not applied; the previous configuration stays live") {
		t.Fatalf("no refusal line:\n%s", logs.String())
	}
	if err := app.ApplyConfig(context.Background(), withCap(2000), "test"); err != nil || probe() != 2000 {
		t.Fatalf("the next good reload: %v, route sees %d", err, probe())
	}
}
