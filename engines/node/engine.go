// Package node is code-runner's JavaScript engine: V8 isolates (our own
// binding, engines/node/v8) that never run in the worker process. Each live
// runtime owns one isolate-host process — the same binary in a hidden mode
// (package isolatehost) — spoken to over its stdin/stdout in hostproto frames
// and supervised from here: deadlines, the heap cap, the resident-memory
// watchdog for off-heap memory, crashes. A host that dies for any reason
// ends only its own runtime.
package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	"github.com/code-runner-go/code-runner/internal/tenantdirs"
	"github.com/code-runner-go/code-runner/internal/warmpool"
)

// HostArg is the hidden first argument that starts the binary as an
// isolate host.
const HostArg = "__isolate-host"

// Options configure the engine.
type Options struct {
	// HostArgv starts one isolate host; default: this executable with HostArg.
	HostArgv []string
	// HostEnv is the host's whole environment (default empty).
	HostEnv []string
	// Registry is the worker's runtime registry (the shared function ids).
	Registry *core.Registry
	// Bus publishes guest registrations; nil keeps them in-process.
	Bus core.Bus
	// Transport reaches the bus for guest calls no routed call made a
	// bridge for (detached work, a replay after a restart).
	Transport core.Transport
	// Live returns the worker's live configuration (Router.Live; nil: the
	// defaults, always): pool sizes and the budgets of work no call waits
	// for. Per-call limits come from the call's own snapshot
	// (RuntimeOptions.Config, the guest route's budget).
	Live func() *configsvc.Snapshot
	// Owners answers whether another worker on the engine serves an id a
	// guest wants to publish or bind (nil: no engine).
	Owners core.Owners
	Log    *slog.Logger
	// Dirs, when set, holds the worker's own directory under each
	// temporary root: scratch directories are named inside it, so a worker
	// that starts after this one was killed can remove them
	// (internal/tenantdirs). Nil: directly under the root.
	Dirs *tenantdirs.Dirs
	// LocalLog gets what guests wrote — console output of detached work and
	// handlers, a host's stderr — at debug: the worker's own log, never
	// telemetry (nil: Log, for a worker that exports none).
	LocalLog *slog.Logger
	// OnPoolBoot, when set, learns how long each pooled host took to boot.
	OnPoolBoot func(time.Duration)
	// CacheDir is where the V8 startup snapshot is kept (default
	// $XDG_CACHE_HOME/code-runner or ~/.cache/code-runner); "-" makes
	// isolates without one.
	CacheDir string
}

// Engine implements core.Engine for lang "node".
type Engine struct {
	opts     Options
	log      *slog.Logger
	localLog *slog.Logger // guest text only: see Options.LocalLog

	pool     *warmpool.Pool[*hostProc]
	closed   atomic.Bool
	hostsMu  sync.Mutex
	hosts    map[*hostProc]bool
	cleanups inFlight // Destroy's background work: scratch removal, host recycling
	kinds    kindDemand
}

// New returns a node engine and starts its warm pool.
func New(opts Options) (*Engine, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if len(opts.HostArgv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locate own executable for isolate hosts: %w", err)
		}
		opts.HostArgv = []string{exe, HostArg}
	}
	if opts.Live == nil {
		defaults := &configsvc.Snapshot{Config: configsvc.Defaults(), Source: "defaults"}
		opts.Live = func() *configsvc.Snapshot { return defaults }
	}
	if opts.Registry == nil {
		opts.Registry = core.NewRegistry(nil)
	}
	if opts.LocalLog == nil {
		opts.LocalLog = opts.Log
	}
	e := &Engine{opts: opts, log: opts.Log.With("engine", "node"), localLog: opts.LocalLog.With("engine", "node"), hosts: map[*hostProc]bool{}}
	e.prepareSnapshot()
	e.pool = newPool(e)
	return e, nil
}

// Lang returns Lang.
func (e *Engine) Lang() core.Lang { return Lang }

// Available returns nil: hosts are started on demand.
func (e *Engine) Available() error {
	if e.closed.Load() {
		return errors.New("node engine is closed")
	}
	return nil
}

// Close kills every host (pooled and live) and stops refilling the pool.
func (e *Engine) Close() {
	e.closed.Store(true)
	e.pool.Close()
	e.hostsMu.Lock()
	hosts := make([]*hostProc, 0, len(e.hosts))
	for h := range e.hosts {
		hosts = append(hosts, h)
	}
	e.hostsMu.Unlock()
	for _, h := range hosts {
		h.kill("destroy")
	}
	for _, h := range hosts {
		<-h.exited
	}
	// Scratch directories of runtimes destroyed just before (worker
	// shutdown) must be gone when Close returns, not left to a goroutine
	// the exiting process never runs.
	e.cleanups.wait()
}

// inFlight counts background jobs. Unlike sync.WaitGroup it may gain jobs
// while someone waits (a runtime destroyed during Close): wait returns at
// the first moment the count is zero.
type inFlight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil while nobody waits
}

func (f *inFlight) start() {
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *inFlight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

func (f *inFlight) wait() {
	f.mu.Lock()
	if f.n == 0 {
		f.mu.Unlock()
		return
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	ch := f.idle
	f.mu.Unlock()
	<-ch
}

// HostPIDs returns the pids of every host process alive now (pooled and
// live), for leak checks.
func (e *Engine) HostPIDs() []int {
	e.hostsMu.Lock()
	defer e.hostsMu.Unlock()
	var pids []int
	for h := range e.hosts {
		if !h.dead() {
			pids = append(pids, h.pid)
		}
	}
	sort.Ints(pids)
	return pids
}

var _ core.Committer = (*Engine)(nil)

// Parked is how many pooled isolate hosts wait for a one-shot.
func (e *Engine) Parked() int {
	if e.pool == nil {
		return 0
	}
	return e.pool.Size()
}

// Commit makes the pool follow the live configuration (size, heap cap).
func (e *Engine) Commit(*configsvc.Snapshot) { e.pool.Kick() }

// config is the engine's current configuration (pool sizes, the budget of
// work no call is waiting for).
func (e *Engine) config() *configsvc.Config { return &e.opts.Live().Config }

func (e *Engine) spawn(ctx context.Context, heapMB int64, filesOn, rich bool) (*hostProc, error) {
	p, err := spawnHost(ctx, e.opts.HostArgv, e.opts.HostEnv, heapMB, filesOn, rich, e.log, e.localLog)
	if err != nil {
		return nil, err
	}
	e.hostsMu.Lock()
	e.hosts[p] = true
	e.hostsMu.Unlock()
	go func() {
		<-p.exited
		e.hostsMu.Lock()
		delete(e.hosts, p)
		e.hostsMu.Unlock()
	}()
	return p, nil
}

// clampHeap applies docs/behaviour.md#runtimes-memory-mb to a request's memory_mb (0 = heap_mb).
func clampHeap(memoryMB uint32, cfg *configsvc.Config) int64 {
	if memoryMB == 0 {
		return cfg.HeapMB
	}
	m := int64(memoryMB)
	if m < 16 {
		m = 16
	}
	if m > 1024 {
		m = 1024
	}
	return m
}

// NewRuntime hands out a pooled host or boots one, then binds the
// runtime's namespace and scratch directory to it.
func (e *Engine) NewRuntime(ctx context.Context, ro core.RuntimeOptions) (core.Runtime, error) {
	cfg := ro.Config
	if cfg == nil {
		cfg = e.config()
	}
	heap := clampHeap(ro.MemoryMB, cfg)
	filesOn := cfg.ScratchMB > 0
	if ro.Code != "" {
		e.kinds.saw(jsenv.WantsRich(ro.Code))
	}
	var p *hostProc
	loan := false
	if ro.MemoryMB == 0 || heap == cfg.HeapMB {
		p = e.take(ctx, heap, filesOn, ro.OneShot, ro.Budget)
		loan = p != nil && ro.OneShot
	}
	if p == nil {
		var err error
		if p, err = e.spawn(ctx, heap, filesOn, jsenv.WantsRich(ro.Code)); err != nil {
			return nil, core.AsError(err, core.FnRun)
		}
		if ro.OneShot && heap == cfg.HeapMB {
			// Lent like a pooled host: under a burst it stays (see
			// warmpool.Pool.Adopt) rather than being killed on return.
			e.pool.Adopt()
			loan = true
		}
	}
	r := &runtime{e: e, p: p, namespace: ro.Namespace, owner: "node:" + ro.Namespace, heapMB: heap, externalMB: cfg.ExternalMB,
		loan: loan, kept: !ro.OneShot, alive: true, gone: make(chan struct{}), fns: map[string]bool{}, triggers: map[string]bool{}, ttypes: map[string]bool{}, broken: map[string]string{}}
	var files *hostproto.FilesConf
	if filesOn {
		// The directory is only named here; the host creates it on the
		// first write (see scratch.ensure). Creating it eagerly cost a
		// filesystem round trip on every one-shot run, almost none of which
		// touch iii.files.
		dir, err := e.scratchPath(cfg.ScratchRootOrEmpty())
		if err != nil {
			r.Destroy()
			return nil, core.AsError(err, core.FnRun)
		}
		r.scratchDir = dir
		files = &hostproto.FilesConf{Dir: dir, MaxBytes: cfg.ScratchMB << 20, MaxFiles: cfg.ScratchFiles}
		r.filesCfg = files
	}
	p.mu.Lock()
	p.onCall = func(m *hostproto.Msg) { r.handleCall(p, m) }
	p.onLog = r.detachedLog
	p.onExit = r.hostExited
	p.mu.Unlock()
	if p.dead() {
		r.Destroy()
		return nil, core.Errorf(core.CodeEngine, "the isolate host died before the run started; retry")
	}
	if err := p.send(r.bindMsg()); err != nil {
		r.Destroy()
		return nil, core.AsError(err, core.FnRun)
	}
	return r, nil
}

// hostCopySlackKB is what the parent's backstop allows a host beyond its
// guest's caps: the host's own transient copies of guest data, each bounded
// by a frame (several times that under the race detector, whose shadow
// memory for those copies is resident too).
const hostCopySlackKB = (2 * hostproto.MaxFrame >> 10) * raceShadowFactor

// bindMsg gives a host this runtime: its namespace, scratch directory,
// off-heap cap and the budget of guest work that runs with no call.
func (r *runtime) bindMsg() *hostproto.Msg {
	return &hostproto.Msg{T: "bind", Namespace: r.namespace, Files: r.filesCfg, ExternalMB: r.externalMB, BudgetMS: r.e.config().MaxTimeoutMS, Kept: r.kept}
}

// runtime is one node runtime: a bound isolate host.
type runtime struct {
	e          *Engine
	p          *hostProc
	namespace  string
	owner      string
	heapMB     int64
	externalMB int64
	scratchDir string
	filesCfg   *hostproto.FilesConf
	loan       bool // p came from the pool on loan (a one-shot): give it back
	kept       bool // not a one-shot: its host serves turn after turn

	mu        sync.Mutex
	alive     bool
	destroyed bool
	gone      chan struct{} // closed by Destroy: the guest calls in flight end
	nextTask  int64
	// taskValues holds, per task in flight, its call's values (its trace
	// context) without its cancellation: the guest calls a task makes
	// carry them, under deadlines of their own.
	taskValues map[int64]context.Context
	fns        map[string]bool
	triggers   map[string]bool
	ttypes     map[string]bool
	onDeath    []func()
	lastActive time.Time

	// Namespace runtimes survive their host (docs/behaviour.md#register-namespace-lifetime): the next use
	// starts a fresh host and replays the registration sources in order.
	restartMu sync.Mutex
	sources   []nodeSource
	broken    map[string]string
}

type nodeSource struct {
	def core.Definition
}

// host returns the runtime's current isolate host.
func (r *runtime) host() *hostProc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.p
}

// isNamespaceRuntime reports whether this runtime backs a register_function
// namespace (run runtimes live under code-runner::<token>::).
func (r *runtime) isNamespaceRuntime() bool {
	return !strings.HasPrefix(r.namespace, "code-runner::")
}

// Alive reports whether the runtime can serve another call.
func (r *runtime) Alive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alive && !r.destroyed
}

// OnDeath registers fn to run when the runtime dies outside a call.
func (r *runtime) OnDeath(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onDeath = append(r.onDeath, fn)
}

func (r *runtime) hostExited() {
	if r.isNamespaceRuntime() {
		return // restarted with replay on next use
	}
	r.mu.Lock()
	wasAlive := r.alive && !r.destroyed
	r.alive = false
	fns := r.onDeath
	r.onDeath = nil
	r.mu.Unlock()
	if wasAlive {
		for _, fn := range fns {
			go fn()
		}
	}
}

func (r *runtime) detachedLog(level, text string) {
	r.e.localLog.Debug("detached console output", "logger", "code-runner::js", "level", level, "text", escapeControl(capsfilter.RedactRuntimeIDs(text)))
}

func escapeControl(s string) string {
	return strings.Map(func(c rune) rune {
		if c < 0x20 && c != '\t' {
			return '·'
		}
		return c
	}, s)
}

// Run executes one run in the isolate (docs/behaviour.md#node-run).
func (r *runtime) Run(ctx context.Context, ex core.Exec) (core.Outcome, error) {
	d, err := r.exec(core.WithBridge(ctx, ex.Bridge), &hostproto.Msg{T: "run", Code: ex.Code, MaxResult: ex.MaxResultBytes})
	if err != nil {
		return core.Outcome{}, err
	}
	switch d.Status {
	case hostproto.StatusOK:
		return core.Outcome{Stdout: d.Stdout, Stderr: d.Stderr, Result: d.Result, ResultOmitted: d.Omitted}, nil
	case hostproto.StatusError:
		return core.Outcome{Stdout: d.Stdout, Stderr: d.Stderr + d.Error + "\n", ExitCode: 1}, nil
	case hostproto.StatusExit:
		// process.exit(n ≠ 0): a tenant failure that prints nothing more,
		// as node's does (contract §25.6).
		return core.Outcome{Stdout: d.Stdout, Stderr: d.Stderr, ExitCode: 1}, nil
	case hostproto.StatusQuota:
		return core.Outcome{}, core.Errorf(core.CodeResourceExhausted, "%s", d.Error)
	}
	return core.Outcome{}, core.Errorf(core.CodeEngine, "unexpected run status %q", d.Status)
}

// exec sends a task and waits for its outcome under ctx's deadline, watching
// the host's resident memory. Kills map to errors: timeout, memory, crash.
func (r *runtime) exec(ctx context.Context, m *hostproto.Msg) (*hostproto.Msg, error) {
	d, err := r.execOnce(ctx, m)
	if err == errNotStarted && ctx.Err() == nil {
		// A namespace runtime's host was killed by its own detached work
		// before it read this task: the task never ran; restart (replay)
		// and send it once more, under the same deadline.
		return r.execOnce(ctx, m)
	}
	return d, err
}

func (r *runtime) execOnce(ctx context.Context, m *hostproto.Msg) (*hostproto.Msg, error) {
	if r.isNamespaceRuntime() && r.host().dead() {
		if err := r.restart(ctx); err != nil {
			return nil, err
		}
	}
	r.mu.Lock()
	if !r.alive || r.destroyed {
		r.mu.Unlock()
		return nil, errKilledOutsideCall()
	}
	r.nextTask++
	m.Task = r.nextTask
	r.lastActive = time.Now()
	if r.taskValues == nil {
		r.taskValues = map[int64]context.Context{}
	}
	r.taskValues[m.Task] = context.WithoutCancel(ctx)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.lastActive = time.Now()
		delete(r.taskValues, m.Task)
		r.mu.Unlock()
	}()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Duration(r.e.config().MaxTimeoutMS) * time.Millisecond)
	}
	m.BudgetMS = time.Until(deadline).Milliseconds()
	if m.BudgetMS < 1 {
		return nil, core.ErrTimeout()
	}
	ch, err := r.host().start(m, deadline)
	if errors.Is(err, errWriteTimeout) {
		// The host is not reading (its guest is spinning): the call's
		// deadline passed before its first byte could be written.
		r.markDead()
		return nil, core.ErrTimeout()
	}
	if err != nil {
		// The host was gone before this task reached it: this call did not
		// kill it. A kept runtime is tombstoned (expired); a namespace
		// runtime restarts on its next use.
		r.markDead()
		if !r.isNamespaceRuntime() {
			return nil, errKilledOutsideCall()
		}
		return nil, core.Errorf(core.CodeEngine, "the runtime's isolate host is gone; retry")
	}
	// The host enforces the guest's memory cap itself, on every entry into
	// the isolate, counting only the guest's memory (its own copies of a
	// result or a file on the way out are not the guest's). This is the
	// backstop for a host that cannot: the whole process, with room for
	// those copies.
	limitKB := r.host().baselineKB + (r.heapMB+r.externalMB)<<10 + hostCopySlackKB
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	grace := time.NewTimer(time.Until(deadline) + 250*time.Millisecond)
	defer grace.Stop()
	for {
		select {
		case d := <-ch:
			return r.outcome(d)
		case <-tick.C:
			if rss := rssKB(r.host().pid); rss > limitKB {
				r.host().kill("external")
				r.markDead()
				return r.outcome(<-ch)
			}
		case <-grace.C:
			// The host's own watchdog should have answered by now.
			r.host().kill("timeout")
			r.markDead()
			<-ch
			return nil, core.ErrTimeout()
		}
	}
}

// errNotStarted is a namespace task the host died before reading (its
// detached work overran): it never ran, so exec may send it once more.
var errNotStarted = core.ErrHostCrashed()

// errKilledOutsideCall: the runtime died outside any call (its detached
// work overran, or it was already dead). CodeExpired: core.RunService
// answers a held id with ErrExpired(id) (contract §22a.9).
func errKilledOutsideCall() *core.Error {
	return core.Errorf(core.CodeExpired, "the runtime was killed outside any call")
}

func (r *runtime) markDead() {
	if r.isNamespaceRuntime() {
		// The host is finished; make sure it is gone before the next use,
		// which restarts it with replay.
		p := r.host()
		p.kill("timeout")
		<-p.exited
		return
	}
	r.mu.Lock()
	r.alive = false
	r.mu.Unlock()
}

func (r *runtime) outcome(d *hostproto.Msg) (*hostproto.Msg, error) {
	switch d.Status {
	case hostproto.StatusOK, hostproto.StatusError, hostproto.StatusExit, hostproto.StatusQuota, hostproto.StatusMissing, hostproto.StatusThrew, hostproto.StatusParse, hostproto.StatusRefused:
		return d, nil
	case hostproto.StatusTimeout, hostproto.StatusDiedTimeout:
		r.markDead()
		return nil, core.ErrTimeout()
	case hostproto.StatusMemory, hostproto.StatusDiedMemory:
		r.markDead()
		return nil, ErrMemory(r.heapMB)
	case hostproto.StatusExternal, hostproto.StatusDiedExternal:
		r.markDead()
		return nil, ErrExternalMemory(r.externalMB)
	case hostproto.StatusDiedDetached:
		// Its own detached work overran while this task waited unread.
		r.markDead()
		if !r.isNamespaceRuntime() {
			return nil, errKilledOutsideCall()
		}
		return nil, errNotStarted
	}
	r.markDead()
	return nil, core.ErrHostCrashed()
}

// Destroy unregisters everything the runtime published, kills its host and
// deletes its scratch directory. It returns the function ids it
// unregistered, sorted.
func (r *runtime) Destroy() []string {
	r.mu.Lock()
	if r.destroyed {
		r.mu.Unlock()
		return nil
	}
	wasAlive := r.alive
	r.destroyed = true
	close(r.gone)
	r.alive = false
	fns := keys(r.fns)
	trigs := keys(r.triggers)
	types := keys(r.ttypes)
	r.fns, r.triggers, r.ttypes = map[string]bool{}, map[string]bool{}, map[string]bool{}
	r.mu.Unlock()
	bus := r.e.opts.Bus
	for _, id := range trigs {
		if bus != nil {
			bus.UnregisterTrigger(id)
		}
	}
	for _, id := range types {
		if bus != nil {
			bus.UnregisterTriggerType(id)
		}
	}
	for _, id := range fns {
		if bus != nil {
			bus.UnregisterFunction(id)
		}
		r.e.opts.Registry.ReleaseFunction(id, r.owner)
	}
	// The process and its directory go in the background: nothing can reach
	// them any more, and the caller's response need not wait. A host whose
	// isolate ended healthy is recycled — a brand-new isolate in the same
	// process — instead of paying for a new process.
	p := r.host()
	healthy := wasAlive && !p.dead()
	// A loan is counted as on its way back from here, not from when the
	// goroutine below starts: on a busy worker that can be milliseconds
	// later, while the caller is already borrowing for its next call, and
	// the pool took the two for two borrowers and grew for both.
	returning := func() {}
	if r.loan {
		returning = r.e.pool.Returning()
	}
	r.e.cleanups.start()
	go func() {
		defer r.e.cleanups.done()
		defer returning()
		if r.scratchDir != "" {
			_ = os.RemoveAll(r.scratchDir)
		}
		if r.e.closed.Load() {
			p.kill("destroy")
			return
		}
		r.e.give(p, healthy, r.loan)
	}()
	return fns
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// reply answers a host's bridge call.
func (r *runtime) reply(call int64, value json.RawMessage, err error) {
	m := &hostproto.Msg{T: "reply", Call: call, OK: err == nil, Value: value}
	if err != nil {
		m.Error = err.Error()
	}
	// A host whose guest spins past this bound is killed by its own guard
	// first; the bound only keeps this writer from waiting forever.
	_ = r.host().sendBy(m, time.Now().Add(time.Duration(r.e.config().MaxTimeoutMS)*time.Millisecond+hostWriteWait))
}

// scratchPath names a new scratch directory under root (the system temp
// directory when root is ""), inside the worker's own directory there when
// the engine has Dirs: a random name, never derived from a runtime id.
func (e *Engine) scratchPath(root string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	if e.opts.Dirs != nil {
		var err error
		if root, err = e.opts.Dirs.Under(root); err != nil {
			return "", err
		}
	}
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("name a scratch directory: %w", err)
	}
	return filepath.Join(root, "iii-node-scratch-"+hex.EncodeToString(b[:])), nil
}
