package core

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"
)

func TestRuntimeIDFormat(t *testing.T) {
	re := regexp.MustCompile(`^rt-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewRuntimeID()
		if len(id) != 39 || !re.MatchString(id) {
			t.Fatalf("bad id %q", id)
		}
		if seen[id] {
			t.Fatal("duplicate id")
		}
		seen[id] = true
	}
	ns := NewRunNamespace()
	if !regexp.MustCompile(`^code-runner::[0-9a-f]{32}::$`).MatchString(ns) {
		t.Fatalf("bad namespace %q", ns)
	}
}

func TestSlotBudgetIsShared(t *testing.T) {
	r := NewRegistry(nil)
	a, err := r.AcquireSlot(2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.AcquireSlot(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.AcquireSlot(2); err == nil || err.Error() != "code-runner::capacity: all 2 runtime slots are in use" {
		t.Fatalf("third slot: %v", err)
	}
	// Lowering the live maximum refuses new runtimes until under it.
	a.Release()
	a.Release() // idempotent
	if _, err := r.AcquireSlot(1); err == nil {
		t.Fatal("lowered max must refuse while one slot is held")
	}
	b.Release()
	if r.SlotsInUse() != 0 {
		t.Fatalf("slots in use %d", r.SlotsInUse())
	}
	// Concurrent acquisition never oversubscribes.
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := r.AcquireSlot(8); err == nil {
				mu.Lock()
				got++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got != 8 {
		t.Fatalf("%d slots granted with max 8", got)
	}
}

func TestFunctionRegistryReservesWorkerIDs(t *testing.T) {
	r := NewRegistry(nil)
	for _, id := range WorkerFunctionIDs {
		err := r.ClaimFunction(id, "app::")
		if err == nil || err.Error() != fmt.Sprintf("code-runner::invalid_request: function id %q is already taken", id) {
			t.Fatalf("claim %s: %v", id, err)
		}
		r.ReleaseFunction(id, OwnerWorker)
		if r.FunctionOwner(id) != OwnerWorker {
			t.Fatalf("%s released", id)
		}
	}
	if err := r.ClaimFunction("app::greet", "node:app::"); err != nil {
		t.Fatal(err)
	}
	if err := r.ClaimFunction("app::greet", "node:app::"); err != nil {
		t.Fatalf("same owner re-claim: %v", err)
	}
	if err := r.ClaimFunction("app::greet", "python:app::"); err == nil {
		t.Fatal("other language claimed a held id")
	}
	r.ReleaseFunction("app::greet", "python:app::") // not the owner: no effect
	if r.FunctionOwner("app::greet") != "node:app::" {
		t.Fatal("non-owner released the id")
	}
	r.ReleaseFunction("app::greet", "node:app::")
	if err := r.ClaimFunction("app::greet", "python:app::"); err != nil {
		t.Fatalf("freed id: %v", err)
	}
}

func TestTombstonesBoundAndExpiry(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	r := NewRegistry(clock)

	first := NewRuntimeID()
	r.Tombstone(first)
	if _, st := r.Lookup(first); st != StateTombstoned {
		t.Fatalf("state %v", st)
	}
	for i := 0; i < TombstoneLimit; i++ {
		r.Tombstone(fmt.Sprintf("rt-%d", i))
	}
	if n := r.TombstoneCount(); n != TombstoneLimit {
		t.Fatalf("%d tombstones, bound is %d", n, TombstoneLimit)
	}
	if _, st := r.Lookup(first); st != StateUnknown {
		t.Fatal("oldest tombstone not evicted at the bound")
	}
	if _, st := r.Lookup("rt-9999"); st != StateTombstoned {
		t.Fatal("newest evicted")
	}
	advance(TombstoneTTL - time.Second)
	if _, st := r.Lookup("rt-5"); st != StateTombstoned {
		t.Fatal("expired early")
	}
	advance(2 * time.Second)
	if _, st := r.Lookup("rt-5"); st != StateUnknown {
		t.Fatal("tombstone older than 24 h still answers expired")
	}
	if r.TombstoneCount() != 0 {
		t.Fatal("aged tombstones not pruned")
	}
}

func TestKeptForgetAndTurns(t *testing.T) {
	r := NewRegistry(nil)
	slot, _ := r.AcquireSlot(4)
	eng := &fakeEngine{lang: LangNode}
	rt, _ := eng.NewRuntime(context.Background(), RuntimeOptions{})
	k := r.Adopt(LangNode, rt, slot)
	if got, st := r.Lookup(k.ID); st != StateLive || got != k {
		t.Fatal("not live")
	}
	if !k.Acquire(context.Background()) {
		t.Fatal("first turn refused")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if k.Acquire(ctx) {
		t.Fatal("second turn granted while the first is held")
	}
	if _, idle := k.Idle(time.Now()); idle {
		t.Fatal("idle while a call holds the turn")
	}
	k.Release()
	if !r.Forget(k, true) || r.Forget(k, true) {
		t.Fatal("Forget must succeed exactly once")
	}
	if _, st := r.Lookup(k.ID); st != StateTombstoned {
		t.Fatal("killed id not tombstoned")
	}
	if r.SlotsInUse() != 0 {
		t.Fatal("slot not freed")
	}
}
