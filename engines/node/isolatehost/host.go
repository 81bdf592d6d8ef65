package isolatehost

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/limits"
	"hash"
	"io"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	"github.com/code-runner-go/code-runner/internal/jsonx"

	_ "embed"

	v8 "github.com/tommie/v8go"

	_ "github.com/code-runner-go/code-runner/internal/v8compat"
)

//go:embed prelude.js
var preludeSource string

// hint is what String(iii) returns (docs/behaviour.md#guest-iii-node).
const hint = "[iii: code-runner host client. e.g. await iii.trigger({ function_id: 'worker::fn', payload: {} }); also iii.registerFunction(id, handler, options?), iii.registerTrigger(input), iii.registerTriggerType(triggerType, handler), iii.unregisterTriggerType(id), iii.namespace (the prefix this runtime may register under), iii.files (a private scratch directory when enabled) and iii.shutdown(), which throws by design]"

// Console caps per call (docs/behaviour.md#node-console).
const (
	consoleMaxLines = 1000
	consoleMaxBytes = 262144
	consoleNote     = "[code-runner] log output truncated at 1000 lines / 262144 bytes; further console output is dropped"
	detachedMax     = 256 << 10
	maxInflight     = 32
)

// HostInput is the host's end of the parent → host pipe. Read deadlines
// are how the single host goroutine wakes for task deadlines while idle.
type HostInput interface {
	io.Reader
	SetReadDeadline(t time.Time) error
}

// RunHost is the isolate-host process: one V8 isolate, driven by framed
// messages on in and answering on out. It returns the process exit status.
// The worker starts it as a child process (see Options.HostArgv); it never
// runs in the worker process itself.
//
// One goroutine does everything — reads frames, runs V8, writes answers —
// so a message reaches the isolate without waking a second thread (a
// goroutine handoff costs tens of µs on a quiet machine, several times the
// pipe itself).
func RunHost(in HostInput, out io.Writer) int {
	if err := in.SetReadDeadline(time.Time{}); err != nil {
		fmt.Fprintln(os.Stderr, "isolate host: stdin does not support read deadlines:", err)
		return 5
	}
	h := &host{
		out:   &hostproto.FrameWriter{W: out},
		in:    in,
		fr:    hostproto.NewFrameReader(in),
		tasks: map[int64]*hostTask{},
		calls: map[int64]bool{},
		mem:   newSelfMemory(),

		callOwner: map[int64]int64{},
		unitCache: map[string][]byte{},

		unitCacheMade: map[string]int{},
	}
	var names []string
	for _, p := range jsenv.Packages() {
		names = append(names, p.Name)
	}
	h.packageList = strings.Join(names, ",")
	h.envOff = os.Getenv("CODE_RUNNER_BENCH_NO_JSENV") == "1"
	h.dropRunState()
	h.procs = runtime.GOMAXPROCS(0)
	h.procsNow = h.procs
	h.guard = &guard{
		terminate: func() { h.iso.TerminateExecution() },
		overMemory: func() bool {
			limit := h.memLimitKB.Load()
			return limit > 0 && h.mem.guestKB() > limit
		},
		hardStop: func(why string) {
			if h.detachedEntry {
				fmt.Fprintln(os.Stderr, "isolate host: guest code running after its call had ended did not stop (", why, ")")
				os.Exit(hostproto.ExitDetached)
			}
			if why == firedMemory {
				fmt.Fprintln(os.Stderr, "isolate host: guest memory over its cap (out of memory)")
				os.Exit(9)
			}
			fmt.Fprintln(os.Stderr, "isolate host: guest code did not stop at its deadline")
			os.Exit(10)
		},
	}
	return h.loop()
}

type hostTask struct {
	id       int64
	kind     string
	deadline time.Time
}

type host struct {
	outMu sync.Mutex
	out   *hostproto.FrameWriter

	in       HostInput
	fr       *hostproto.FrameReader
	backlog  []*hostproto.Msg // frames read while waiting for a sync reply, in order
	inErr    error            // the input ended (EOF or broken); set once
	nextCall int64
	calls    map[int64]bool // async iii.trigger calls awaiting a reply

	iso       *v8.Isolate
	ctx       *v8.Context
	api       *v8.Object
	requireFn *v8.Value // the prelude's require, passed to every run
	// packageList is the built-in npm packages' names, comma-separated.
	packageList string
	// envOff builds isolates without the JavaScript environment (contract
	// §25): the baseline of BenchmarkNodeEnvironmentCost, never a product
	// setting (set by CODE_RUNNER_BENCH_NO_JSENV=1 in the host's
	// environment, which the worker never gives a host).
	envOff    bool
	heapLimit uint64
	namespace string
	files     *scratch

	// preludeCache is V8's code cache of the prelude, made by this process
	// once its first isolate had run the prelude and the warm-up, and
	// given to every later isolate's compile (nil until then, and again
	// after V8 rejected it). preludeCached says whether the current
	// isolate compiled the prelude from it. noPreludeCache turns the cache
	// off (BenchmarkRecycle's baseline).
	preludeCache   []byte
	preludeCached  bool
	noPreludeCache bool

	tasks    map[int64]*hostTask
	runTask  int64
	inflight int

	stdout, stderr strings.Builder
	lines, bytes   int
	truncated      bool
	detached       int

	// guard watches every entry into the isolate (deadline, memory).
	guard *guard
	mem   *selfMemory
	// memLimitKB is the guest's memory cap (0 until bound): the guest
	// memory measured after the isolate was built, plus heap and off-heap.
	memLimitKB  atomic.Int64
	guestBaseKB int64
	// Work that runs with no call in flight (a callback after its run
	// returned) runs under the last call's budget, else maxBudget — one
	// budget for all of it between two calls, not one per entry:
	// detachedLeft is what is left of it (detachedSet false: untouched).
	lastBudget   time.Duration
	maxBudget    time.Duration
	detachedLeft time.Duration
	detachedSet  bool
	// detachedEntry says the current entry runs with no task in flight.
	detachedEntry bool

	// procs is the GOMAXPROCS the host started with (the worker starts it
	// with one); procsNow what it runs with (keptProcs while bound to a
	// kept runtime).
	procs, procsNow int

	// The JavaScript environment (env.go, timers.go): owner is the task
	// the running guest code works for; callOwner the task each pending
	// iii.trigger call was made for; held the finished tasks waiting for
	// their timers; uncaught the first uncaught error of each task.
	owner      int64
	callOwner  map[int64]int64
	timers     *timerState
	held       map[int64]doneRecord
	uncaught   map[int64]string
	exitReq    *exitRequest
	exitCodes  map[int64]int       // process.exitCode set by each task's work
	hashes     map[int64]hash.Hash // digests being fed (crypto.hashOpen)
	hashSeq    int64
	kept       bool
	origin     time.Time // performance.now()'s zero (monotonic)
	originWall time.Time // performance.timeOrigin
	// unitCache holds V8's code cache of each unit this process compiled
	// (compiled code only, never state); pendingCaches the units first
	// compiled in the current entry.
	unitCache     map[string][]byte
	unitCacheMade map[string]int
	pendingCaches []pendingCache
	// lastIO is when the loop last looked at its input while timers kept
	// it busy.
	lastIO time.Time

	// vals are the V8 values the host created or received during the
	// current entry; they are released when it ends (v8go keeps every value
	// alive until its context closes otherwise).
	vals []*v8.Value
	// nativeVals are the values native calls made (their answers),
	// released at the next native call; nativeDepth counts native calls
	// on the stack.
	nativeVals  []*v8.Value
	nativeDepth int
}

// Frame budgets: what may cross to the parent inside one frame.
const (
	frameBudget     = hostproto.MaxFrame / 2 // a result that must pass whole (handler results are not capped)
	errorTextBudget = hostproto.MaxFrame / 8 // error text (JSON escaping may grow it up to 6x)
)

func (h *host) send(m *hostproto.Msg) {
	h.outMu.Lock()
	defer h.outMu.Unlock()
	if err := h.out.Write(m); err != nil {
		os.Exit(3) // the worker is gone
	}
}

// readUntil reads the next frame, giving up at deadline (zero: never) with
// an error for which os.IsTimeout is true. A frame cut by the deadline is
// kept and completed by the next read.
func (h *host) readUntil(deadline time.Time) (*hostproto.Msg, error) {
	if h.inErr != nil {
		return nil, h.inErr
	}
	if err := h.in.SetReadDeadline(deadline); err != nil {
		h.inErr = err
		return nil, err
	}
	m, err := h.fr.Read()
	if err != nil && !os.IsTimeout(err) {
		h.inErr = err
	}
	return m, err
}

// next returns the next message to handle: the backlog first, else the
// pipe, waking at the earliest task deadline (a timeout error then).
func (h *host) next() (*hostproto.Msg, error) {
	if len(h.backlog) > 0 {
		m := h.backlog[0]
		h.backlog = h.backlog[1:]
		return m, nil
	}
	var next time.Time
	if tk := h.earliest(); tk != nil {
		next = tk.deadline
	}
	if due := h.nextTimerDue(); !due.IsZero() && (next.IsZero() || due.Before(next)) {
		next = due
		if !due.After(time.Now()) {
			// A timer is due: give the input a moment first once a
			// millisecond, so replies and new tasks are not starved by a
			// busy interval.
			if time.Since(h.lastIO) < timerIOGlance {
				return nil, errTimerDue
			}
			h.lastIO = time.Now()
			next = time.Now().Add(20 * time.Microsecond)
		}
	}
	return h.readUntil(next)
}

// timerIOGlance is how often a loop kept busy by due timers looks at its
// input. A look costs up to a millisecond in a kept host (its wait in
// poll(2) has millisecond steps), so at most a fifth of a busy loop's time.
const timerIOGlance = 5 * time.Millisecond

// errTimerDue is next's answer when a timer is due and the input was
// looked at moments ago.
var errTimerDue = os.ErrDeadlineExceeded

// earliest returns the active task with the nearest deadline, or nil.
func (h *host) earliest() *hostTask {
	var first *hostTask
	for _, tk := range h.tasks {
		if first == nil || tk.deadline.Before(first.deadline) {
			first = tk
		}
	}
	return first
}

func (h *host) loop() int {
	for {
		m, err := h.next()
		if err != nil {
			if os.IsTimeout(err) || err == errTimerDue {
				if h.expireIdle() {
					return 0
				}
				if code, exit := h.fireTimers(); exit {
					return code
				}
				continue
			}
			return 0
		}
		if code, exit := h.handle(m); exit {
			return code
		}
	}
}

// expireIdle kills the isolate when a task's deadline passed while no JS was
// running (a promise that never settles). It reports whether the host must exit.
func (h *host) expireIdle() bool {
	if tk := h.earliest(); tk != nil && !tk.deadline.After(time.Now()) {
		h.die(hostproto.StatusTimeout, tk.id)
		return true
	}
	return false
}

// die reports the isolate's death: culprit gets status, every other active
// task hostproto.StatusDead.
func (h *host) die(status string, culprit int64) {
	for id := range h.tasks {
		st := hostproto.StatusDead
		if id == culprit || culprit == 0 {
			st = status
		}
		m := &hostproto.Msg{T: "done", Task: id, Status: st}
		if id == h.runTask {
			m.Stdout, m.Stderr = h.stdout.String(), h.stderr.String()
		}
		h.send(m)
	}
	h.tasks = map[int64]*hostTask{}
}

func (h *host) handle(m *hostproto.Msg) (int, bool) {
	switch m.T {
	case "init":
		if err := h.init(m.HeapMB, m.FilesOn); err != nil {
			h.send(&hostproto.Msg{T: "fatal", Error: err.Error()})
			return 4, true
		}
		h.guestBaseKB = h.mem.guestKB()
		h.send(&hostproto.Msg{T: "ready"})
	case "bind":
		if err := h.bind(m.Namespace, m.Files); err != nil {
			h.send(&hostproto.Msg{T: "fatal", Error: err.Error()})
			return 4, true
		}
		h.memLimitKB.Store(h.guestBaseKB + int64(h.heapLimit>>10) + m.ExternalMB<<10)
		h.maxBudget = time.Duration(m.BudgetMS) * time.Millisecond
		h.setKept(m.Kept)
	case "run":
		h.startTask(m, "run")
		h.runTask = m.Task
		h.stdout.Reset()
		h.stderr.Reset()
		h.lines, h.bytes, h.truncated, h.detached = 0, 0, false, 0
		return h.enter(func() error {
			return h.runMain(m.Task, m.Code)
		}, m.Task)
	case "invoke":
		h.startTask(m, "invoke")
		return h.enter(func() error {
			return h.call("invoke", h.num(m.Task), h.str(m.FunctionID), h.str(string(orNull(m.Payload))))
		}, m.Task)
	case "define":
		h.startTask(m, "define")
		return h.define(m)
	case "treg", "tunreg":
		h.startTask(m, m.T)
		method := "triggerRegister"
		if m.T == "tunreg" {
			method = "triggerUnregister"
		}
		return h.enter(func() error {
			return h.call(method, h.num(m.Task), h.str(m.TypeID), h.str(string(orNull(m.Binding))))
		}, m.Task)
	case "reply":
		if !h.calls[m.Call] {
			return 0, false // a late answer to a call that gave up, or a forgery
		}
		delete(h.calls, m.Call)
		h.inflight--
		owner := h.callOwner[m.Call]
		delete(h.callOwner, m.Call)
		if _, ok := h.tasks[owner]; !ok {
			owner = 0
		}
		return h.enterAs(owner, func() error {
			text := string(m.Value)
			if !m.OK {
				text = m.Error
			}
			return h.call("settle", h.num(m.Call), h.boolean(m.OK), h.str(text))
		})
	case "reset":
		// Recycle this process for another runtime: a brand-new isolate,
		// nothing of the previous runtime's state kept. The new one is
		// built before the old one is disposed of: V8 shares the read-only
		// heap between the isolates of a process only while one of them
		// lives, and rebuilding it (deserializing it, attaching the
		// sandbox's pointer tables to it, re-protecting its pages) was
		// most of a recycle.
		oldCtx, oldIso := h.ctx, h.iso
		h.api, h.files, h.namespace, h.requireFn = nil, nil, "", nil
		h.tasks = map[int64]*hostTask{}
		h.runTask, h.inflight, h.detached = 0, 0, 0
		h.calls = map[int64]bool{}
		h.callOwner = map[int64]int64{}
		h.dropRunState()
		h.exitReq, h.owner = nil, 0
		h.memLimitKB.Store(0)
		h.lastBudget, h.maxBudget = 0, 0
		h.detachedLeft, h.detachedSet = 0, false
		h.stdout.Reset()
		h.stderr.Reset()
		h.lines, h.bytes, h.truncated = 0, 0, false
		h.setKept(false)
		err := h.init(m.HeapMB, m.FilesOn)
		oldCtx.Close()
		oldIso.Dispose()
		if err != nil {
			h.send(&hostproto.Msg{T: "fatal", Error: err.Error()})
			return 4, true
		}
		// The guest's memory baseline, taken without the old isolate.
		h.guestBaseKB = h.mem.guestKB()
		h.send(&hostproto.Msg{T: "ready"})
	case "exit":
		return 0, true
	}
	return 0, false
}

// keptProcs is the GOMAXPROCS of a host bound to a kept runtime. Its one
// goroutine then waits for the next message in a system call, holding its
// P (spinread.Reader.SetWaitInKernel); with a second P idle, the runtime's
// monitor then stays awake and backs off to a 10 ms tick while turns come,
// instead of going to sleep between turns and being woken by every V8
// entry's cgo call. A one-shot host keeps the one P it starts with: its
// work is one long V8 entry, which a second P slowed (docs/architecture.md,
// "Why does a kept host wait for its next message in the kernel?").
const keptProcs = 2

// setKept readies the host for the runtime it is bound to: a kept one
// gets keptProcs Ps and waits for its messages in the kernel (where its
// input can: spinread.Reader.SetWaitInKernel); any other runs with the Ps
// the host started with and waits on the runtime's poller, as a one-shot
// host always did.
func (h *host) setKept(kept bool) {
	h.kept = kept
	n := h.procs
	if kept {
		n = max(h.procs, keptProcs)
	}
	if h.procsNow != n {
		runtime.GOMAXPROCS(n)
		h.procsNow = n
	}
	if k, ok := h.in.(interface{ SetWaitInKernel(bool) }); ok {
		k.SetWaitInKernel(kept)
	}
}

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func (h *host) startTask(m *hostproto.Msg, kind string) {
	budget := time.Duration(m.BudgetMS) * time.Millisecond
	h.lastBudget = budget
	// A new call: the detached work after it gets its budget afresh.
	h.detachedLeft, h.detachedSet = budget, budget > 0
	h.tasks[m.Task] = &hostTask{id: m.Task, kind: kind, deadline: time.Now().Add(budget)}
}

// detachedBudget is how long guest code may still run with no call in
// flight before the next call: the last call's budget (else the bound
// runtime's, else 30 s), less what detached entries used since that call
// began (contract §22a.7; every entry's time counts, so an interval of
// short callbacks or a chain of bridge replies is bounded in total).
func (h *host) detachedBudget() time.Duration {
	if !h.detachedSet {
		h.detachedSet = true
		switch {
		case h.lastBudget > 0:
			h.detachedLeft = h.lastBudget
		case h.maxBudget > 0:
			h.detachedLeft = h.maxBudget
		default:
			h.detachedLeft = 30 * time.Second
		}
	}
	return h.detachedLeft
}

// init builds the isolate, its context and the prelude — everything a
// pooled host can do before it is handed to a runtime.
func (h *host) init(heapMB int64, filesOn bool) error {
	h.heapLimit = uint64(heapMB) << 20
	h.origin, h.originWall = time.Now(), time.Now()
	h.iso = v8.NewIsolate(v8.WithResourceConstraints(0, h.heapLimit))
	h.ctx = v8.NewContext(h.iso)
	native := v8.NewFunctionTemplate(h.iso, h.native)
	script, err := h.compilePrelude()
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	factory, err := script.Run(h.ctx)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	fn, err := factory.AsFunction()
	if err != nil {
		return fmt.Errorf("prelude is not a function: %w", err)
	}
	api, err := fn.Call(v8.Undefined(h.iso), native.GetFunction(h.ctx), h.str(""), h.str(hint), h.boolean(filesOn), h.str(h.packageList), h.boolean(!h.envOff))
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	if h.api, err = api.AsObject(); err != nil {
		return err
	}
	// Warm the paths every run takes (script compile, track, takeDone) so the
	// first tenant run does not pay for their lazy compilation.
	req, err := h.api.Get("require")
	if err != nil {
		return fmt.Errorf("prelude: no require: %w", err)
	}
	h.requireFn = req // kept for the isolate's life
	_ = h.runMain(0, "")
	if d, err := h.api.MethodCall("takeDone"); err == nil {
		h.keep(d)
	}
	h.releaseValues()
	if h.preludeCache == nil && !h.noPreludeCache {
		// Made after the warm-up, so the functions every run calls are
		// in it compiled, not only the prelude's top level.
		if cd := script.CreateCodeCache(); len(cd.Bytes) > 0 {
			h.preludeCache = cd.Bytes
		}
	}
	return nil
}

// compilePrelude compiles the prelude for the current isolate, from the
// process's code cache when there is one. A recycle builds a new isolate
// for every runtime; with the cache its prelude costs about half as much
// (docs/architecture.md, "Why compile the prelude from V8's code cache?"). The cache is made in this process from this
// binary's own prelude before any guest code runs.
func (h *host) compilePrelude() (*v8.UnboundScript, error) {
	h.preludeCached = false
	if h.preludeCache == nil {
		return h.iso.CompileUnboundScript(preludeSource, "node:internal/code-runner", v8.CompileOptions{})
	}
	cd := &v8.CompilerCachedData{Bytes: h.preludeCache}
	script, err := h.iso.CompileUnboundScript(preludeSource, "node:internal/code-runner", v8.CompileOptions{CachedData: cd})
	if err != nil {
		return nil, err
	}
	if cd.Rejected {
		h.preludeCache = nil // compiled from source; init makes a new cache
	} else {
		h.preludeCached = true
	}
	return script, nil
}

// bind gives a booted host its runtime: the namespace and the scratch
// directory, both chosen at hand-out.
func (h *host) bind(namespace string, fc *hostproto.FilesConf) error {
	h.namespace = namespace
	if fc != nil {
		h.files = &scratch{dir: fc.Dir, maxBytes: fc.MaxBytes, maxFiles: fc.MaxFiles}
	}
	err := h.call("bind", h.str(namespace))
	h.releaseValues()
	return err
}

// keep records a value to release when the current entry ends.
func (h *host) keep(v *v8.Value) *v8.Value {
	if v != nil {
		if h.nativeDepth > 0 {
			h.nativeVals = append(h.nativeVals, v)
		} else {
			h.vals = append(h.vals, v)
		}
	}
	return v
}

// releaseValues releases every value kept during the entry.
func (h *host) releaseValues() {
	for _, v := range h.vals {
		v.Release()
	}
	h.vals = h.vals[:0]
	h.releaseNativeValues()
}

// releaseNativeValues releases what native calls made: once a native call
// has returned, V8 holds its own reference to what it answered, so a guest
// loop of host calls (timers, the clock) does not pile up handles until its
// entry ends.
func (h *host) releaseNativeValues() {
	for _, v := range h.nativeVals {
		v.Release()
	}
	h.nativeVals = h.nativeVals[:0]
}

// call invokes a method of the prelude's host API, releasing its result.
func (h *host) call(method string, args ...v8.Valuer) error {
	v, err := h.api.MethodCall(method, args...)
	h.keep(v)
	return err
}

func (h *host) num(n int64) *v8.Value {
	v, _ := v8.NewValue(h.iso, float64(n))
	return h.keep(v)
}

func (h *host) str(s string) *v8.Value {
	v, _ := v8.NewValue(h.iso, s)
	return h.keep(v)
}

func (h *host) boolean(b bool) *v8.Value {
	v, _ := v8.NewValue(h.iso, b)
	return h.keep(v)
}

// enter runs fn inside the isolate — the only way guest JavaScript runs —
// under the guard: the deadline of the earliest active task, or for work
// with no call in flight (a callback settling after its run returned) the
// detached budget, and the memory cap throughout. Finished tasks are taken
// from the prelude while still guarded (taking them must not run guest
// code, but if it ever did, it would be bounded too) and reported after.
// A termination the guard fired is a timeout or the memory cap; one we did
// not fire, or a raised heap limit, is the heap cap. Any of them kills the
// isolate, and the host exits; so does guest memory over the cap at the end
// of an entry.
func (h *host) enter(fn func() error, task int64) (int, bool) {
	return h.enterAs(task, func() error {
		err := fn()
		if err != nil && task != 0 && !isTermination(err) {
			// Thrown straight out of a compile or the wrapper (a
			// SyntaxError): the task's failure.
			h.uncaughtError(jsErrorText(err))
			return nil
		}
		return err
	})
}

// enterAs is enter for guest work done for owner (0: detached work): the
// timers it arms belong to owner, and an exception nothing caught fails
// owner. A task that finished waits here while a ref'd timer it owns is
// pending (contract §25.2); process.exit ends its task at once.
func (h *host) enterAs(owner int64, fn func() error) (int, bool) {
	earliest := h.earliest()
	start := time.Now()
	var deadline time.Time
	if earliest != nil {
		deadline = earliest.deadline
	} else {
		left := h.detachedBudget()
		if left <= 0 {
			// The detached budget is spent: the runtime ends as an entry
			// that overran it would, without running the guest again.
			h.releaseValues()
			h.send(&hostproto.Msg{T: "warn", Text: detachedOverrun})
			h.die(hostproto.StatusTimeout, 0)
			return hostproto.ExitDetached, true
		}
		deadline = start.Add(left)
	}
	h.detachedEntry = earliest == nil
	// A kill of a detached entry exits with ExitDetached: the worker
	// tombstones a kept runtime its own detached work destroyed.
	code := 0
	if earliest == nil {
		code = hostproto.ExitDetached
	}
	h.owner = owner
	h.guard.arm(deadline)
	err := fn()
	if earliest == nil {
		h.detachedLeft -= time.Since(start)
	}
	exit := h.exitReq
	h.exitReq = nil
	recs, cerr := h.takeDone()
	fired := h.guard.disarm()
	h.owner = 0
	// From here on only the host's own Go code runs: the records are
	// reported (a big result's frame can take a while) unguarded. The
	// kills come first: a process.exit that raced a deadline is a timeout.
	switch {
	case fired == firedDeadline && earliest != nil:
		h.releaseValues()
		h.die(hostproto.StatusTimeout, earliest.id)
		return code, true
	case fired == firedDeadline:
		h.releaseValues()
		h.send(&hostproto.Msg{T: "warn", Text: detachedOverrun})
		h.die(hostproto.StatusTimeout, 0)
		return code, true
	case fired == firedMemory, h.memoryOver():
		h.releaseValues()
		if earliest == nil {
			h.send(&hostproto.Msg{T: "warn", Text: "guest code running after its call had ended passed its memory cap; the runtime was destroyed"})
		}
		h.die(hostproto.StatusMemory, 0)
		return code, true
	}
	if exit != nil && isTermination(err) {
		err = nil // our own stop, not the heap cap
	}
	if h.iso.GetHeapStatistics().HeapSizeLimit > h.heapLimit+(h.heapLimit/2) || isTermination(err) || isTermination(cerr) {
		h.releaseValues()
		h.die(hostproto.StatusMemory, 0)
		return code, true
	}
	if exit != nil {
		h.exitTask(exit)
	}
	for _, r := range recs {
		if !preludeStatus[r.status] || (r.status == hostproto.StatusOK && !json.Valid([]byte(r.text))) {
			// Not a record the prelude makes: tenant code tampered with its
			// way home. The task fails; nothing of the record is believed.
			r = doneRecord{task: r.task, status: hostproto.StatusError, text: "Error: code-runner: the call's result record was tampered with"}
		}
		if msg, ok := h.uncaught[r.task]; ok {
			r = doneRecord{task: r.task, status: hostproto.StatusError, text: msg}
		}
		if r.status == hostproto.StatusOK && h.waitsForTimers(r.task) {
			h.held[r.task] = r
			continue
		}
		h.report(r)
	}
	// An uncaught error ends its task now, whatever it was waiting for,
	// and the timers it armed with it (node's process would have ended).
	for task, msg := range h.uncaught {
		delete(h.uncaught, task)
		delete(h.held, task)
		h.timers.dropOwnedBy(task)
		h.finish(task, hostproto.StatusError, msg, nil)
	}
	h.releaseHeld()
	h.makeCaches()
	h.releaseValues()
	return 0, false
}

// detachedOverrun is the worker's log line when guest work that ran after
// its call had ended used up its budget.
const detachedOverrun = "guest code running after its call had ended used up its budget (the last call's timeout, counted over all such work until the next call); the runtime was destroyed"

// preludeStatus lists the statuses the prelude's records may carry.
var preludeStatus = map[string]bool{
	hostproto.StatusOK: true, hostproto.StatusError: true, hostproto.StatusQuota: true, hostproto.StatusMissing: true,
	hostproto.StatusThrew: true, hostproto.StatusRefused: true,
}

// report answers one finished task.
func (h *host) report(r doneRecord) {
	if code := h.exitCodes[r.task]; r.status == hostproto.StatusOK && code != 0 && r.task == h.runTask {
		// process.exitCode = n: the run fails as if it had called exit(n).
		h.exitTask(&exitRequest{task: r.task, code: code})
		return
	}
	if r.status == hostproto.StatusOK {
		h.finish(r.task, hostproto.StatusOK, "", json.RawMessage(r.text))
	} else {
		h.finish(r.task, r.status, r.text, nil)
	}
}

// exitTask ends the task process.exit (or exitCode) was called for: code
// 0 succeeds with a null result, any other code is a failure. Detached
// work's exit ends nothing but that work.
func (h *host) exitTask(ex *exitRequest) {
	tk, ok := h.tasks[ex.task]
	if !ok || ex.task == 0 {
		return
	}
	delete(h.held, ex.task)
	delete(h.uncaught, ex.task)
	h.timers.dropOwnedBy(ex.task) // as node's process, its work ends with it
	switch {
	case tk.kind == "define" || tk.kind == "treg" || tk.kind == "tunreg":
		// A definition that exits has registered nothing.
		h.finish(ex.task, hostproto.StatusThrew, exitText(ex.code), nil)
	case ex.code == 0:
		h.finish(ex.task, hostproto.StatusOK, "", json.RawMessage("null"))
	case ex.task == h.runTask:
		h.finish(ex.task, hostproto.StatusExit, exitText(ex.code), nil)
	default:
		h.finish(ex.task, hostproto.StatusError, exitText(ex.code), nil)
	}
}

// memoryOver reports whether the guest holds more memory than its cap.
func (h *host) memoryOver() bool {
	limit := h.memLimitKB.Load()
	return limit > 0 && h.mem.guestKB() > limit
}

func isTermination(err error) bool {
	return err != nil && strings.Contains(err.Error(), "ExecutionTerminated")
}

// jsErrorText renders an error thrown straight out of RunScript (a
// SyntaxError, or a throw before the async wrapper began).
func jsErrorText(err error) string {
	var je *v8.JSError
	if errors.As(err, &je) {
		if je.StackTrace != "" {
			return je.StackTrace
		}
		return je.Message
	}
	return err.Error()
}

// doneRecord is one task the prelude finished.
type doneRecord struct {
	task         int64
	status, text string
}

// takeDone takes the tasks the prelude finished, reading the flat array its
// takeDone hands over (task, status, text, …) element by element.
func (h *host) takeDone() ([]doneRecord, error) {
	v, err := h.api.MethodCall("takeDone")
	if err != nil {
		return nil, err
	}
	h.keep(v)
	arr, err := v.AsObject()
	if err != nil {
		return nil, err
	}
	n := int(h.getIdx(arr, -1).Integer())
	var recs []doneRecord
	for i := 0; i+2 < n; i += 3 {
		recs = append(recs, doneRecord{task: h.getIdx(arr, i).Integer(), status: h.getIdx(arr, i+1).String(), text: h.getIdx(arr, i+2).String()})
	}
	return recs, nil
}

// getIdx reads arr[i] (i < 0: arr.length), keeping the value for release.
func (h *host) getIdx(arr *v8.Object, i int) *v8.Value {
	var v *v8.Value
	var err error
	if i < 0 {
		v, err = arr.Get("length")
	} else {
		v, err = arr.GetIdx(uint32(i))
	}
	if err != nil || v == nil {
		v, _ = v8.NewValue(h.iso, int32(0))
	}
	return h.keep(v)
}

func (h *host) finish(task int64, status, text string, result json.RawMessage) {
	if _, ok := h.tasks[task]; !ok {
		return
	}
	delete(h.tasks, task)
	// Cap here, before framing: a value too big for a frame would otherwise
	// never reach the parent. The configured caps (the call's own
	// snapshot) are the pipeline's, after this.
	if len(result) > frameBudget {
		result = capsfilter.ResultCap(result, frameBudget)
	}
	if len(text) > errorTextBudget {
		text = capsfilter.StreamCap(text, capsfilter.Stderr, errorTextBudget)
	}
	delete(h.exitCodes, task)
	m := &hostproto.Msg{T: "done", Task: task, Status: status, Error: text, Result: result}
	if task == h.runTask && !h.kept {
		// A one-shot's timers go with its isolate (contract §25.2).
		h.dropRunState()
	}
	if task == h.runTask {
		if h.truncated {
			h.stderr.WriteString(consoleNote + "\n")
		}
		m.Stdout, m.Stderr = h.stdout.String(), h.stderr.String()
		h.runTask = 0
	}
	h.send(m)
}

// native is the one function the prelude reaches the host through.
func (h *host) native(info *v8.FunctionCallbackInfo) *v8.Value {
	defer info.Release()
	if h.nativeDepth == 0 {
		h.releaseNativeValues() // the previous native call's answer is V8's now
	}
	h.nativeDepth++
	defer func() { h.nativeDepth-- }()
	args := info.Args()
	if len(args) < 1 {
		return nil
	}
	op := args[0].String()
	arg := ""
	if len(args) > 1 {
		arg = args[1].String()
	}
	if op == "log" {
		h.console(arg)
		return nil
	}
	if v, ok := h.envOp(op, args); ok {
		return v
	}
	var res nativeResult
	switch {
	case op == "trigger":
		res = h.trigger(arg)
	case op == "files.read":
		data, failed := h.filesRead(arg)
		if failed == nil {
			// The bytes as a one-byte string behind \x01 (see prelude.js).
			return h.str("\x01" + bytesToBinaryString(data))
		}
		res = *failed
	case op == "files.write":
		contents := ""
		if len(args) > 2 {
			contents = args[2].String()
		}
		res = h.filesWrite(arg, contents)
	case strings.HasPrefix(op, "files."):
		res = h.filesOp(strings.TrimPrefix(op, "files."), arg)
	default:
		res = h.syncCall(op, arg)
	}
	b, _ := jsonx.Marshal(res)
	return h.str(string(b))
}

// nativeResult is what native answers the prelude: {"v": value} or
// {"e": message, "k": kind, "q": quota}.
type nativeResult struct {
	V any    `json:"v,omitempty"`
	E string `json:"e,omitempty"`
	K string `json:"k,omitempty"`
	Q bool   `json:"q,omitempty"`
}

func fail(format string, args ...any) nativeResult {
	return nativeResult{E: fmt.Sprintf(format, args...), K: "Error"}
}

func (h *host) console(arg string) {
	level, text, _ := strings.Cut(arg, "\x00")
	h.consoleWrite(level, text, true)
}

// consoleWrite adds text to the call's stream of level (a console call's
// line when newline, else process.stdout/stderr's raw write), counted
// against the caps in bytes of text and in \n-separated lines (§4.3); with
// no call in flight it goes to the worker's log.
func (h *host) consoleWrite(level, text string, newline bool) {
	if h.runTask == 0 {
		h.detachedLog(level, text)
		return
	}
	if h.truncated {
		return
	}
	lines := strings.Count(text, "\n")
	if newline {
		lines++
	}
	if h.lines+lines > consoleMaxLines || h.bytes+len(text) > consoleMaxBytes {
		h.truncated = true
		return
	}
	h.lines += lines
	h.bytes += len(text)
	out := &h.stderr
	if level == "log" {
		out = &h.stdout
	}
	out.WriteString(text)
	if newline {
		out.WriteByte('\n')
	}
}

// detachedLog sends console output of work no call waits for to the
// worker's log, cut at what is left of the runtime's detachedMax.
func (h *host) detachedLog(level, text string) {
	left := detachedMax - h.detached
	if left <= 0 {
		return
	}
	if len(text) > left {
		text = strings.ToValidUTF8(text[:left], "")
	}
	h.detached += len(text)
	h.send(&hostproto.Msg{T: "log", Level: level, Text: text})
}

// currentTask is the task guest code is running for — its deadline is the
// one guest bus calls are clamped to, its id tells the worker whose call
// (and trace) a guest call belongs to: the task whose entry is on the
// stack, or else (a continuation settling) the latest one; nil with no
// task in flight.
func (h *host) currentTask() *hostTask {
	if tk, ok := h.tasks[h.runTask]; ok {
		return tk
	}
	var latest *hostTask
	for _, tk := range h.tasks {
		if latest == nil || tk.id > latest.id {
			latest = tk
		}
	}
	return latest
}

type triggerHead struct {
	FunctionID string   `json:"function_id"`
	Action     *string  `json:"action"`
	Timeout    *float64 `json:"timeout"`
	TimeoutMS  *float64 `json:"timeout_ms"`
}

func (h *host) trigger(arg string) nativeResult {
	headText, payload, _ := strings.Cut(arg, "\x00")
	var head triggerHead
	if err := json.Unmarshal([]byte(headText), &head); err != nil {
		return fail("malformed iii request: %v", err)
	}
	if n := len(head.FunctionID); n > limits.MaxFunctionIDBytes {
		return fail("%s", limits.OverLimit("function id", n, limits.MaxFunctionIDBytes))
	}
	if n := len(payload); n > limits.MaxPayloadBytes {
		return fail("%s", limits.OverLimit("payload", n, limits.MaxPayloadBytes))
	}
	var action json.RawMessage
	if head.Action != nil {
		if n := len(*head.Action); n > limits.MaxActionBytes {
			return fail("%s", limits.OverLimit("action", n, limits.MaxActionBytes))
		}
		if *head.Action == "void" {
			action = json.RawMessage(`{"type":"void"}`)
		} else {
			var v map[string]any
			if err := json.Unmarshal([]byte(*head.Action), &v); err != nil {
				return fail("invalid action %q: %v", *head.Action, err)
			}
			action = json.RawMessage(*head.Action)
		}
	}
	if h.inflight >= maxInflight {
		return fail("too many concurrent iii.trigger calls (limit 32); await earlier calls before making more")
	}
	requested := head.TimeoutMS
	if requested == nil {
		requested = head.Timeout
	}
	var reqMS int64
	if requested != nil && *requested > 0 {
		reqMS = int64(*requested)
		if reqMS < 1 {
			reqMS = 1
		}
	}
	args, _ := jsonx.Marshal(map[string]any{"function_id": head.FunctionID, "payload": json.RawMessage(payload), "action": action, "timeout_ms": reqMS})
	h.nextCall++
	id := h.nextCall
	h.calls[id] = true
	h.callOwner[id] = h.activeOwner()
	h.inflight++
	var dl, task int64
	if tk := h.currentTask(); tk != nil {
		dl, task = tk.deadline.UnixMilli(), tk.id
	}
	h.send(&hostproto.Msg{T: "call", Call: id, Op: "trigger", Args: args, DeadlineMS: dl, Task: task})
	return nativeResult{V: id}
}

// syncCall asks the worker to perform op and waits for its answer
// (registrations, which must claim ids in the worker's registry).
func (h *host) syncCall(op, arg string) nativeResult {
	h.nextCall++
	id := h.nextCall
	var task int64 // the call it serves, so the worker's own work for it joins that call's trace
	if tk := h.currentTask(); tk != nil {
		task = tk.id
	}
	h.send(&hostproto.Msg{T: "call", Call: id, Op: op, Args: json.RawMessage(orEmptyObject(arg)), Task: task})
	// Wait here, inside the native callback, reading the pipe ourselves;
	// everything else that arrives meanwhile is handled afterwards, in order.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := h.readUntil(deadline)
		if err != nil {
			if os.IsTimeout(err) {
				return fail("the worker did not answer %s in time", op)
			}
			return fail("the worker is gone")
		}
		if r.T != "reply" || r.Call != id {
			h.backlog = append(h.backlog, r)
			continue
		}
		if !r.OK {
			return fail("%s", r.Error)
		}
		var v any
		if len(r.Value) > 0 {
			_ = json.Unmarshal(r.Value, &v)
		}
		return nativeResult{V: v}
	}
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// define compiles a register_function source as a factory and lets the
// prelude call it and register the handler (docs/behaviour.md#register-node-source).
func (h *host) define(m *hostproto.Msg) (int, bool) {
	return h.enter(func() error {
		v, err := h.compileSource(m.Code)
		if err != nil {
			h.finish(m.Task, hostproto.StatusParse, jsErrorText(err), nil)
			return nil
		}
		_, err = h.api.MethodCall("define", h.num(m.Task), h.str(m.FunctionID), v, h.str(string(orNull(m.Payload))))
		return err
	}, m.Task)
}

// CommonJS's names, which a run's wrapper (the body of an async arrow,
// contract §4.2, §25.5) and a module file's pass; a wrapper opens on the
// same line as the code's first line so that line numbers stay the
// tenant's.
var runParams = []string{"exports", "require", "module", "__filename", "__dirname"}

// A source's wrapper: a factory that leaves `handler` (or exports it).
var sourceParams = []string{"handler", "exports", "require", "module"}

// redeclared is V8's compile error for code that declares a name its
// wrapper passes as a parameter.
var redeclared = regexp.MustCompile(`^SyntaxError: Identifier '([\w$]+)' has already been declared`)

// compileWrapped compiles src inside a wrapper opened by open(params) and
// closed by tail. Code that declares one of the wrapper's parameter names
// itself (const __dirname = … in an ES module, as node allows: its
// wrapper's parameters are not in the code's scope) keeps its own
// declaration: that parameter is renamed out of the way and the wrapper
// compiled again. It only compiles: the caller runs the script, and an
// error the script throws is never taken for a compile error.
func (h *host) compileWrapped(params []string, open func(string) string, src, tail, origin string) (*v8.UnboundScript, error) {
	names := slices.Clone(params)
	for {
		script, err := h.iso.CompileUnboundScript(open(strings.Join(names, ", "))+src+tail, origin, v8.CompileOptions{})
		if err == nil {
			return script, nil
		}
		m := redeclared.FindStringSubmatch(jsErrorText(err))
		at := -1
		if m != nil {
			at = slices.Index(names, m[1])
		}
		// Each parameter is renamed at most once (code that declares the
		// new name too gets V8's error).
		if at < 0 || names[at] != params[at] {
			return nil, err
		}
		names[at] = "__crUnused" + strconv.Itoa(at)
	}
}

// runMain runs a run's code as node's main module: the compiled arrow is
// called with (exports, require, module, __filename, __dirname) and its
// promise tracked as task.
func (h *host) runMain(task int64, code string) error {
	if h.envOff {
		v, err := h.ctx.RunScript("(async () => {"+code+"\n})()", "code.js")
		if err != nil {
			return err
		}
		h.keep(v)
		return h.call("track", h.num(task), v)
	}
	fnv, err := h.compileRun(code)
	if err != nil {
		return err
	}
	fn, err := fnv.AsFunction()
	if err != nil {
		return err
	}
	mod, err := h.api.MethodCall("mainModule")
	if err != nil {
		return err
	}
	h.keep(mod)
	modObj, err := mod.AsObject()
	if err != nil {
		return err
	}
	exports, err := modObj.Get("exports")
	if err != nil {
		return err
	}
	h.keep(exports)
	p, err := fn.Call(v8.Undefined(h.iso), exports, h.requireFn, mod, h.str("/scratch/<code>"), h.str("/scratch"))
	if err != nil {
		return err
	}
	h.keep(p)
	return h.call("track", h.num(task), p)
}

// runWrapped runs a wrapper compileWrapped compiled, which makes its
// function.
func (h *host) runWrapped(script *v8.UnboundScript, err error) (*v8.Value, error) {
	if err != nil {
		return nil, err
	}
	return script.Run(h.ctx)
}

// compileRun compiles a run's code as plain JavaScript, or after the
// transform when it uses module syntax, TypeScript or a dynamic import.
func (h *host) compileRun(code string) (*v8.Value, error) {
	return h.compileWith(code, func(src string) (*v8.Value, error) {
		return h.runWrapped(h.compileWrapped(runParams, func(p string) string { return "(async (" + p + ") => {" }, src, "\n})", "code.js"))
	})
}

// compileSource compiles a register_function source as a factory that
// leaves `handler` (or exports it); the prelude's define calls it.
func (h *host) compileSource(code string) (*v8.Value, error) {
	return h.compileWith(code, func(src string) (*v8.Value, error) {
		return h.runWrapped(h.compileWrapped(sourceParams, func(p string) string { return "(function (" + p + ") {" }, src,
			"\n;return typeof handler === 'undefined' ? undefined : handler;\n})", "source.js"))
	})
}

// dynamicImport finds a dynamic import(), which V8 cannot resolve here
// (v8go exposes no host import hook): such code is transformed.
var dynamicImport = regexp.MustCompile(`\bimport\s*\(`)

// compileWith compiles code with compile; when that fails with a
// SyntaxError, or the code uses import(), the prelude's transform (sucrase,
// run inside this isolate under the entry's deadline) rewrites it first.
// A transform that fails too gives V8's own error for code with no module
// or TypeScript syntax, else the transformer's.
func (h *host) compileWith(code string, compile func(string) (*v8.Value, error)) (*v8.Value, error) {
	var v8err error
	if !dynamicImport.MatchString(code) {
		v, err := compile(code)
		if err == nil {
			h.keep(v)
			return v, nil
		}
		if !strings.HasPrefix(jsErrorText(err), "SyntaxError") {
			return nil, err
		}
		v8err = err
	}
	t, err := h.api.MethodCall("transform", h.str(code), h.str("<code>"))
	if err != nil {
		return nil, err
	}
	h.keep(t)
	out := t.String()
	if strings.HasPrefix(out, "\x00") {
		if out == "\x00" && v8err != nil {
			return nil, v8err
		}
		if out == "\x00" {
			out = "\x00SyntaxError: the code does not compile"
		}
		return nil, errors.New(out[1:])
	}
	v, err := compile(out)
	if err != nil {
		return nil, err
	}
	h.keep(v)
	return v, nil
}
