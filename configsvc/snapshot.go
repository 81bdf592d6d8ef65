package configsvc

import (
	"sync/atomic"
	"time"
)

// Snapshot is one immutable, complete configuration as it became live. Never
// modify a Snapshot after Store has published it.
type Snapshot struct {
	Config    Config
	Source    string    // where it came from, e.g. "configuration worker", "config file", "defaults"
	Seq       uint64    // increases by one with every swap
	AppliedAt time.Time // when it became live
}

// Store holds the live Snapshot. Readers Load it once per call and use that
// value throughout, so a call never sees a mix of two configurations.
type Store struct {
	cur atomic.Pointer[Snapshot]
}

// NewStore returns a Store whose live snapshot is initial.
func NewStore(initial Config, source string) *Store {
	s := &Store{}
	s.cur.Store(&Snapshot{Config: initial, Source: source, Seq: 1, AppliedAt: time.Now()})
	return s
}

// Load returns the live snapshot.
func (s *Store) Load() *Snapshot { return s.cur.Load() }

// Next returns the snapshot cfg would become if published now, without
// publishing it: a reload builds everything that serves it first (see
// Publish).
func (s *Store) Next(cfg Config, source string) *Snapshot {
	return &Snapshot{Config: cfg, Source: source, Seq: s.cur.Load().Seq + 1, AppliedAt: time.Now()}
}

// Publish makes next, built by Next, the live snapshot and returns the one
// it replaced. It fails (false) when another snapshot was published since
// Next, so Seq numbers are never reused.
func (s *Store) Publish(next *Snapshot) (old *Snapshot, ok bool) {
	old = s.cur.Load()
	if old.Seq+1 != next.Seq {
		return old, false
	}
	return old, s.cur.CompareAndSwap(old, next)
}

// Swap publishes cfg as the live configuration and returns the snapshot it
// replaced together with the new one. Concurrent Swaps are serialized by
// compare-and-swap so Seq numbers are never reused.
func (s *Store) Swap(cfg Config, source string) (old, cur *Snapshot) {
	for {
		cur = s.Next(cfg, source)
		if old, ok := s.Publish(cur); ok {
			return old, cur
		}
	}
}
