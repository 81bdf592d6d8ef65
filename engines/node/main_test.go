package node

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/node/isolatehost"
)

// TestMain doubles as the isolate host: the engine under test starts this
// test binary with CODE_RUNNER_ISOLATE_HOST=1, or with HostArg as the worker
// starts itself.
func TestMain(m *testing.M) {
	if os.Getenv("CODE_RUNNER_ISOLATE_HOST") == "1" || (len(os.Args) > 1 && os.Args[1] == HostArg) {
		os.Exit(isolatehost.Serve())
	}
	os.Exit(m.Run())
}

type rig struct {
	eng    *Engine
	reg    *core.Registry
	router *core.Router
	ns     *core.Namespaces
	cfg    configsvc.Config
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newRig(t testing.TB, mut func(*configsvc.Config), transport core.Transport, bus core.Bus) *rig {
	t.Helper()
	return newRigEnv(t, mut, transport, bus)
}

// newRigEnv is newRig with more of the hosts' environment (a bench-only
// switch such as CODE_RUNNER_BENCH_NO_JSENV=1).
func newRigEnv(t testing.TB, mut func(*configsvc.Config), transport core.Transport, bus core.Bus, hostEnv ...string) *rig {
	t.Helper()
	cfg := configsvc.Defaults()
	cfg.WarmPoolNode = 0
	if mut != nil {
		mut(&cfg)
	}
	r := &rig{reg: core.NewRegistry(nil), cfg: cfg}
	r.router = core.NewRouter(cfg, "test", transport, quiet())
	if bus != nil { // guest functions are routes, as in the worker
		bus = &core.GuestRoutes{Router: r.router, Bus: bus}
	}
	eng, err := New(Options{HostArgv: []string{os.Args[0]}, HostEnv: append([]string{"CODE_RUNNER_ISOLATE_HOST=1"}, hostEnv...),
		Registry: r.reg, Bus: bus, Transport: transport, Live: r.router.Live, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	r.eng = eng
	svc := &core.RunService{Registry: r.reg, Engines: map[core.Lang]core.Engine{Lang: eng}}
	r.ns = &core.Namespaces{Registry: r.reg, Engines: svc.Engines, Run: svc}
	for id, route := range core.Routes(svc, r.ns) {
		r.router.Handle(id, route)
	}
	return r
}

// call invokes any routed function with a JSON payload.
func (r *rig) call(t testing.TB, fn string, req any) (json.RawMessage, *core.Error) {
	t.Helper()
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.router.Invoke(ctx, fn, b, nil)
	if err != nil {
		var ce *core.Error
		if !errors.As(err, &ce) {
			t.Fatalf("non-wire error %v", err)
		}
		return nil, ce
	}
	out, _ := json.Marshal(res)
	return out, nil
}

func (r *rig) run(t testing.TB, req map[string]any) (*core.RunResponse, *core.Error) {
	t.Helper()
	b, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := r.router.Invoke(ctx, core.FnRun, b, nil)
	if err != nil {
		var ce *core.Error
		if !errors.As(err, &ce) {
			t.Fatalf("non-wire error %v", err)
		}
		return nil, ce
	}
	return res.(*core.RunResponse), nil
}

func node(code string) map[string]any { return map[string]any{"lang": "node", "code": code} }

func TestRunBasics(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	res, err := r.run(t, node(`console.log("hi"); return 2 + 2`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "hi\n" || string(res.Result) != "4" || res.ExitCode != 0 || !res.Success || res.RuntimeID != "" {
		t.Fatalf("%+v", res)
	}
}
