package enginetest

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// EchoLang is the echo engine's language.
const EchoLang core.Lang = "echo"

// Echo is a test-only third language: it proves an engine plugs into the
// worker through core.EngineModule alone, without a line of core or worker
// knowing it. A run answers {"code": <the code>, "turn": <n>}, n counting
// the runs of that runtime (so a kept runtime shows its state); a
// registered function answers {"source": <its source>, "payload": <the
// payload>}. Commits and closes are counted.
type Echo struct {
	deps    core.EngineDeps
	Commits atomic.Int64
	Closed  atomic.Bool
	Created atomic.Int64
}

// EchoModule returns the echo engine's module; built is told the engine
// the worker made.
func EchoModule(built func(*Echo)) core.EngineModule {
	return core.EngineModule{Lang: EchoLang, New: func(d core.EngineDeps) (core.LiveEngine, error) {
		e := &Echo{deps: d}
		if built != nil {
			built(e)
		}
		return e, nil
	}}
}

var _ core.LiveEngine = (*Echo)(nil)

// Lang returns EchoLang.
func (e *Echo) Lang() core.Lang { return EchoLang }

// Available is always nil.
func (e *Echo) Available() error { return nil }

// Commit counts a configuration change.
func (e *Echo) Commit(*configsvc.Snapshot) { e.Commits.Add(1) }

// Close marks the engine closed.
func (e *Echo) Close() { e.Closed.Store(true) }

// NewRuntime returns a fresh echo runtime.
func (e *Echo) NewRuntime(ctx context.Context, ro core.RuntimeOptions) (core.Runtime, error) {
	e.Created.Add(1)
	return &echoRuntime{e: e, alive: true}, nil
}

type echoRuntime struct {
	e     *Echo
	mu    sync.Mutex
	turns int
	alive bool
	ids   []string
}

var _ core.Definer = (*echoRuntime)(nil)

func (r *echoRuntime) Run(ctx context.Context, ex core.Exec) (core.Outcome, error) {
	r.mu.Lock()
	r.turns++
	n := r.turns
	r.mu.Unlock()
	res, _ := jsonx.Marshal(map[string]any{"code": ex.Code, "turn": n})
	return core.Outcome{Stdout: ex.Code + "\n", Result: res}, nil
}

func (r *echoRuntime) Alive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alive
}

func (r *echoRuntime) Destroy() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.alive {
		return nil
	}
	r.alive = false
	ids := r.ids
	r.ids = nil
	for _, id := range ids {
		if r.e.deps.Bus != nil {
			r.e.deps.Bus.UnregisterFunction(id)
		}
	}
	return ids
}

// Define publishes def.FunctionID through the worker's bus (its route).
func (r *echoRuntime) Define(ctx context.Context, def core.Definition) error {
	source := def.Source
	if r.e.deps.Bus != nil {
		r.e.deps.Bus.RegisterFunction(core.FunctionRegistration{ID: def.FunctionID}, func(ctx context.Context, inv core.GuestInvocation) (json.RawMessage, error) {
			return jsonx.Marshal(map[string]any{"source": source, "payload": inv.Payload})
		})
	}
	r.mu.Lock()
	r.ids = append(r.ids, def.FunctionID)
	r.mu.Unlock()
	return nil
}
