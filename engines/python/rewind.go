package python

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
)

// A reset returns a parked interpreter to its snapshot: its memory
// (memory_unix.go, snapshot_linux.go), its descriptor table (fdtable.go)
// and — this file — the rest of its wasm execution state, which lives
// outside linear memory: the call stack of compiled code (wasm locals,
// return addresses) and the module's mutable globals (the shadow stack's
// pointer, the loop tick's countdown).
//
// Restoring memory alone is sound only if the guest is parked in the very
// call it was snapshotted in, with the same stack — and tenant code can
// park elsewhere: forge turn_done and block in a read of its own, or
// rebind the wrapper's read. So the stack is not trusted but rewound:
// wazero's snapshotter (experimental.Snapshotter, the mechanism behind
// setjmp/longjmp) captures the stack inside the parked read when the
// interpreter is snapshotted, and a reset restores it from inside whatever
// read the guest is blocked in now. The guest then returns from the
// snapshotted read with EINTR; CPython retries an interrupted read (PEP
// 475) from the same call site, so the interpreter is parked again in the
// wrapper's own read, memory, stack and globals as they were, and no
// tenant frame is left anywhere. The captured stack's buffer is put back
// before each restore (keptStack); where it cannot be, a snapshot is spent
// by its restore and the retried read captures the next one
// (stdinQueue.Read).

// errnoIntr is WASI preview1's errno "intr".
const errnoIntr = 27

// execHandle is what the tick hands over from inside the instance: the
// snapshotter of its _start call and the module, whose exported globals the
// host reads and sets.
type execHandle struct {
	snap experimental.Snapshotter
	mod  api.Module
}

// rewindKey carries an interpreter's stdin queue in the context of its
// _start, for the tick to find.
type rewindKey struct{}

// withRewind enables wazero's snapshotter for an instance's _start and lets
// its tick hand the snapshotter to q.
func withRewind(ctx context.Context, q *stdinQueue) context.Context {
	return context.WithValue(experimental.WithSnapshotter(ctx), rewindKey{}, q)
}

// adoptExec is called by the tick with the context and module of the
// call it serves; the first call hands them to the instance's queue. It
// returns that queue (nil for an instance run without one).
func adoptExec(ctx context.Context, mod api.Module) *stdinQueue {
	q, ok := ctx.Value(rewindKey{}).(*stdinQueue)
	if !ok {
		return nil
	}
	if q.exec.Load() == nil {
		q.exec.Store(&execHandle{snap: experimental.GetSnapshotter(ctx), mod: mod})
	}
	return q
}

// globalState is the values of an instance's mutable globals.
type globalState struct {
	globals []api.MutableGlobal
	values  []uint64
}

// captureGlobals reads the named exported mutable globals.
func captureGlobals(mod api.Module, names []string) (*globalState, error) {
	gs := &globalState{}
	for _, name := range names {
		g, ok := mod.ExportedGlobal(name).(api.MutableGlobal)
		if !ok {
			return nil, fmt.Errorf("the instance exports no mutable global %q", name)
		}
		gs.globals = append(gs.globals, g)
		gs.values = append(gs.values, g.Get())
	}
	return gs, nil
}

// restore sets every global back to its captured value.
func (gs *globalState) restore() {
	for i, g := range gs.globals {
		g.Set(gs.values[i])
	}
}

// maxResets is how many resets an interpreter whose stack cannot be kept
// (keptStack) serves before it retires: each of its rewinds takes a new
// snapshot, 16 bytes longer than the stack it restores (wazero clones with
// slack and keeps the clone), so the stack copied at each reset grows by
// 64 KiB over its life, no more.
const maxResets = 4096

// maxKeptResets is the bound where the stack is kept: nothing then grows
// from one rewind to the next, and the bound stays only for whatever else
// a long life might gather outside the state a reset restores. A retirement
// is a boot, ~0.3 s of CPU: spread over 4,096 one-shots it was ~70 µs of
// each, and the pool hands out its newest interpreter first, so under load
// one interpreter spent its resets in seconds (docs/architecture.md).
const maxKeptResets = 1 << 18

// resetLimit is how many resets the interpreter q belongs to may serve.
func (q *stdinQueue) resetLimit() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.kept != nil {
		return maxKeptResets
	}
	return maxResets
}

// errRetired: the interpreter has served maxResets resets.
var errRetired = errors.New("the interpreter has served its resets")

// keptStack is one captured stack rewound to over and over. A snapshot is
// spent by its restore because wazero makes the snapshot's own buffer the
// live stack, which the guest then writes; taking a new one after every
// rewind cloned the whole stack buffer (~125 KiB, mostly free space grown
// during boot) for ~8 KiB of frames, and made it garbage: 14 % of a worker's
// samples under 8 callers of one-shots were in the allocator and the
// collector (docs/architecture.md). Kept, the
// snapshot's buffer is put back before each restore instead: its frames
// (from the snapshot's stack pointer to the end of the buffer) from the copy
// taken at capture, and the free space below them zeroed, so the stack is
// byte for byte what a fresh clone would be and nothing the tenant's frames
// left there survives. wazero has no API for this: the buffer is reached
// through the snapshot's unexported fields, found by name and type with
// reflect (wazero v1.12's *wazevo.snapshot); a snapshot of any other shape
// is not kept, and the rewind takes a new one each time, as before. (A
// wazero FunctionListener, were one ever added, would see the put-back
// buffer in its After of the read a rewind leaves: wrong data, not unsafe.)
type keptStack struct {
	stack  []byte // the snapshot's buffer, the live stack after each restore
	frames int    // offset of the snapshot's stack pointer in stack
	saved  []byte // stack[frames:] as captured
}

// keepStack returns s's stack to keep, or nil when s is not a snapshot of
// the shape keptStack knows.
func keepStack(s experimental.Snapshot) *keptStack {
	v := reflect.ValueOf(s)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil
	}
	t := v.Type().Elem()
	if t.Kind() != reflect.Struct || t.Name() != "snapshot" ||
		t.PkgPath() != "github.com/tetratelabs/wazero/internal/engine/wazevo" {
		return nil
	}
	field := func(name string, want reflect.Type) (uintptr, bool) {
		f, ok := t.FieldByName(name)
		if !ok || f.Type != want || len(f.Index) != 1 {
			return 0, false
		}
		return f.Offset, true
	}
	stackOff, ok1 := field("stack", reflect.TypeFor[[]byte]())
	spOff, ok2 := field("sp", reflect.TypeFor[uintptr]())
	topOff, ok3 := field("top", reflect.TypeFor[uintptr]())
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	// The rest of the shape too, so a snapshot that merely shares three
	// field names is not taken for this one.
	for name, want := range map[string]reflect.Type{
		"fp":             reflect.TypeFor[uintptr](),
		"returnAddress":  reflect.TypeFor[*byte](),
		"savedRegisters": reflect.TypeFor[[64][2]uint64](),
		"ret":            reflect.TypeFor[[]uint64](),
	} {
		if _, ok := field(name, want); !ok {
			return nil
		}
	}
	if c, ok := t.FieldByName("c"); !ok || c.Type.Kind() != reflect.Pointer || c.Type.Elem().Name() != "callEngine" || t.NumField() != 8 {
		return nil
	}
	p := v.UnsafePointer()
	stack := *(*[]byte)(unsafe.Add(p, stackOff))
	sp := *(*uintptr)(unsafe.Add(p, spOff))
	top := *(*uintptr)(unsafe.Add(p, topOff))
	if len(stack) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(stack)))
	if sp < base || sp > top || top >= base+uintptr(len(stack)) {
		return nil // not a stack pointer into this buffer: not the shape we know
	}
	frames := int(sp - base)
	return &keptStack{stack: stack, frames: frames, saved: append([]byte(nil), stack[frames:]...)}
}

// putBack returns the kept buffer to its captured bytes. The guest must be
// held in a host call (its stack is not running).
func (k *keptStack) putBack() {
	clear(k.stack[:k.frames])
	copy(k.stack[k.frames:], k.saved)
}

// rewindable reports whether a rewind is possible (q.mu held): a reset
// restores nothing unless it is.
func (q *stdinQueue) rewindable() bool { return q.stack != nil && q.exec.Load() != nil }

// stackKept reports whether rewinds reuse one captured stack (q.mu held);
// if not, each takes a new snapshot and maxResets bounds their growth.
func (q *stdinQueue) stackKept() bool { return q.kept != nil }

// errNoRewind: the instance cannot be rewound (no snapshotter yet, or no
// stack captured).
var errNoRewind = errors.New("the interpreter's wasm stack cannot be rewound")

// waitParkedLocked hands the parked guest job, to run in its read on its
// own goroutine, and waits until it parks again. q.mu must be held (the
// caller runs inside whileParked); it is released while the guest works.
// A kill meanwhile ends the wait with errNotParked, and the caller must not
// touch the instance after that.
func (q *stdinQueue) waitParkedLocked(job func()) error {
	start := q.parks
	q.job = job
	q.waiting = false
	q.cond.Broadcast()
	for q.parks == start && !q.closed {
		q.parked.Wait()
	}
	if q.closed {
		return errNotParked
	}
	return nil
}

// captureStackLocked captures the wasm call stack of the guest's parked
// read, the state every rewind returns to. q.mu must be held.
func (q *stdinQueue) captureStackLocked() error {
	h := q.exec.Load()
	if h == nil {
		return fmt.Errorf("%w: the instance never reached its tick", errNoRewind)
	}
	return q.waitParkedLocked(func() {
		q.stack = h.snap.Snapshot()
		q.kept = keepStack(q.stack)
	})
}

// rewindLocked returns the guest from whatever read it is blocked in to the
// captured one, which reports EINTR and is retried; it returns once the
// guest is parked in the retry. The captured stack is put back for the next
// rewind (keptStack) or, where it cannot be, captured again in the retry.
// q.mu must be held. The caller bounds the wait (a guest that never parks
// again is killed, which ends it).
func (q *stdinQueue) rewindLocked() error {
	s := q.stack
	if s == nil {
		return errNoRewind
	}
	k := q.kept
	if k == nil {
		q.stack = nil
	}
	return q.waitParkedLocked(func() {
		if k != nil {
			k.putBack()
		} else {
			q.rearm = true
		}
		s.Restore([]uint64{errnoIntr}) // does not return
	})
}
