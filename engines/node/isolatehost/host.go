package isolatehost

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

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
		out:       &hostproto.FrameWriter{W: out},
		in:        in,
		fr:        hostproto.NewFrameReader(in),
		tasks:     map[int64]*hostTask{},
		calls:     map[int64]bool{},
		mem:       newSelfMemory(),
		callOwner: map[int64]int64{},
	}
	h.shared = jsenv.NewShared(nil)
	h.shared.EnvOff = os.Getenv("CODE_RUNNER_BENCH_NO_JSENV") == "1"
	h.snapshotWarning = h.loadSnapshots(map[jsenv.Kind]string{
		jsenv.Lean: os.Getenv(hostproto.SnapshotEnv), jsenv.Rich: os.Getenv(hostproto.RichSnapshotEnv)})
	h.dropRunState()
	h.procs = runtime.GOMAXPROCS(0)
	h.procsNow = h.procs
	h.guard = &guard{
		terminate: func() {
			if iso := h.isoNow.Load(); iso != nil {
				iso.Terminate()
			}
			h.shared.Terminate()
		},
		overMemory: func() bool {
			limit := h.memLimitKB.Load()
			return limit > 0 && h.mem.guestKB() > limit
		},
		hardStop: func(why string) {
			if h.detachedEntry.Load() {
				fmt.Fprintln(os.Stderr, "isolate host: guest code running after its call had ended did not stop (", why, ")")
				os.Exit(hostproto.ExitDetached)
			}
			if why == firedMemory {
				if h.offHeapOver() {
					fmt.Fprintln(os.Stderr, "isolate host: guest memory outside the heap over its cap")
				} else {
					fmt.Fprintln(os.Stderr, "isolate host: guest memory over its cap (out of memory)")
				}
				os.Exit(9)
			}
			fmt.Fprintln(os.Stderr, "isolate host: guest code did not stop at its deadline")
			os.Exit(10)
		},
	}
	return h.loop()
}

// loadSnapshots maps and checks the startup snapshots at paths (one per
// kind, "" for none); what it answers is the warning to log when one was
// given and cannot be used (the host then makes those isolates without
// it, building the environment the old way).
func (h *host) loadSnapshots(paths map[jsenv.Kind]string) string {
	h.blobs = map[jsenv.Kind]*v8.Blob{}
	if h.shared.EnvOff {
		return ""
	}
	var warn []string
	for _, k := range []jsenv.Kind{jsenv.Lean, jsenv.Rich} {
		path := paths[k]
		if path == "" {
			continue
		}
		blob, err := jsenv.OpenSnapshot(path)
		if err != nil {
			warn = append(warn, "the "+string(k)+" V8 startup snapshot could not be loaded ("+err.Error()+")")
			continue
		}
		h.blobs[k] = blob
	}
	if len(warn) == 0 {
		return ""
	}
	return strings.Join(warn, "; ") + "; this isolate host builds the JavaScript environment without it"
}

// blobFor is the snapshot an isolate of the kind asked for is made from:
// that kind's, else the other's, else none.
func (h *host) blobFor(rich bool) (jsenv.Kind, *v8.Blob) {
	want, other := jsenv.Lean, jsenv.Rich
	if rich {
		want, other = other, want
	}
	if b := h.blobs[want]; b != nil {
		return want, b
	}
	if b := h.blobs[other]; b != nil {
		return other, b
	}
	return "", nil
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

	iso *v8.Isolate
	// isoNow is iso for the guard's goroutine.
	isoNow atomic.Pointer[v8.Isolate]
	env    *jsenv.Env
	shared *jsenv.Shared
	// snapshotWarning is said once, with the first ready.
	snapshotWarning string
	heapLimit       uint64
	// blobs are the startup snapshots this host may make isolates from;
	// kind is the one its isolate (and the transform's) came from.
	blobs map[jsenv.Kind]*v8.Blob
	kind  jsenv.Kind

	// externalLimit is the off-heap cap (bytes; 0 until bound), read
	// from the guard's goroutine.
	externalLimit atomic.Int64
	namespace     string
	files         *scratch

	tasks    map[int64]*hostTask
	runTask  int64
	inflight int

	stdout, stderr strings.Builder
	// omitted marks the result finish is sending as the cap's marker.
	omitted      bool
	lines, bytes int
	truncated    bool
	detached     int

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
	detachedEntry atomic.Bool

	// procs is the GOMAXPROCS the host started with (the worker starts it
	// with one); procsNow what it runs with (keptProcs while bound to a
	// kept runtime).
	procs, procsNow int

	// The environment's host side (timers.go): callOwner is the task each
	// pending iii.trigger call was made for; held the finished tasks
	// waiting for their timers; uncaught the first uncaught error of each
	// task.
	callOwner map[int64]int64
	timers    *timerState
	held      map[int64]doneRecord
	uncaught  map[int64]string
	exitReq   *exitRequest
	exitCodes map[int64]int // process.exitCode set by each task's work
	kept      bool
	// lastIO is when the loop last looked at its input while timers kept
	// it busy.
	lastIO time.Time
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
		if err := h.init(m.HeapMB, m.FilesOn, m.Rich); err != nil {
			h.send(&hostproto.Msg{T: "fatal", Error: err.Error()})
			return 4, true
		}
		h.guestBaseKB = h.mem.guestKB()
		h.ready()
	case "bind":
		if err := h.bind(m.Namespace, m.Files); err != nil {
			h.send(&hostproto.Msg{T: "fatal", Error: err.Error()})
			return 4, true
		}
		h.memLimitKB.Store(h.guestBaseKB + int64(h.heapLimit>>10) + m.ExternalMB<<10)
		h.externalLimit.Store(m.ExternalMB << 20)
		h.maxBudget = time.Duration(m.BudgetMS) * time.Millisecond
		h.setKept(m.Kept)
	case "run":
		h.startTask(m, "run")
		h.runTask = m.Task
		h.stdout.Reset()
		h.stderr.Reset()
		h.lines, h.bytes, h.truncated, h.detached = 0, 0, false, 0
		return h.enter(func() error {
			return h.runMain(m.Task, m.Code, m.MaxResult)
		}, m.Task)
	case "invoke":
		h.startTask(m, "invoke")
		return h.enter(func() error {
			return h.call("invoke", h.iso.Number(float64(m.Task)), h.iso.String(m.FunctionID), h.iso.String(string(orNull(m.Payload))))
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
			return h.call(method, h.iso.Number(float64(m.Task)), h.iso.String(m.TypeID), h.iso.String(string(orNull(m.Binding))))
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
			return h.call("settle", h.iso.Number(float64(m.Call)), h.iso.Bool(m.OK), h.iso.String(text))
		})
	case "reset":
		// Recycle this process for another runtime: a brand-new isolate,
		// nothing of the previous runtime's state kept (see rebuild).
		h.env, h.files, h.namespace = nil, nil, ""
		h.tasks = map[int64]*hostTask{}
		h.runTask, h.inflight, h.detached = 0, 0, 0
		h.calls = map[int64]bool{}
		h.callOwner = map[int64]int64{}
		h.dropRunState()
		h.exitReq = nil
		h.memLimitKB.Store(0)
		h.externalLimit.Store(0)
		h.lastBudget, h.maxBudget = 0, 0
		h.detachedLeft, h.detachedSet = 0, false
		h.stdout.Reset()
		h.stderr.Reset()
		h.lines, h.bytes, h.truncated = 0, 0, false
		h.setKept(false)
		err := h.rebuild(m.HeapMB, m.FilesOn, m.Rich)
		if err != nil {
			h.send(&hostproto.Msg{T: "fatal", Error: err.Error()})
			return 4, true
		}
		// The guest's memory baseline, taken without the old isolate.
		h.guestBaseKB = h.mem.guestKB()
		h.ready()
	case "exit":
		return 0, true
	}
	return 0, false
}

// rebuild builds the next isolate and disposes of the last. The new one is
// built before the old one is disposed of when both come from the same
// snapshot: V8 shares the read-only heap between the isolates of a process
// only while one of them lives, and rebuilding it (deserializing it,
// attaching the sandbox's pointer tables, re-protecting its pages) was
// most of a recycle. From another
// snapshot every isolate of the last one goes first — the tenant's and the
// transform's — since the isolates of a process share the read-only heap,
// which comes from one blob.
func (h *host) rebuild(heapMB int64, filesOn, rich bool) error {
	old := h.iso
	if kind, _ := h.blobFor(rich); kind != h.kind && old != nil {
		old.Dispose()
		old = nil
		h.shared.Close()
	}
	err := h.init(heapMB, filesOn, rich)
	if old != nil {
		old.Dispose()
	}
	return err
}

// omittedResult is the result cap's marker for the environment's
// "<bytes> string|array <n>".
func omittedResult(measure string) json.RawMessage {
	f := strings.Fields(measure)
	bytes, berr := strconv.Atoi(f0(f, 0))
	n, nerr := strconv.Atoi(f0(f, 2))
	if len(f) != 3 || berr != nil || nerr != nil {
		return capsfilter.Omitted(bytes, "a value")
	}
	shape := capsfilter.ArrayShape(n)
	if f[1] == "string" {
		shape = capsfilter.StringShape(n)
	}
	return capsfilter.Omitted(bytes, shape)
}

// f0 is f[i], or "" past its end.
func f0(f []string, i int) string {
	if i < len(f) {
		return f[i]
	}
	return ""
}

// ready tells the worker the isolate is built, with the snapshot's warning
// first when there is one (once per process).
func (h *host) ready() {
	if h.snapshotWarning != "" {
		h.send(&hostproto.Msg{T: "warn", Text: h.snapshotWarning})
		h.snapshotWarning = ""
	}
	h.send(&hostproto.Msg{T: "ready"})
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

// init builds the isolate and its environment — from the startup snapshot
// when the host has one — everything a pooled host can do before it is
// handed to a runtime.
func (h *host) init(heapMB int64, filesOn, rich bool) error {
	h.heapLimit = uint64(heapMB) << 20
	h.kind, h.shared.Snapshot = h.blobFor(rich)

	env := jsenv.NewUnmade(h.shared)
	iso, err := v8.NewIsolate(v8.Options{HeapLimit: h.heapLimit, Snapshot: h.shared.Snapshot, Native: h.native})
	if err != nil {
		return err
	}
	h.iso = iso
	h.isoNow.Store(iso)
	if err := env.Make(iso); err != nil {
		return err
	}
	h.env = env
	scope := iso.Mark()
	defer iso.Release(scope)
	if err := env.Configure(filesOn); err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	if !iso.FromSnapshot() {
		// Warm the paths every run takes (compile, track, takeDone) so the
		// first tenant run does not pay for their lazy compilation (the
		// snapshot has them compiled already).
		_ = h.runMain(0, "", 0)
		_ = h.drain()
		_, _ = h.takeDone()
		env.MakeCaches()
	}
	return nil
}

// bind gives a booted host its runtime: the namespace and the scratch
// directory, both chosen at hand-out.
func (h *host) bind(namespace string, fc *hostproto.FilesConf) error {
	h.namespace = namespace
	if fc != nil {
		h.files = &scratch{dir: fc.Dir, maxBytes: fc.MaxBytes, maxFiles: fc.MaxFiles}
	}
	scope := h.iso.Mark()
	defer h.iso.Release(scope)
	return h.call("bind", h.iso.String(namespace))
}

// call invokes a method of the prelude's host API.
func (h *host) call(method string, args ...v8.Value) error {
	_, err := h.env.Call(method, args...)
	return err
}

// drain runs what node runs after each macrotask: the ticks, the
// microtasks, the unhandled rejections, until none is left.
func (h *host) drain() error {
	return h.call("drain")
}

// enter runs fn inside the isolate — the only way guest JavaScript runs —
// under the guard: the deadline of the earliest active task, or for work
// with no call in flight (a callback settling after its run returned) the
// detached budget, and the memory cap throughout. Finished tasks are taken
// from the prelude while still guarded (taking them must not run guest
// code, but if it ever did, it would be bounded too) and reported after.
// A termination the guard fired is a timeout or the memory cap; one we did
// not fire, or a heap that reached its cap, is the heap cap. Any of them
// kills the isolate, and the host exits; so does guest memory over the cap
// at the end of an entry.
func (h *host) enter(fn func() error, task int64) (int, bool) {
	return h.enterAs(task, func() error {
		err := fn()
		if err != nil && task != 0 && !v8.IsTermination(err) {
			// Thrown straight out of a compile or the wrapper (a
			// SyntaxError): the task's failure.
			h.uncaughtError(task, jsErrorText(err))
			return nil
		}
		return err
	})
}

// enterAs is enter for guest work done for owner (0: detached work): the
// owner is the continuation-preserved data of everything that runs, so
// the timers, output and errors of every promise job it starts belong to
// owner too, whichever entry later runs them (contract §25.11). A task
// that finished waits here while a ref'd timer it owns is pending
// (contract §25.2); process.exit ends its task at once.
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
			h.send(&hostproto.Msg{T: "warn", Text: detachedOverrun})
			h.die(hostproto.StatusTimeout, 0)
			return hostproto.ExitDetached, true
		}
		deadline = start.Add(left)
	}
	h.detachedEntry.Store(earliest == nil)
	// A kill of a detached entry exits with ExitDetached: the worker
	// tombstones a kept runtime its own detached work destroyed.
	code := 0
	if earliest == nil {
		code = hostproto.ExitDetached
	}
	scope := h.iso.Mark()
	heapHits := h.iso.HeapLimitHits()
	h.iso.SetOwner(float64(owner))
	h.guard.arm(deadline)
	err := fn()
	if err == nil || !v8.IsTermination(err) {
		if derr := h.drain(); derr != nil && err == nil {
			err = derr
		}
	}
	exit := h.exitReq
	h.exitReq = nil
	recs, cerr := h.takeDone()
	fired := h.guard.disarm()
	if earliest == nil {
		h.detachedLeft -= time.Since(start)
	}
	// From here on only the host's own Go code runs: the records are
	// reported (a big result's frame can take a while) unguarded. The
	// kills come first: a process.exit that raced a deadline is a timeout.
	switch {
	case fired == firedDeadline && earliest != nil:
		h.iso.Release(scope)
		h.die(hostproto.StatusTimeout, earliest.id)
		return code, true
	case fired == firedDeadline:
		h.iso.Release(scope)
		h.send(&hostproto.Msg{T: "warn", Text: detachedOverrun})
		h.die(hostproto.StatusTimeout, 0)
		return code, true
	case h.iso.HeapLimitHits() > heapHits:
		// V8's heap reached its cap (the near-heap-limit callback stopped
		// the code): the heap cap, whatever else the guard saw.
		h.iso.Release(scope)
		if earliest == nil {
			h.send(&hostproto.Msg{T: "warn", Text: "guest code running after its call had ended passed its memory cap; the runtime was destroyed"})
		}
		h.die(hostproto.StatusMemory, 0)
		return code, true
	case fired == firedMemory, h.memoryOver():
		// The process holds more than its cap: the heap's cap when V8's
		// heap outgrew it (a large array filled faster than V8 noticed),
		// else the guest's memory outside the heap (ArrayBuffers) passed
		// the off-heap cap — counted by the allocator, or, for what it does
		// not see (a resizable ArrayBuffer's pages), known by the heap
		// being within its own cap.
		h.iso.Release(scope)
		status, what := hostproto.StatusMemory, "memory cap"
		if h.offHeapOver() || h.iso.HeapStats().TotalPhysicalSize < h.heapLimit {
			status, what = hostproto.StatusExternal, "off-heap memory cap"
		}
		if earliest == nil {
			h.send(&hostproto.Msg{T: "warn", Text: "guest code running after its call had ended passed its " + what + "; the runtime was destroyed"})
		}
		h.die(status, 0)
		return code, true
	}
	if exit != nil && v8.IsTermination(err) {
		err = nil // our own stop, not the heap cap
	}
	if exit != nil && v8.IsTermination(cerr) {
		cerr = nil
	}
	if v8.IsTermination(err) || v8.IsTermination(cerr) {
		h.iso.Release(scope)
		h.die(hostproto.StatusMemory, 0)
		return code, true
	}
	if exit != nil {
		if v8.IsTermination(cerr) || cerr != nil {
			recs = nil
		}
		h.exitTask(exit)
	}
	for _, r := range recs {
		if !preludeStatus[r.status] || (r.status == hostproto.StatusOK && !json.Valid([]byte(r.text))) {
			// Not a record the prelude makes: tenant code tampered with its
			// way home. The task fails; nothing of the record is believed.
			r = doneRecord{task: r.task, status: hostproto.StatusError, text: "Error: code-runner: the call's result record was tampered with"}
		}
		if r.status == hostproto.StatusOmitted {
			// A result the environment measured over the run's cap: the
			// cap's marker, made here so that it is the pipeline's own text.
			r = doneRecord{task: r.task, status: hostproto.StatusOK, text: string(omittedResult(r.text)), omitted: true}
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
	h.env.MakeCaches()
	h.iso.Release(scope)
	return 0, false
}

// detachedOverrun is the worker's log line when guest work that ran after
// its call had ended used up its budget.
const detachedOverrun = "guest code running after its call had ended used up its budget (the last call's timeout, counted over all such work until the next call); the runtime was destroyed"

// preludeStatus lists the statuses the prelude's records may carry.
var preludeStatus = map[string]bool{
	hostproto.StatusOK: true, hostproto.StatusError: true, hostproto.StatusQuota: true, hostproto.StatusMissing: true,
	hostproto.StatusThrew: true, hostproto.StatusRefused: true, hostproto.StatusOmitted: true,
}

// report answers one finished task.
func (h *host) report(r doneRecord) {
	if code := h.exitCodes[r.task]; r.status == hostproto.StatusOK && code != 0 && r.task == h.runTask {
		// process.exitCode = n: the run fails as if it had called exit(n).
		h.exitTask(&exitRequest{task: r.task, code: code})
		return
	}
	if r.status == hostproto.StatusOK {
		h.omitted = r.omitted
		h.finish(r.task, hostproto.StatusOK, "", json.RawMessage(r.text))
		h.omitted = false
	} else {
		h.finish(r.task, r.status, r.text, nil)
	}
}

// exitRequest is a process.exit the host is carrying out: the task whose
// work called it, and the code.
type exitRequest struct {
	task int64
	code int
}

// exitText is a failed call's text for process.exit(code) or
// process.exitCode = code with code ≠ 0.
func exitText(code int) string {
	return fmt.Sprintf("process.exit(%d): the call ended with exit code %d", code, code)
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

// offHeapOver reports whether what the isolate's ArrayBuffers hold has
// reached the off-heap cap: a memory kill is then that cap's, else the
// heap's (any goroutine).
func (h *host) offHeapOver() bool {
	limit := h.externalLimit.Load()
	iso := h.isoNow.Load()
	return limit > 0 && iso != nil && iso.ExternalBytes() >= limit
}

// memoryOver reports whether the guest holds more memory than its cap.
func (h *host) memoryOver() bool {
	limit := h.memLimitKB.Load()
	return limit > 0 && h.mem.guestKB() > limit
}

// jsErrorText renders an error thrown straight out of a compile or a call
// (a SyntaxError, or a throw before the async wrapper began).
func jsErrorText(err error) string {
	var je *v8.Error
	if ok := asJSError(err, &je); ok {
		return je.Text()
	}
	return err.Error()
}

// doneRecord is one task the prelude finished.
type doneRecord struct {
	task         int64
	status, text string
	omitted      bool // text is the result cap's marker (StatusOmitted)
}

// takeDone takes the tasks the prelude finished, reading the flat array its
// takeDone hands over (task, status, text, …) element by element.
func (h *host) takeDone() ([]doneRecord, error) {
	arr, err := h.env.Call("takeDone")
	if err != nil {
		return nil, err
	}
	lenV, err := arr.Get("length")
	if err != nil {
		return nil, err
	}
	n := int(lenV.Int())
	var recs []doneRecord
	for i := 0; i+2 < n; i += 3 {
		task, _ := arr.Index(uint32(i))
		status, _ := arr.Index(uint32(i + 1))
		text, _ := arr.Index(uint32(i + 2))
		recs = append(recs, doneRecord{task: task.Int(), status: status.String(), text: text.String()})
	}
	return recs, nil
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
	m := &hostproto.Msg{T: "done", Task: task, Status: status, Error: text, Result: result, Omitted: h.omitted}
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
