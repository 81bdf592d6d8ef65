package core

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
)

// fakeEngine is a test-only Engine whose runtimes interpret a tiny command
// language in `code`:
//
//	"return <json>"   exit 0 with that result
//	"print <text>"    exit 0, stdout text
//	"throw <text>"    exit 1, stderr text
//	"block"           wait until the context ends → timeout error
//	"kill"            terminate the runtime → timeout error, not alive
//	"dieafter"        succeed, but the runtime is dead when the run returns
//	                  (its host killed between the run's end and adoption)
//	"trigger <id>"    call the bridge and return what it answered
//	"set <v>" / "get" keep a value between calls
type fakeEngine struct {
	lang      Lang
	unavail   error
	created   atomic.Int64
	destroyed atomic.Int64
	lastOpts  atomic.Pointer[RuntimeOptions]
}

func (e *fakeEngine) Lang() Lang { return e.lang }

// Unavailable gives the fake python engine python's words (as
// engines/python does: core.Unavailability).
func (e *fakeEngine) Unavailable(cause error) *Error {
	if e.lang == LangPython {
		return &Error{Code: CodeEngine, Text: "the python engine failed to start on this worker; check its boot logs", Cause: cause}
	}
	return &Error{Code: CodeEngine, Text: "the " + string(e.lang) + " engine is not available on this worker; check its boot logs", Cause: cause}
}
func (e *fakeEngine) Available() error { return e.unavail }
func (e *fakeEngine) NewRuntime(ctx context.Context, opts RuntimeOptions) (Runtime, error) {
	e.created.Add(1)
	e.lastOpts.Store(&opts)
	return &fakeRuntime{eng: e, alive: true}, nil
}

type fakeRuntime struct {
	eng       *fakeEngine
	mu        sync.Mutex
	alive     bool
	value     string
	destroyed bool
}

func (r *fakeRuntime) Run(ctx context.Context, ex Exec) (Outcome, error) {
	cmd, arg, _ := strings.Cut(ex.Code, " ")
	switch cmd {
	case "return":
		return Outcome{Result: json.RawMessage(arg)}, nil
	case "print":
		return Outcome{Stdout: arg, Result: json.RawMessage("null")}, nil
	case "throw":
		return Outcome{Stderr: arg + "\n", ExitCode: 1}, nil
	case "block":
		<-ctx.Done()
		return Outcome{}, ErrTimeout()
	case "kill":
		r.mu.Lock()
		r.alive = false
		r.mu.Unlock()
		return Outcome{}, ErrTimeout()
	case "dieafter":
		r.mu.Lock()
		r.alive = false
		r.mu.Unlock()
		return Outcome{Result: json.RawMessage("1")}, nil
	case "trigger":
		v, err := ex.Bridge.Trigger(ctx, GuestTrigger{FunctionID: arg, Payload: json.RawMessage(`{}`)})
		if err != nil {
			return Outcome{Stderr: err.Error() + "\n", ExitCode: 1}, nil
		}
		return Outcome{Result: v}, nil
	case "set":
		r.mu.Lock()
		r.value = arg
		r.mu.Unlock()
		return Outcome{}, nil
	case "get":
		r.mu.Lock()
		defer r.mu.Unlock()
		b, _ := json.Marshal(r.value)
		return Outcome{Result: b}, nil
	}
	return Outcome{Stderr: "unknown command\n", ExitCode: 1}, nil
}

func (r *fakeRuntime) Alive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alive
}

func (r *fakeRuntime) Destroy() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.destroyed {
		return nil
	}
	r.destroyed = true
	r.eng.destroyed.Add(1)
	return []string{"b::two", "a::one"}
}

// recordingTransport records bus calls made through the bridge.
type recordingTransport struct {
	mu    sync.Mutex
	calls []Invocation
}

func (t *recordingTransport) Invoke(ctx context.Context, inv Invocation) (json.RawMessage, error) {
	t.mu.Lock()
	t.calls = append(t.calls, inv)
	t.mu.Unlock()
	return json.RawMessage(`"reached ` + inv.FunctionID + `"`), nil
}
