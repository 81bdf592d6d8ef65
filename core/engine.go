package core

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/internal/tenantdirs"
)

// Engine creates runtimes of one language. engines/node and engines/python
// implement it; core never imports them and names no language: what it
// must know of one it asks the engine (the optional interfaces below).
type Engine interface {
	// Lang is the language this engine runs.
	Lang() Lang
	// Available returns nil when the engine can create runtimes, else the
	// reason it cannot (for example a python boot failure).
	Available() error
	// NewRuntime creates a runtime, or hands out a pooled one. Boot time is
	// not part of any run budget: ctx only bounds how long the caller waits.
	NewRuntime(ctx context.Context, opts RuntimeOptions) (Runtime, error)
}

// RuntimeOptions are bound to a runtime when it is created or handed out.
type RuntimeOptions struct {
	// MemoryMB is the request's memory_mb (0 = the language default).
	MemoryMB uint32
	// Namespace is what the guest sees as iii.namespace: "code-runner::<token>::"
	// for run runtimes, "<ns>::" for namespace runtimes.
	Namespace string
	// Config supplies the per-runtime limits (heap_mb, external_mb, scratch_*)
	// as of creation.
	Config *configsvc.Config
	// OneShot says the runtime will most likely be destroyed right after
	// its first run (a run without keep), so an engine that recycles what
	// it can may expect it back.
	OneShot bool
	// Budget is the call's own run budget: the longest it may wait for a
	// runtime to come back to a pool (0: the engine's own bound).
	Budget time.Duration
	// Code is the first code the runtime will run (a run's code, a
	// source), when known: an engine may prepare for it.
	Code string
}

// Runtime is one sandbox. Calls to Run are serialized by the caller.
type Runtime interface {
	// Run executes code. ctx carries the run's deadline; the returned error
	// is an *Error (timeout, resource_exhausted, engine) when the run did not
	// produce a response. A tenant failure is an Outcome with ExitCode 1.
	Run(ctx context.Context, exec Exec) (Outcome, error)
	// Alive reports whether the runtime can serve another call. A node
	// runtime that was terminated (timeout, memory) is not alive.
	Alive() bool
	// Destroy releases everything the runtime holds — its bus registrations,
	// scratch directory and process or instance — and returns the function
	// ids it unregistered. It is idempotent: later calls return nil.
	Destroy() []string
}

// Exec is one execution request handed to a Runtime.
type Exec struct {
	Code   string
	Bridge Bridge
	// MaxResultBytes is the call's result cap (0: none): an engine may
	// answer a result it measured over it with capsfilter.Omitted's marker
	// rather than encode it whole (the pipeline caps whatever it answers).
	MaxResultBytes int64
}

// Outcome is what a run produced (before the output caps).
type Outcome struct {
	Stdout   string
	Stderr   string
	ExitCode int64
	Result   json.RawMessage // nil means null
	// ResultOmitted says Result is already the result cap's marker
	// (capsfilter.Omitted) for a result the engine measured over
	// Exec.MaxResultBytes: the pipeline answers it as it is.
	ResultOmitted bool
}

// Invocation is a bus call made on a guest's behalf.
type Invocation struct {
	FunctionID string
	Data       json.RawMessage // never nil on the wire: nil is sent as null
	// Action is nil for request/response, or the raw wire action object
	// ({"type":"void"} or {"type":"enqueue","queue":…}).
	Action  json.RawMessage
	Timeout time.Duration
}

// Transport performs bus calls. The iii client implements it in the worker;
// local mode implements it in-process.
type Transport interface {
	Invoke(ctx context.Context, inv Invocation) (json.RawMessage, error)
}

// GuestTrigger is a guest's iii.trigger request after argument checks.
type GuestTrigger struct {
	FunctionID string
	Payload    json.RawMessage
	Action     json.RawMessage
	// TimeoutMS is the guest's requested timeout (0 = absent).
	TimeoutMS uint64
	// Deadline is the enclosing run's deadline (zero = none active).
	Deadline time.Time
}

// Bridge is what guest code reaches the bus through: the Transport behind the
// deny-list (docs/behaviour.md#bridge-checks) and the guest timeout rules
// (docs/behaviour.md#timeouts-guest-calls).
type Bridge interface {
	Trigger(ctx context.Context, req GuestTrigger) (json.RawMessage, error)
	// CheckTriggerTarget refuses a binding whose target is operator-only.
	CheckTriggerTarget(functionID string) error
}

// Langs returns the languages of engines, sorted: the values a request's
// `lang` may take.
func Langs(engines map[Lang]Engine) []Lang { return slices.Sorted(maps.Keys(engines)) }

// langList is the sorted languages of an engine map, computed on first use:
// a worker's engines never change once it is built, and every decoded
// request asks.
type langList struct {
	once  sync.Once
	langs []Lang
}

func (l *langList) of(engines map[Lang]Engine) []Lang {
	l.once.Do(func() { l.langs = Langs(engines) })
	return l.langs
}

// Unavailability is implemented by an engine with its own words for "cannot
// serve now": Unavailable returns the answer for cause (what Available
// returned). Without it the answer is the generic "the <lang> engine is not
// available on this worker; check its boot logs".
type Unavailability interface {
	Unavailable(cause error) *Error
}

// NamespacePinner is implemented by an engine whose namespace runtimes are
// never reaped for idleness (PinsNamespaces true: python's, whose state
// cannot be replayed cheaply).
type NamespacePinner interface {
	PinsNamespaces() bool
}

// Pooled is implemented by an engine with a warm pool: Parked is how many
// runtimes wait in it (a telemetry gauge).
type Pooled interface {
	Parked() int
}

// Booting is implemented by an engine that boots in the background: the
// worker serves before it is ready and logs when it is.
type Booting interface {
	// WaitReady returns once the engine can serve, or its boot error.
	WaitReady(ctx context.Context) error
	// State is a word for the log: "ready", "booting", "failed".
	State() string
}

// LiveEngine is an engine the worker runs: it follows configuration
// changes (Committer) and is closed with the worker.
type LiveEngine interface {
	Engine
	Committer
	Close()
}

// EngineDeps is what the worker hands every engine it builds.
type EngineDeps struct {
	Registry *Registry
	// Bus publishes guest registrations (through the router: GuestRoutes);
	// nil keeps them in-process.
	Bus Bus
	// Transport carries guest calls; Owners answers whether another worker
	// serves an id (nil: no engine to ask).
	Transport Transport
	Owners    Owners
	// Live returns the live configuration (Router.Live).
	Live func() *configsvc.Snapshot
	// Log is the worker's log; LocalLog gets guest-written text (never
	// exported).
	Log, LocalLog *slog.Logger
	// Dirs holds the worker's own directory under each temporary root.
	Dirs *tenantdirs.Dirs
	// OnPoolBoot, when set, learns how long each warm-pool boot took.
	OnPoolBoot func(time.Duration)
	// Busy, when set, is told about CPU-heavy background work.
	Busy func(weight int) (done func())
}

// EngineModule is a language engine as its package offers it to the
// worker: its language and its constructor, with the engine's own options
// already bound. The worker builds the modules it is given, in order
// (engines/standard lists the ones this binary ships), and loops over them
// for everything else.
type EngineModule struct {
	Lang Lang
	New  func(deps EngineDeps) (LiveEngine, error)
}
