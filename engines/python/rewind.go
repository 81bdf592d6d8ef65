package python

import (
	"context"
	"errors"
	"fmt"

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
// tenant frame is left anywhere. A snapshot is spent by its restore, so the
// retried read captures the next one (stdinQueue.Read).

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

// maxResets is how many resets an interpreter serves before it retires: a
// rewind's snapshot is 16 bytes longer than the stack it restores (wazero
// clones with slack and keeps the clone), so the stack copied at each
// reset grows by 64 KiB over an interpreter's life, no more.
const maxResets = 4096

// errRetired: the interpreter has served maxResets resets.
var errRetired = errors.New("the interpreter has served its resets")

// rewindable reports whether a rewind is possible (q.mu held): a reset
// restores nothing unless it is.
func (q *stdinQueue) rewindable() bool { return q.stack != nil && q.exec.Load() != nil }

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
	return q.waitParkedLocked(func() { q.stack = h.snap.Snapshot() })
}

// rewindLocked returns the guest from whatever read it is blocked in to the
// captured one, which reports EINTR and is retried; it returns once the
// guest is parked in the retry, its stack captured for the next rewind.
// q.mu must be held. The caller bounds the wait (a guest that never parks
// again is killed, which ends it).
func (q *stdinQueue) rewindLocked() error {
	s := q.stack
	if s == nil {
		return errNoRewind
	}
	q.stack = nil
	return q.waitParkedLocked(func() {
		q.rearm = true
		s.Restore([]uint64{errnoIntr}) // does not return
	})
}
