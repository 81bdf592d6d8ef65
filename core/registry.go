package core

import (
	"container/list"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Tombstone bounds (docs/behaviour.md#runtimes-tombstones).
const (
	TombstoneLimit = 10000
	TombstoneTTL   = 24 * time.Hour
)

// OwnerWorker owns the worker's six function ids.
const OwnerWorker = "code-runner"

// NewRuntimeID mints "rt-" + a lowercase UUID v4 from crypto/rand.
func NewRuntimeID() string {
	return "rt-" + uuid.Must(uuid.NewRandom()).String()
}

// NewRunNamespace mints a run runtime's namespace "code-runner::<token>::",
// where token is 32 lowercase hex characters from crypto/rand, unrelated to
// any runtime id (docs/behaviour.md#runtime-id-capability).
func NewRunNamespace() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return "code-runner::" + hex.EncodeToString(b[:]) + "::"
}

// RuntimeState is what the Registry knows about a runtime id.
type RuntimeState int

// States of a runtime id.
const (
	StateUnknown    RuntimeState = iota // never issued, torn down explicitly, or its tombstone aged out
	StateLive                           // in the ownership map
	StateTombstoned                     // reaped or killed within the last 24 h
)

// Kept is one live kept runtime in the ownership map.
type Kept struct {
	ID      string
	Lang    Lang
	Runtime Runtime
	slot    *Slot
	turn    chan struct{} // capacity 1: serializes calls, first come first served

	mu         sync.Mutex
	lastActive time.Time
	inFlight   int
	gone       bool
}

// Acquire waits for the runtime's turn until ctx is done. The wait spends the
// caller's own budget (docs/behaviour.md#timeouts-run-budget). It returns false when ctx ended first.
func (k *Kept) Acquire(ctx context.Context) bool {
	k.mu.Lock()
	k.inFlight++
	k.lastActive = time.Now()
	k.mu.Unlock()
	select {
	case k.turn <- struct{}{}:
		return true
	case <-ctx.Done():
		k.done()
		return false
	}
}

// Release ends the caller's turn.
func (k *Kept) Release() {
	<-k.turn
	k.done()
}

func (k *Kept) done() {
	k.mu.Lock()
	k.inFlight--
	k.lastActive = time.Now()
	k.mu.Unlock()
}

// Idle reports how long the runtime has been idle, and false while a call is
// in flight or waiting.
func (k *Kept) Idle(now time.Time) (time.Duration, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.inFlight > 0 {
		return 0, false
	}
	return now.Sub(k.lastActive), true
}

// Slot is one unit of the max_runtimes budget. Release is idempotent.
type Slot struct {
	once sync.Once
	r    *Registry
}

// Release returns the slot to the budget.
func (s *Slot) Release() {
	if s == nil {
		return
	}
	s.once.Do(func() {
		s.r.mu.Lock()
		s.r.slots--
		s.r.mu.Unlock()
	})
}

// Registry is the runtime bookkeeping shared by both languages: the slot
// budget, the ownership map of kept runtimes, the function-id registry and
// the tombstones. It is safe for concurrent use.
type Registry struct {
	// Tag is this worker's routing tag (TagLen hex digits): the kept
	// runtime ids it mints begin with it. "" mints untagged ids. Set it
	// before the first Adopt.
	Tag string

	mu     sync.Mutex
	now    func() time.Time
	slots  int64
	kept   map[string]*Kept
	fnIDs  map[string]string // function id → owner
	tombs  map[string]*list.Element
	tombQ  *list.List // of tomb, oldest first
	tLimit int
}

type tomb struct {
	id string
	at time.Time
}

// NewRegistry returns a Registry with the worker's six function ids seeded
// as owned by OwnerWorker. now may be nil (time.Now).
func NewRegistry(now func() time.Time) *Registry {
	if now == nil {
		now = time.Now
	}
	r := &Registry{now: now, kept: map[string]*Kept{}, fnIDs: map[string]string{},
		tombs: map[string]*list.Element{}, tombQ: list.New(), tLimit: TombstoneLimit}
	for _, id := range WorkerFunctionIDs {
		r.fnIDs[id] = OwnerWorker
	}
	return r
}

// AcquireSlot takes one slot if fewer than max are in use (max is the live
// max_runtimes); otherwise it returns the capacity error.
func (r *Registry) AcquireSlot(max int64) (*Slot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slots >= max {
		return nil, ErrCapacity(max)
	}
	r.slots++
	return &Slot{r: r}, nil
}

// SlotsInUse returns the number of slots held.
func (r *Registry) SlotsInUse() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.slots
}

// Adopt records rt as a kept runtime holding slot, mints its id and returns
// the entry.
func (r *Registry) Adopt(lang Lang, rt Runtime, slot *Slot) *Kept {
	k := &Kept{ID: NewTaggedRuntimeID(r.Tag), Lang: lang, Runtime: rt, slot: slot, turn: make(chan struct{}, 1), lastActive: r.now()}
	r.mu.Lock()
	r.kept[k.ID] = k
	r.mu.Unlock()
	return k
}

// Lookup returns the live entry for id, or the id's state.
func (r *Registry) Lookup(id string) (*Kept, RuntimeState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.kept[id]; ok {
		return k, StateLive
	}
	r.pruneTombsLocked()
	if _, ok := r.tombs[id]; ok {
		return nil, StateTombstoned
	}
	return nil, StateUnknown
}

// Forget removes a live kept runtime, releases its slot and, when tombstone
// is true (reaped or killed), remembers the id as expired. It returns false
// when the id was not live (someone else removed it first). The caller
// destroys the runtime.
func (r *Registry) Forget(k *Kept, tombstone bool) bool {
	r.mu.Lock()
	cur, ok := r.kept[k.ID]
	if !ok || cur != k {
		r.mu.Unlock()
		return false
	}
	delete(r.kept, k.ID)
	k.mu.Lock()
	k.gone = true
	k.mu.Unlock()
	if tombstone {
		r.addTombLocked(k.ID)
	}
	r.mu.Unlock()
	k.slot.Release()
	return true
}

// Kept returns the live kept runtimes.
func (r *Registry) Kept() []*Kept {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Kept, 0, len(r.kept))
	for _, k := range r.kept {
		out = append(out, k)
	}
	return out
}

func (r *Registry) addTombLocked(id string) {
	if el, ok := r.tombs[id]; ok {
		r.tombQ.Remove(el)
	}
	r.tombs[id] = r.tombQ.PushBack(tomb{id: id, at: r.now()})
	for r.tombQ.Len() > r.tLimit {
		oldest := r.tombQ.Front()
		r.tombQ.Remove(oldest)
		delete(r.tombs, oldest.Value.(tomb).id)
	}
}

func (r *Registry) pruneTombsLocked() {
	cutoff := r.now().Add(-TombstoneTTL)
	for el := r.tombQ.Front(); el != nil; el = r.tombQ.Front() {
		if el.Value.(tomb).at.After(cutoff) {
			return
		}
		r.tombQ.Remove(el)
		delete(r.tombs, el.Value.(tomb).id)
	}
}

// ClaimFunction claims function id id for owner. Claiming an id the same
// owner already holds succeeds (a re-registration); an id held by another
// owner fails with `function id "<id>" is already taken`.
func (r *Registry) ClaimFunction(id, owner string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.fnIDs[id]; ok && cur != owner {
		return Errorf(CodeInvalidRequest, "function id %q is already taken", id)
	}
	r.fnIDs[id] = owner
	return nil
}

// ReleaseFunction releases id if owner holds it.
func (r *Registry) ReleaseFunction(id, owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fnIDs[id] == owner && owner != OwnerWorker {
		delete(r.fnIDs, id)
	}
}

// FunctionOwner returns the owner of id, or "".
func (r *Registry) FunctionOwner(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fnIDs[id]
}
