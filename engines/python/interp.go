package python

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/code-runner-go/code-runner/engines/python/pywasm"
	"github.com/code-runner-go/code-runner/internal/jsonx"

	_ "embed"

	"github.com/google/uuid"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

//go:embed main.py
var wrapperSource []byte

var interpSeq atomic.Int64

// interp is one CPython instance parked in the wrapper's turn loop.
type interp struct {
	name     string
	wr       *wasmRuntime
	cancel   context.CancelFunc
	stdin    *stdinQueue
	stdout   *stdoutScanner
	stderr   *stderrWriter
	events   chan []byte
	killed   chan struct{} // closed by kill: nothing waits on the guest after it
	killOnce sync.Once
	done     chan struct{} // closed once the instance is gone and /out removed
	exitErr  error
	outDir   string
	workDir  string
	work     *budget // /work's budget, admitted write by write
	out      *budget // /out's
	over     chan *budget
	open     openFiles    // files the guest has open under /work and /out
	gate     hostGate     // every host call's kill check (hostcalls.go)
	files    fileLimit    // files open across the mounts
	mounts   []string     // the preopens' guest paths, in descriptor order from 3
	pathKey  string       // the python_path it was booted with (pythonpath.go)
	closers  []io.Closer  // its python_path handles, closed when it ends
	fdView   *fdView      // the instance's descriptor table, once snapshotted (fdtable.go)
	fds      []fdEntry    // its descriptor table at the snapshot
	fdsNow   []fdEntry    // restoreFDs' buffer for the table as it is
	mem      memorySlot   // the instance's linear memory, once allocated
	memCap   uint64       // linear memory cap, bytes
	globals  *globalState // its mutable globals at the snapshot (rewind.go)
	resets   int          // resets so far (maxResets)
	// pingFrame is the health check takeSnapshot sends before the
	// snapshot: it carries the identity of each writable mount's directory
	// (see pingFrameFor).
	pingFrame []byte
}

// bootInterp instantiates the wrapper with workDir mounted at /work and
// waits for it to park before its first turn.
func (e *Engine) bootInterp(ctx context.Context, memMB int64, workDir string) (*interp, error) {
	wr, err := e.runtimeFor(ctx)
	if err != nil {
		return nil, err
	}
	outDir, err := os.MkdirTemp(filepath.Dir(workDir), "iii-python-out-") // beside /work, under the same scratch root
	if err != nil {
		return nil, fmt.Errorf("create /out: %w", err)
	}
	sentinel := uuid.NewString()
	pythonPath := e.config().PythonPath
	opMounts, skipped := openPythonPath(pythonPath)
	for _, err := range skipped {
		e.log.Warn("python_path entry not mounted; imports from it fail", "err", err)
	}
	guestPath := []string{}
	for _, m := range opMounts {
		guestPath = append(guestPath, m.guest)
	}
	iiiJSON, _ := jsonx.Marshal(map[string]any{"sentinel": sentinel, "persistent": true, "python_path": guestPath})
	runFS := fstest.MapFS{
		"main.py":  &fstest.MapFile{Data: wrapperSource, Mode: 0o444},
		"iii.json": &fstest.MapFile{Data: iiiJSON, Mode: 0o444},
	}
	ip := &interp{name: "py-" + strconv.FormatInt(interpSeq.Add(1), 10), wr: wr, events: make(chan []byte, 16),
		stdin: newStdinQueue(), killed: make(chan struct{}), done: make(chan struct{}),
		outDir: outDir, workDir: workDir, memCap: uint64(memMB) << 20, over: make(chan *budget, 2),
		work: newBudget(workDir, "/work", workMaxBytes, workMaxEntries),
		out:  newBudget(outDir, "/out", outMaxBytes, outMaxEntries)}
	ip.gate.killed = ip.killed
	ip.pathKey = pathKey(pythonPath)
	for _, m := range opMounts {
		ip.closers = append(ip.closers, m.close)
	}
	closeAll := func() {
		for _, c := range ip.closers {
			_ = c.Close()
		}
	}
	ip.files.max = maxOpenFiles
	limited := func(fsys experimentalsys.FS) experimentalsys.FS {
		return &limitedFS{FS: fsys, limit: &ip.files, worker: &e.openFiles, gate: &ip.gate}
	}
	for _, b := range []*budget{ip.work, ip.out} {
		b := b
		b.reset()
		b.setOnOver(func() {
			select {
			case ip.over <- b:
			default:
			}
		})
	}
	// Every mount counts its opens against one limit and passes the gate.
	fsc := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(limited(&sysfs.AdaptFS{FS: runFS}), "/run")
	ip.mounts = append(ip.mounts, "/run")
	if e.stdlib != nil {
		ip.mounts = append(ip.mounts, pywasm.StdlibDir)
		// Shared by every interpreter: opening a file of it for writing is
		// refused at open (a plain fs.FS mount accepts the open and fails
		// the write later, with EBADF).
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(limited(&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: e.stdlib}}), pywasm.StdlibDir)
	}
	if e.pkgs != nil {
		// The package bundle's trees, read-only like the standard library:
		// site-packages inside its mount (the guest resolves a path by the
		// longest mount that prefixes it), the time zone database and the
		// packages' copyright files where Debian keeps them.
		for _, m := range []struct{ dir, path string }{
			{"site-packages", pywasm.SitePackagesDir},
			{"zoneinfo", pywasm.ZoneinfoDir},
			{"doc", pywasm.DocDir},
		} {
			sub, err := fs.Sub(e.pkgs, m.dir)
			if err != nil {
				closeAll()
				_ = os.RemoveAll(outDir)
				return nil, fmt.Errorf("package bundle %s: %w", m.dir, err)
			}
			ip.mounts = append(ip.mounts, m.path)
			fsc = fsc.(sysfs.FSConfig).WithSysFSMount(limited(&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: sub}}), m.path)
		}
	}
	for _, m := range opMounts {
		ip.mounts = append(ip.mounts, m.guest)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(limited(&sysfs.ReadFS{FS: &sysfs.AdaptFS{FS: m.fsys}}), m.guest)
	}
	outFS, workFS := limited(newGuardedFS(ip.out, &ip.open)), limited(newGuardedFS(ip.work, &ip.open))
	if ip.pingFrame, err = pingFrameFor(map[string]experimentalsys.FS{"/out": outFS, "/work": workFS}); err != nil {
		closeAll()
		_ = os.RemoveAll(outDir)
		return nil, err
	}
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(outFS, "/out")
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(workFS, "/work")
	ip.mounts = append(ip.mounts, "/out", "/work")
	ip.stdout = newStdoutScanner(sentinel, ip.events, &ip.gate)
	ip.stderr = &stderrWriter{gate: &ip.gate}
	cfg := wazero.NewModuleConfig().
		WithName(ip.name).
		WithArgs("python", "-I", "-B", "/run/main.py", "/run", "/out").
		WithStdin(ip.stdin).WithStdout(ip.stdout).WithStderr(ip.stderr).
		WithFSConfig(fsc).
		WithWalltime(ip.gate.walltime, 1).WithNanotime(ip.gate.nanotime(time.Now()), 1).
		WithRandSource(gatedReader{g: &ip.gate, r: rand.Reader})
	runCtx, cancel := context.WithCancel(context.Background())
	ip.cancel = cancel
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		cancel()
		closeAll()
		_ = os.RemoveAll(outDir)
		return nil, errors.New("python engine is closed")
	}
	e.live[ip] = true
	e.mu.Unlock()
	go func() {
		// The instance is gone: its module closed, its handles and /out
		// released, and anyone waiting told.
		ended := func(mod api.Module, err error) {
			if mod != nil {
				_ = mod.Close(context.Background())
			}
			ip.exitErr = err
			ip.kill()
			closeAll()
			_ = os.RemoveAll(outDir)
			e.mu.Lock()
			delete(e.live, ip)
			e.mu.Unlock()
			close(ip.done)
		}
		defer func() {
			// A wasm panic wazero did not turn into an error (a snapshot
			// restore it could not place, say) ends this interpreter, not
			// the worker.
			if r := recover(); r != nil {
				ended(wr.rt.Module(ip.name), fmt.Errorf("python interpreter panicked: %v", r))
			}
		}()
		mod, err := wr.rt.InstantiateModule(withRewind(withLinearMemory(runCtx, &ip.mem, ip.memCap), ip.stdin), wr.mod, cfg)
		// wazero closes the instance itself only when _start fails; a
		// wrapper that ends normally (EOF on stdin after a kill) returns it
		// open, with its memory, its files and its directory descriptors.
		ended(mod, err)
	}()
	select {
	case ev := <-ip.events:
		if kindOf(ev) == "ready" {
			return ip, nil
		}
		ip.dispose()
		return nil, errors.New("python interpreter sent an unexpected first event")
	case <-ip.done:
		return nil, fmt.Errorf("python interpreter exited while booting: %v", ip.exitErr)
	case <-ctx.Done():
		ip.dispose()
		return nil, ctx.Err()
	}
}

// kindOf returns an event's "kind". The wrapper writes every event as
// {"kind":"<kind>",...} (json.dumps keeps the key first and, with its
// separators, adds no space), so that prefix is read where it is: parsing
// the whole event only for its kind cost ~5.5 ms for a turn_done carrying
// a 1 MiB result (BenchmarkKindOf), which finishTurn parses once more
// anyway. Anything else — a tenant's forgery, which answers at most its
// own turn — is parsed in full.
func kindOf(ev []byte) string {
	const prefix = `{"kind":"`
	if rest, ok := bytes.CutPrefix(ev, []byte(prefix)); ok {
		if i := bytes.IndexByte(rest, '"'); i > 0 && i <= maxKindLen && bytes.IndexByte(rest[:i], '\\') < 0 {
			return string(rest[:i])
		}
	}
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(ev, &k)
	return k.Kind
}

// maxKindLen bounds the kinds kindOf reads from the prefix (the wrapper's
// longest is "turn_done").
const maxKindLen = 16

// kill ends the interpreter at once: the context cancel stops executing
// wasm at its next code_runner.tick (tick.go: within 1,024 bytecode checks
// or 65,536 loop iterations), closing stdin frees a guest blocked reading,
// and closing killed frees one blocked handing the host an event.
func (ip *interp) kill() {
	ip.killOnce.Do(func() {
		ip.cancel()
		ip.stdin.close()
		close(ip.killed)
	})
}

// dispose kills the interpreter and waits until it is gone (its module
// closed, /out removed; /work belongs to the runtime).
func (ip *interp) dispose() {
	ip.kill()
	<-ip.done
}

func (ip *interp) dead() bool {
	select {
	case <-ip.done:
		return true
	default:
		return false
	}
}

// send queues one frame on the interpreter's stdin. It never blocks: the
// guest reads it when it reads.
func (ip *interp) send(body []byte) error {
	buf := make([]byte, 0, len(body)+12)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, '\n')
	buf = append(buf, body...)
	return ip.stdin.push(buf)
}

// memoryFull reports whether the guest asked for more linear memory than its
// cap since the last resetMemoryDenied: a real exhaustion, as opposed to a
// MemoryError the guest raised itself or the parser's "too complex". It
// reads the allocation the instance made, so it holds after the instance
// is gone too.
func (ip *interp) memoryFull() bool {
	m := ip.mem.mem.Load()
	return m != nil && (*m).Denied()
}

// resetMemoryDenied forgets a denial (a turn starts; a kept interpreter
// that caught its MemoryError and went on is healthy).
func (ip *interp) resetMemoryDenied() {
	if m := ip.mem.mem.Load(); m != nil {
		(*m).ResetDenied()
	}
}

// exitStatus describes how _start ended: an exit status (os._exit(n); a
// status of 0 ends _start without an error) or not (a trap).
func (ip *interp) exitStatus() (code uint32, isExit bool) {
	if ip.exitErr == nil {
		return 0, true
	}
	var ee *sys.ExitError
	if errors.As(ip.exitErr, &ee) {
		return ee.ExitCode(), true
	}
	return 0, false
}

// firstOver returns the budget a refused write marked over, if any,
// without measuring (the directories may be gone).
func (ip *interp) firstOver() *budget {
	for _, b := range []*budget{ip.work, ip.out} {
		b.mu.Lock()
		over := b.over
		b.mu.Unlock()
		if over {
			return b
		}
	}
	return nil
}

// stdinQueue is the guest's stdin: frames the host queues, read by the
// guest when it reads. The host never blocks on it (a guest that stops
// reading cannot stall the turn loop), and it knows exactly when the guest
// is blocked on it with nothing left to read: a turn ends only when the
// wrapper has reported turn_done *and* is blocked reading its next frame, so
// a turn_done forged by tenant code cannot leave tenant code running,
// unwatched, after its turn was answered.
type stdinQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond // the guest waits on it
	buf     []byte
	closed  bool
	waiting bool          // the guest is blocked reading and buf is empty
	idle    chan struct{} // a wake-up each time the guest starts waiting

	// Rewinding (rewind.go): the host hands the parked guest work to do on
	// its own goroutine, inside its read.
	exec   atomic.Pointer[execHandle] // the instance's snapshotter, from the tick
	stack  experimental.Snapshot      // the wasm call stack of the parked read, once captured
	kept   *keptStack                 // stack's buffer, put back before each rewind; nil if it cannot be
	rearm  bool                       // capture the stack at the next read (after a rewind)
	job    func()                     // run by the guest in its read, then it parks again
	parks  uint64                     // how many times the guest started waiting
	parked *sync.Cond                 // the host waits on it for the guest to park

	// yielded is when the guest last got its P back, from its tick's last
	// yield or from waiting in Read (tick.go); only the guest's goroutine
	// reads or writes it.
	yielded time.Time
}

func newStdinQueue() *stdinQueue {
	q := &stdinQueue{idle: make(chan struct{}, 1)}
	q.cond = sync.NewCond(&q.mu)
	q.parked = sync.NewCond(&q.mu)
	return q
}

// Read is the guest's read: it blocks until a frame is queued or stdin is
// closed. Closed means killed: the read does not return end-of-file to the
// guest — which would let the wrapper leave its loop and CPython finalize,
// running the tenant's atexit handlers and finalizers after the kill, tens
// of milliseconds of wasm per interpreter — but ends the instance where it
// stands, as the tick does for a computing guest.
func (q *stdinQueue) Read(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rearm {
		// The first read after a rewind whose stack could not be kept
		// (keptStack): the call the rewind returned into, retried. Its
		// stack is the next rewind's (a snapshot is spent by its
		// restore).
		q.rearm = false
		q.stack = q.exec.Load().snap.Snapshot()
	}
	for len(q.buf) == 0 && !q.closed {
		if job := q.job; job != nil {
			q.job = nil
			job() // may not return: a rewind leaves this read for its snapshot
			continue
		}
		q.waiting = true
		q.parks++
		q.parked.Broadcast()
		select {
		case q.idle <- struct{}{}:
		default:
		}
		q.cond.Wait()
		// Waiting gave the P up: the guest has it back now, so its
		// tick's millisecond starts here (tick.go). Left to run from the
		// last yield, it came due at the first tick of nearly every turn
		// that followed a pause, and each such yield woke the runtime's
		// monitor for nothing.
		q.yielded = time.Now()
	}
	q.waiting = false
	if q.closed {
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	}
	n := copy(p, q.buf)
	q.buf = q.buf[n:]
	if len(q.buf) == 0 {
		q.buf = nil
	}
	return n, nil
}

// push queues b for the guest.
func (q *stdinQueue) push(b []byte) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return io.ErrClosedPipe
	}
	q.buf = append(q.buf, b...)
	q.waiting = false
	q.cond.Signal()
	return nil
}

// close makes every read return EOF once the queue is empty.
func (q *stdinQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.buf = nil
	q.cond.Broadcast()
	q.parked.Broadcast()
	q.mu.Unlock()
}

// whileParked runs fn while the guest is held blocked in Read with nothing
// queued: the guest cannot leave Read — not even to end on a kill, which
// closes its module and descriptor table — until fn returns. It returns
// errNotParked, without running fn, when the guest is not parked.
func (q *stdinQueue) whileParked(fn func() error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.waiting || len(q.buf) != 0 || q.closed {
		return errNotParked
	}
	return fn()
}

// errNotParked: the interpreter is not blocked waiting for its next frame.
var errNotParked = errors.New("interpreter is not parked")

// blocked reports whether the guest is blocked reading with nothing queued.
func (q *stdinQueue) blocked() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting && len(q.buf) == 0
}

// errMemoryGrew refuses to reset an interpreter whose turn grew its memory.
var errMemoryGrew = errors.New("the turn grew the interpreter's memory")

// headroomFrame grows the heap by 16 MiB and frees it again before the
// snapshot.
var headroomFrame = []byte(`{"kind":"run","code":"bytearray(16 << 20)"}`)

// pingFrameFor builds an interpreter's health check, the turns takeSnapshot
// runs before the snapshot: the wrapper answers it only when each writable
// mount's path resolves to the directory it was mounted with, compared by
// device and inode as the guest sees them, and /run is there. (After a
// reset, restoreFDs proves the same by descriptor identity: a tenant that
// closed a mount's descriptor and opened another directory into its number
// makes the reset fail.)
func pingFrameFor(mounts map[string]experimentalsys.FS) ([]byte, error) {
	ids := map[string][2]uint64{}
	for path, fsys := range mounts {
		st, errno := fsys.Stat(".")
		if errno != 0 {
			return nil, fmt.Errorf("stat the directory behind %s: %w", path, errno)
		}
		ids[path] = [2]uint64{st.Dev, st.Ino}
	}
	return jsonx.Marshal(map[string]any{"kind": "ping", "mounts": ids})
}

// linear returns the interpreter's snapshot-capable memory, if it has one.
func (ip *interp) linear() *linearMemory {
	m := ip.mem.mem.Load()
	if m == nil {
		return nil
	}
	lm, _ := (*m).(*linearMemory)
	return lm
}

// warmTurns is how many check turns an interpreter runs before its
// snapshot: past CPython's quickening threshold of eight entries.
const warmTurns = 10

// takeSnapshot records the parked interpreter's memory as the state every
// reset returns it to. The interpreter must be parked: blocked reading its
// first frame. When a check turn fails (late under load, say) its answer
// may still be on the way and would be taken for a tenant's: the
// interpreter is disposed of, and the caller must not use it (dead
// reports it). When only the snapshot itself fails, the interpreter is fine
// and merely not recyclable.
func (ip *interp) takeSnapshot(ctx context.Context) (err error) {
	defer func() {
		if err != nil && !errors.Is(err, errNotSnapshottable) {
			ip.dispose()
		}
	}()
	if err := ip.waitParked(ctx); err != nil {
		return err
	}
	// Room first: a turn that grows linear memory cannot be reset (see
	// reset), so the allocator gets free pages to serve ordinary turns from
	// (freed at once; the snapshot keeps zero pages as holes, so they cost
	// nothing until used). Then enough turns that the wrapper's read and
	// write path is as warm as it will ever be: its buffers sized, and each
	// of its functions entered more than the eight times CPython 3.11 waits
	// before quickening and specializing a function's bytecode, so every
	// reset returns to specialized code (main.py warms the run path).
	if err := ip.ping(ctx, headroomFrame); err != nil {
		return err
	}
	for i := 0; i < warmTurns; i++ {
		if err := ip.ping(ctx, ip.pingFrame); err != nil {
			return err
		}
	}
	lm := ip.linear()
	if lm == nil {
		return fmt.Errorf("%w: no linear memory of ours", errNotSnapshottable)
	}
	if ip.wr.unexported > 0 {
		return fmt.Errorf("%w: python.wasm has %d mutable globals it does not export (build it with deps/cpython/build.sh)", errNotSnapshottable, ip.wr.unexported)
	}
	for _, b := range []*budget{ip.work, ip.out} {
		if err := b.pin(); err != nil {
			return fmt.Errorf("%w: %v", errNotSnapshottable, err)
		}
	}
	ip.open.keepOpen()
	// Everything with the guest held in its read, as reset restores it:
	// descriptors, the wasm stack of the read (rewind.go), the globals and
	// memory.
	if err := ip.stdin.whileParked(func() error {
		if err := ip.snapshotFDs(); err != nil {
			return err
		}
		if err := ip.stdin.captureStackLocked(); err != nil {
			return err
		}
		gs, err := captureGlobals(ip.stdin.exec.Load().mod, ip.wr.globals)
		if err != nil {
			return err
		}
		ip.globals = gs
		return lm.snapshot()
	}); err != nil {
		if ip.dead() {
			return err
		}
		return fmt.Errorf("%w: %v", errNotSnapshottable, err)
	}
	return nil
}

// errNotSnapshottable is a snapshot that failed with the interpreter intact.
var errNotSnapshottable = errors.New("interpreter memory cannot be snapshotted")

// waitParked waits until the guest is blocked reading stdin with nothing
// queued.
func (ip *interp) waitParked(ctx context.Context) error {
	for !ip.stdin.blocked() {
		select {
		case <-ip.stdin.idle:
		case <-ip.done:
			return errors.New("interpreter ended")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// reset returns a parked interpreter to the moment it was snapshotted, as
// if freshly booted: its descriptor table that of the snapshot (fdtable.go),
// its memory restored (the pages the guest wrote copied back from the
// snapshot), its globals and the wasm stack of its parked read restored,
// whatever it printed dropped, and /work and /out emptied. An interpreter
// that fails any step must be disposed of.
//
// No turn follows to check it (a ping turn did, until it was measured at a
// seventh of a one-shot's CPU): everything such a turn could find changed
// is put back or verified here by the host — the descriptors by identity,
// so stdin, stdout and each mount are the very entries the snapshot had;
// each writable mount's directory by device and inode at its host path,
// its times put back (budget.settle); nothing queued on stdin
// (whileParked); memory, globals and stack as snapshotted, and that state
// passed warmTurns check turns before it was taken (takeSnapshot).
// pagemapFD is the engine's open /proc/self/pagemap (-1: restore opens one).
func (ip *interp) reset(ctx context.Context, pagemapFD int) error {
	if ip.dead() || !ip.stdin.blocked() {
		return errors.New("interpreter is not parked")
	}
	lm := ip.linear()
	if lm == nil {
		return errors.New("interpreter has no snapshot")
	}
	if lm.Size() > uint64(lm.snapshotSize()) {
		// The restored allocator would not know the pages the turn grew
		// into (wasm memory never shrinks) and would grow past them: each
		// reuse would cost memory for good.
		return errMemoryGrew
	}
	// The descriptor table first: a tenant that closed or replaced a
	// snapshot descriptor makes the interpreter go before any work.
	// Both restores run with the guest held in its stdin read: a kill
	// meanwhile (the engine closing, say) waits for them instead of closing
	// the module's table and memory underneath.
	if ip.globals == nil {
		return errors.New("interpreter has no snapshot of its globals")
	}
	if ip.resets >= ip.stdin.resetLimit() {
		// Where the stack is not kept, each rewind's new snapshot is 16
		// bytes longer than the stack it restores (wazero's clone adds
		// slack): the interpreter retires before that adds up. Where it
		// is, a far larger bound stays (maxKeptResets).
		return errRetired
	}
	ip.resets++
	// A guest that does not park again after the rewind is killed, which
	// ends the wait (it cannot: nothing but the wrapper's retried read runs).
	stuck := time.AfterFunc(2*time.Second, ip.kill)
	if err := ip.stdin.whileParked(func() error {
		// Nothing is restored unless the stack can be rewound too.
		if !ip.stdin.rewindable() {
			return errNoRewind
		}
		if err := ip.restoreFDs(); err != nil {
			return err
		}
		if err := lm.restore(pagemapFD); err != nil {
			return err
		}
		ip.globals.restore()
		// Whatever the tenant printed and the turn did not read — queued
		// events, a half-written event line — goes with it.
		ip.stdout.discard()
		for len(ip.events) > 0 {
			<-ip.events
		}
		return ip.stdin.rewindLocked()
	}); err != nil {
		stuck.Stop()
		return err
	}
	if !stuck.Stop() {
		return errors.New("the interpreter did not park again after its rewind")
	}
	ip.open.closeOpened() // a backstop: restoreFDs closed every file the tenant opened
	for _, b := range []*budget{ip.work, ip.out} {
		if err := b.empty(); err != nil {
			return err
		}
		if err := b.settle(); err != nil {
			return err
		}
		b.nextTenant()
	}
	ip.resetMemoryDenied()
	return nil
}

// ping sends a turn of the wrapper's own (the health check, or the
// headroom allocation) and waits for its turn_done with the guest parked
// again and no output.
func (ip *interp) ping(ctx context.Context, frame []byte) error {
	var out, errs capture
	ip.stdout.setCapture(&out)
	ip.stderr.setCapture(&errs)
	defer ip.stdout.setCapture(nil)
	defer ip.stderr.setCapture(nil)
	if err := ip.send(frame); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	done := false
	for {
		select {
		case ev := <-ip.events:
			if env, ok := parseEnvelope(ev); kindOf(ev) != "turn_done" || !ok || !env.OK {
				return fmt.Errorf("the interpreter failed its check: %.200s", ev)
			}
			done = true
		case <-ip.stdin.idle:
		case <-ip.done:
			return fmt.Errorf("interpreter ended answering a ping: %v", ip.exitErr)
		case <-ctx.Done():
			return errors.New("interpreter did not answer its ping")
		}
		if done && ip.stdin.blocked() {
			ip.stdout.flush()
			if out.buf.Len() != 0 || errs.buf.Len() != 0 {
				return errors.New("interpreter wrote output answering its ping")
			}
			return nil
		}
	}
}
