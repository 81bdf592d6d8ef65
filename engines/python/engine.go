// Package python is code-runner's Python engine: CPython 3.11 compiled to
// WASI (the embedded python.wasm and its standard library) running in
// wazero inside the worker
// process. Interpreters are parked in a wrapper's turn loop so a turn costs
// no boot; a pool keeps interpreters booted ahead of demand; /work is a
// private directory mounted through a filesystem wrapper that refuses links.
package python

import (
	"context"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/python/pywasm"
	"github.com/code-runner-go/code-runner/internal/buildinfo"
	"github.com/code-runner-go/code-runner/internal/gopool"
	"github.com/code-runner-go/code-runner/internal/tenantdirs"
	"github.com/code-runner-go/code-runner/internal/warmpool"
	"github.com/code-runner-go/code-runner/internal/wasmloops"
)

// recycleWait is how long a one-shot waits for a loaned interpreter to come
// back before booting one.
const recycleWait = 250 * time.Millisecond

// Fixed limits (docs/behaviour.md#python-limits).
const (
	defaultMemMB = 128
	minMemMB     = 40
	maxMemMB     = 512
	maxExecuting = 8
)

// Options configure the engine.
type Options struct {
	Registry  *core.Registry
	Bus       core.Bus
	Transport core.Transport
	// Live returns the worker's live configuration (Router.Live; nil: the
	// defaults, always): pool sizes and the budgets of work no call waits
	// for. Per-call limits come from the call's own snapshot
	// (RuntimeOptions.Config, the guest route's budget).
	Live func() *configsvc.Snapshot
	Log  *slog.Logger
	// Dirs, when set, holds the worker's own directory under each
	// temporary root: every /work (and its /out) is made inside it, so a
	// worker that starts after this one was killed can remove them
	// (internal/tenantdirs). Nil: directly under the root.
	Dirs *tenantdirs.Dirs
	// CacheDir overrides the compilation cache directory (default
	// $XDG_CACHE_HOME/code-runner or ~/.cache/code-runner); "-" disables it.
	CacheDir string
	// Wasm overrides the embedded python.wasm (tests).
	Wasm []byte
	// OnPoolBoot, when set, learns how long each pooled interpreter took
	// to boot (snapshot included).
	OnPoolBoot func(time.Duration)
	// Busy, when set, is told about the engine's CPU-heavy work for as long
	// as it runs — the compile (weight 2: it uses every CPU by itself), each
	// warm-pool boot and each turn past its first LongTurn (weight 1) — so
	// the worker sizes its Ps for it as for calls in flight
	// (internal/tuning). The function it returns ends it.
	Busy func(weight int) (done func())
	// LongTurn overrides DefaultLongTurn (tests).
	LongTurn time.Duration
	// FreeMemory overrides how freed heap goes back to the system, after
	// boot and a little after disposals (nil: debug.FreeOSMemory; tests
	// count calls).
	FreeMemory func()
}

// Engine implements core.Engine for lang "python".
type Engine struct {
	opts       Options
	log        *slog.Logger
	ready      chan struct{}
	err        error
	wasm       []byte
	stdlib     fs.FS        // mounted read-only at pywasm.StdlibDir; nil with Options.Wasm
	pathWarned atomic.Value // the python_path value Commit last checked against this host
	pkgs       fs.FS        // the package bundle, its trees mounted read-only (bootInterp); nil with Options.Wasm
	cache      wazero.CompilationCache

	mu   sync.Mutex
	wr   *wasmRuntime // nil until boot compiled python.wasm
	gate chan struct{}
	// openFiles counts the files every interpreter holds open together.
	openFiles fileLimit
	pool      *warmpool.Pool[*interp]
	closed    bool
	live      map[*interp]bool      // every running interpreter
	workDirs  map[string]bool       // every /work created and not yet removed
	bg        sync.WaitGroup        // background disposals; Close waits for them
	bgPool    *gopool.Pool          // their goroutines, kept between them (a reset runs deep)
	memory    tuning.MemoryReturner // returns freed Go heap to the system after disposals and boot
	pagemap   pagemapFile           // /proc/self/pagemap for every reset; closed by Close
	BootTime  time.Duration         // compile (or cache load) of the default runtime
}

// wasmRuntime is a wazero runtime with one memory cap and the module
// compiled for it (all share the compilation cache).
type wasmRuntime struct {
	rt  wazero.Runtime
	mod wazero.CompiledModule
	// globals names the module's exported mutable globals, which a reset
	// restores; unexported counts those it cannot (any makes snapshots
	// refuse: an interpreter is then never recycled).
	globals    []string
	unexported int
}

// busy marks the start of CPU-heavy background work (Options.Busy); call
// the result when it ends.
func (e *Engine) busy(weight int) (done func()) {
	if e.opts.Busy == nil {
		return func() {}
	}
	return e.opts.Busy(weight)
}

// DefaultLongTurn is how long a turn computes before it counts as work of
// its own beside the call it serves (Options.Busy, weight 1): a worker on
// one P then raises its Ps, so a guest computing for seconds does not leave
// the bus — and the next caller — to be served between its ticks.
const DefaultLongTurn = 20 * time.Millisecond

// watchLong marks the turn starting now as CPU-heavy work once it has run
// for the long-turn time; call the result when the turn ends.
func (e *Engine) watchLong() (stop func()) {
	if e.opts.Busy == nil {
		return func() {}
	}
	longTurn := e.opts.LongTurn
	if longTurn <= 0 {
		longTurn = DefaultLongTurn
	}
	var mu sync.Mutex
	var leave func()
	stopped := false
	t := time.AfterFunc(longTurn, func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			leave = e.opts.Busy(1)
		}
	})
	return func() {
		t.Stop()
		mu.Lock()
		stopped = true
		l := leave
		mu.Unlock()
		if l != nil {
			l()
		}
	}
}

// New starts booting the engine in the background: the compile (or a cache
// hit) happens concurrently with the worker's other start-up. WaitReady
// reports the outcome.
func New(opts Options) *Engine {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.Registry == nil {
		opts.Registry = core.NewRegistry(nil)
	}
	if opts.Live == nil {
		defaults := &configsvc.Snapshot{Config: configsvc.Defaults(), Source: "defaults"}
		opts.Live = func() *configsvc.Snapshot { return defaults }
	}
	e := &Engine{opts: opts, log: opts.Log.With("engine", "python"), ready: make(chan struct{}), live: map[*interp]bool{}, workDirs: map[string]bool{}, bgPool: gopool.New(maxIdleBackground),
		gate: make(chan struct{}, maxExecuting)}
	e.openFiles.max = workerOpenFiles()
	e.memory.Free = opts.FreeMemory
	go e.boot()
	return e
}

func (e *Engine) boot() {
	defer close(e.ready)
	start := time.Now()
	wasm := e.opts.Wasm
	if wasm == nil {
		var err error
		if wasm, err = pywasm.Wasm(); err == nil {
			e.stdlib, err = pywasm.Stdlib()
		}
		if err == nil {
			e.pkgs, err = pywasm.Packages()
		}
		if err != nil {
			e.err = err
			e.log.Error("python engine failed to start; serving node only", "err", err)
			return
		}
	}
	e.wasm = wasm
	e.cache = e.openCache()
	if _, err := e.runtimeFor(context.Background()); err != nil {
		e.err = err
		e.log.Error("python engine failed to start; serving node only", "err", err)
		return
	}
	e.BootTime = time.Since(start)
	e.log.Info("python engine ready", "boot", e.BootTime.Round(time.Millisecond))
	e.pool = newPool(e)
}

// CacheDir is where compiled python.wasm is cached: <base>/python/<sha256>/<wazero version>.
func CacheDir(base string) string {
	return filepath.Join(base, "python", pywasm.Digest(), buildinfo.ModuleVersion("github.com/tetratelabs/wazero"))
}

func (e *Engine) openCache() wazero.CompilationCache {
	base := e.opts.CacheDir
	if base == "-" {
		return wazero.NewCompilationCache()
	}
	if base == "" {
		if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
			base = filepath.Join(x, "code-runner")
		} else if h, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(h, ".cache", "code-runner")
		}
	}
	dir := CacheDir(base)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.log.Warn("compilation cache directory unusable; compiling in memory", "dir", dir, "err", err)
		return wazero.NewCompilationCache()
	}
	c, err := wazero.NewCompilationCacheWithDir(dir)
	if err != nil {
		e.log.Warn("compilation cache directory unusable; compiling in memory", "dir", dir, "err", err)
		return wazero.NewCompilationCache()
	}
	return c
}

// runtimeFor returns the wazero runtime every interpreter runs in. There is
// one, whatever the memory cap: each instance's linear memory is allocated
// by withLinearMemory, which enforces that instance's cap and records a
// denied growth, so no runtime-wide page limit (and no second copy of the
// ~15 MB of compiled code per cap) is needed.
func (e *Engine) runtimeFor(ctx context.Context) (*wasmRuntime, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.wr != nil {
		return e.wr, nil
	}
	if e.closed {
		return nil, errors.New("python engine is closed")
	}
	// Every loop of the interpreter calls code_runner.tick at an interval
	// (tick.go): that is how a guest is killed and how it yields its
	// thread, so wazero's own kill checks — an exit to Go at every loop
	// header, 3.8× the cost of the code — are left out.
	wasm, err := wasmloops.Instrument(e.wasm, tickModule, tickName, loopTickInterval)
	if err != nil {
		return nil, fmt.Errorf("prepare python.wasm: %w", err)
	}
	globals, unexported, err := wasmloops.MutableGlobals(wasm)
	if err != nil {
		return nil, fmt.Errorf("read python.wasm's globals: %w", err)
	}
	cfg := wazero.NewRuntimeConfigCompiler().
		WithCloseOnContextDone(false).
		WithDebugInfoEnabled(false). // kills in ~0.1 ms instead of seconds
		WithCompilationCache(e.cache)
	defer e.busy(2)() // the compile runs on every CPU
	cctx := experimental.WithCompilationWorkers(ctx, runtime.NumCPU())
	rt := wazero.NewRuntimeWithConfig(cctx, cfg)
	wasi_snapshot_preview1.MustInstantiate(cctx, rt)
	if err := instantiateTick(cctx, rt); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	mod, err := rt.CompileModule(cctx, wasm)
	if err != nil {
		_ = rt.Close(ctx)
		return nil, fmt.Errorf("compile python.wasm: %w", err)
	}
	e.wr = &wasmRuntime{rt: rt, mod: mod, globals: globals, unexported: unexported}
	e.wasm = nil // compiled once; the 8 MB copy of the embedded bytes is not needed again
	// Loading the module leaves ~20 MiB of garbage in the heap, a compile
	// that missed the cache ~130 MiB; an idle worker would keep it for good
	// (no collection comes until the heap grows, and Go's scavenger returns
	// only free spans). It goes back tuning.ReturnDelay from now.
	e.returnMemorySoon()
	return e.wr, nil
}

// WaitReady waits for boot and returns its error.
func (e *Engine) WaitReady(ctx context.Context) error {
	select {
	case <-e.ready:
		return e.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State says where the engine's boot is: "starting", "ready" or "failed".
func (e *Engine) State() string {
	select {
	case <-e.ready:
		if e.err != nil {
			return "failed"
		}
		return "ready"
	default:
		return "starting"
	}
}

// Lang returns Lang.
func (e *Engine) Lang() core.Lang { return Lang }

// Available waits for boot to finish and returns its error. A compile
// always ends (a cold one takes seconds, much longer under the race
// detector on a busy machine), so the wait is only a guard against a hang.
func (e *Engine) Available() error {
	select {
	case <-e.ready: // booted: no timer to arm and stop on every call
		if e.err != nil {
			return e.err
		}
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if err := e.WaitReady(ctx); err != nil {
			return err
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("python engine is closed")
	}
	return nil
}

// Parked is how many pooled interpreters wait for a one-shot (0 before
// boot has finished).
func (e *Engine) Parked() int {
	select {
	case <-e.ready:
	default:
		return 0
	}
	if e.pool == nil {
		return 0
	}
	return e.pool.Size()
}

// Commit makes the pool follow the live size. Before boot has finished
// there is no pool yet (it starts with the live size).
func (e *Engine) Commit(*configsvc.Snapshot) {
	select {
	case <-e.ready:
	default:
		return
	}
	if e.pool != nil {
		e.pool.Kick()
	}
	// A shared configuration is not refused for a path this host lacks
	// (configsvc.HostPathProblems): say so here, once per value.
	paths := e.config().PythonPath
	if key := strings.Join(paths, "\x00"); key != e.pathWarned.Swap(key) {
		for _, p := range configsvc.HostPathProblems(paths) {
			e.log.Warn("python_path entry cannot be mounted on this host; python imports from it will fail", "entry", p.Pointer, "problem", p.Text)
		}
	}
}

var _ core.Committer = (*Engine)(nil)

// config is the engine's current configuration (pool size, the bridge of
// guest calls no routed call made, the budget of a replay no call waits for).
func (e *Engine) config() *configsvc.Config { return &e.opts.Live().Config }

// Close stops the pool and every runtime.
func (e *Engine) Close() {
	<-e.ready
	e.mu.Lock()
	e.closed = true
	e.memory.Stop()
	wr := e.wr
	e.mu.Unlock()
	if e.pool != nil {
		e.pool.Close()
	}
	// Stop every interpreter before its runtime closes under it.
	e.mu.Lock()
	ips := make([]*interp, 0, len(e.live))
	for ip := range e.live {
		ips = append(ips, ip)
	}
	e.mu.Unlock()
	for _, ip := range ips {
		ip.dispose()
	}
	// Disposals started before the close finish now; no directory the
	// engine created outlives it, whatever the guests wrote there.
	e.bg.Wait()
	e.bgPool.Close()
	e.pagemap.close()
	e.mu.Lock()
	dirs := e.workDirs
	e.workDirs = map[string]bool{}
	e.mu.Unlock()
	for dir := range dirs {
		_ = os.RemoveAll(dir)
	}
	if wr != nil {
		_ = wr.rt.Close(context.Background())
	}
}

// clampMem applies docs/behaviour.md#runtimes-memory-mb to a request's memory_mb.
func clampMem(m uint32) int64 {
	if m == 0 {
		return defaultMemMB
	}
	v := int64(m)
	if v < minMemMB {
		v = minMemMB
	}
	if v > maxMemMB {
		v = maxMemMB
	}
	return v
}

// tempRoot is where a runtime's /work and /out are created: the
// configuration's scratch_root, or the system's temporary directory.
func tempRoot(c *configsvc.Config) string {
	root := c.ScratchRootOrEmpty()
	if root != "" {
		_ = os.MkdirAll(root, 0o700)
	}
	return root
}

// newWorkDir creates a private, empty /work on the host.
func (e *Engine) newWorkDir(c *configsvc.Config) (string, error) {
	root := tempRoot(c)
	if e.opts.Dirs != nil {
		var err error
		if root, err = e.opts.Dirs.Under(root); err != nil {
			return "", fmt.Errorf("create /work: %w", err)
		}
	}
	dir, err := os.MkdirTemp(root, "iii-python-work-")
	if err != nil {
		return "", fmt.Errorf("create /work: %w", err)
	}
	_ = os.Chmod(dir, 0o700)
	e.mu.Lock()
	e.workDirs[dir] = true
	e.mu.Unlock()
	return dir, nil
}

// returnMemorySoon schedules one return of freed memory to the system a
// little later (tuning.MemoryReturner): after interpreters were disposed of
// (their linear memory is unmapped at once, the Go heap they used is not)
// and after the module was loaded at boot.
func (e *Engine) returnMemorySoon() { e.memory.Soon() }

// removeWorkDir deletes a /work directory and forgets it.
func (e *Engine) removeWorkDir(dir string) {
	_ = os.RemoveAll(dir)
	e.mu.Lock()
	delete(e.workDirs, dir)
	e.mu.Unlock()
}

// background runs fn off the caller's path; Close waits for it. After
// Close it runs at once.
func (e *Engine) background(fn func()) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		fn()
		return
	}
	e.bg.Add(1)
	e.mu.Unlock()
	e.bgPool.Go(func() {
		defer e.bg.Done()
		fn()
	})
}

// maxIdleBackground is how many background goroutines wait between
// disposals and resets: one per interpreter the pool usually has out.
const maxIdleBackground = 16

// acquire takes one of the worker-wide execution permits, waiting under ctx.
func (e *Engine) acquire(ctx context.Context) bool {
	select {
	case e.gate <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (e *Engine) release() { <-e.gate }

// NewRuntime hands out a pooled interpreter (default memory) or boots one.
func (e *Engine) NewRuntime(ctx context.Context, ro core.RuntimeOptions) (core.Runtime, error) {
	if err := e.Available(); err != nil {
		return nil, e.Unavailable(err)
	}
	mem := clampMem(ro.MemoryMB)
	var ip *interp
	loan := false
	if mem == defaultMemMB && e.pool != nil {
		if ro.OneShot {
			// A one-shot gives its interpreter back reset (see recycle),
			// so it is borrowed: the pool boots no replacement meanwhile.
			// With every interpreter out on loan, one coming back within
			// recycleWait beats booting a new one (~0.3 s of CPU).
			ip, loan = e.pool.BorrowWait(ctx, nil, recycleWait)
		} else {
			ip, _ = e.pool.Take(nil)
		}
	}
	if ip == nil {
		cfg := ro.Config // the call's snapshot decides where its directories go
		if cfg == nil {
			cfg = e.config()
		}
		dir, err := e.newWorkDir(cfg)
		if err != nil {
			return nil, core.AsError(err, core.FnRun)
		}
		if ip, err = e.bootInterp(ctx, mem, dir); err != nil {
			e.removeWorkDir(dir)
			return nil, core.AsError(err, core.FnRun)
		}
		if ro.OneShot && mem == defaultMemMB && e.pool != nil {
			// Snapshotted before any tenant code, it is recycled like a
			// pooled one afterwards and may stay in the pool (Adopt): with
			// kept runtimes draining the pool, one-shots would otherwise
			// boot an interpreter each.
			switch err := ip.takeSnapshot(ctx); {
			case err == nil:
				e.pool.Adopt()
				loan = true
			case ip.dead():
				// A check turn failed and the interpreter is gone (see
				// takeSnapshot): this one-shot gets a fresh one, unchecked.
				if ip, err = e.bootInterp(ctx, mem, dir); err != nil {
					e.removeWorkDir(dir)
					return nil, core.AsError(err, core.FnRun)
				}
			}
		}
	}
	return &pyRuntime{e: e, ip: ip, loan: loan, once: ro.OneShot, workDir: ip.workDir, memMB: mem, namespace: ro.Namespace,
		owner: "python:" + ro.Namespace, alive: true, turn: make(chan struct{}, 1), fns: map[string]bool{}, broken: map[string]string{}}, nil
}
