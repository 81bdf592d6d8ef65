package core

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
)

// claimBoard is an engine's function registry as the claims see it: each
// worker's frames are applied in order, each after a random delay (a real
// engine may list a registration a moment after it was sent), and a
// listing is a snapshot of one instant.
type claimBoard struct {
	mu     sync.Mutex
	claims map[string]map[string]bool // namespace → tags
	serves map[string]string          // namespace → the tag whose functions the engine lists
}

func newClaimBoard() *claimBoard {
	return &claimBoard{claims: map[string]map[string]bool{}, serves: map[string]string{}}
}

// boardWorker is one worker's connection: its frames queue in order.
type boardWorker struct {
	b      *claimBoard
	tag    string
	frames chan func()
}

func (b *claimBoard) worker(t *testing.T, tag string) *boardWorker {
	w := &boardWorker{b: b, tag: tag, frames: make(chan func(), 64)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range w.frames {
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
			b.mu.Lock()
			f()
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() { close(w.frames); <-done })
	return w
}

func (w *boardWorker) Stake(ctx context.Context, ns string) error {
	w.frames <- func() {
		if w.b.claims[ns] == nil {
			w.b.claims[ns] = map[string]bool{}
		}
		w.b.claims[ns][w.tag] = true
	}
	return nil
}

func (w *boardWorker) Withdraw(ns string) {
	w.frames <- func() { delete(w.b.claims[ns], w.tag) }
}

func (w *boardWorker) Claimants(ctx context.Context, ns string) ([]string, error) {
	time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	var tags []string
	for tag := range w.b.claims[ns] {
		tags = append(tags, tag)
	}
	sort.Strings(tags)
	return tags, nil
}

// NamespaceTag answers the worker whose functions the engine lists for ns.
func (w *boardWorker) NamespaceTag(ctx context.Context, ns string) (string, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	if tag := w.b.serves[ns]; tag != w.tag {
		return tag, nil
	}
	return "", nil
}

// Two workers that claim one new namespace at once never both go ahead:
// one creates it, and the other's registration is forwarded until it
// reaches the worker that did (a forwarded call claims again there) — 120
// races with the engine's own delays, a third of them with one worker a
// little behind the other.
func TestOnlyOneWorkerCreatesANewNamespace(t *testing.T) {
	b := newClaimBoard()
	workers := map[string]*Namespaces{}
	for _, tag := range []string{"aaaa", "bbbb"} {
		w := b.worker(t, tag)
		reg := NewRegistry(nil)
		reg.Tag = tag
		workers[tag] = &Namespaces{Registry: reg, Run: &RunService{Registry: reg, Forward: &recordForward{}}, Locate: w, Claims: w}
	}
	for round := 0; round < 120; round++ {
		ns := fmt.Sprintf("race%d::", round)
		type outcome struct {
			from, at string
			hops     int
			release  func()
			err      error
		}
		out := make(chan outcome, 2)
		for tag := range workers {
			go func() {
				if round%3 == 0 && tag == "bbbb" {
					time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
				}
				at := tag
				for hops := 0; hops < 10; hops++ {
					release, target, err := workers[at].claim(context.Background(), ns)
					if err != nil {
						out <- outcome{from: tag, err: err}
						return
					}
					if target == "" {
						// The registration is served here: the engine lists
						// the namespace's functions as this worker's.
						b.mu.Lock()
						prev := b.serves[ns]
						if prev == "" {
							b.serves[ns] = at
						}
						b.mu.Unlock()
						if prev != "" && prev != at {
							out <- outcome{from: tag, err: fmt.Errorf("both %s and %s went ahead", prev, at)}
							return
						}
						out <- outcome{tag, at, hops, release, nil}
						return
					}
					at = target[len(target)-TagLen:]
				}
				out <- outcome{from: tag, err: fmt.Errorf("still forwarded after 10 hops")}
			}()
		}
		var ends []outcome
		for range 2 {
			o := <-out
			if o.err != nil {
				t.Fatalf("round %d: from %s: %v", round, o.from, o.err)
			}
			ends = append(ends, o)
		}
		if ends[0].at != ends[1].at {
			t.Fatalf("round %d: served on %s and on %s", round, ends[0].at, ends[1].at)
		}
		for _, o := range ends {
			o.release()
		}
	}
}

// A claim is withdrawn when nothing relies on it any more, and a second
// registration on the worker that holds it goes ahead without asking.
func TestAClaimLastsWhileARegistrationNeedsIt(t *testing.T) {
	b := newClaimBoard()
	w := b.worker(t, "aaaa")
	reg := NewRegistry(nil)
	reg.Tag = "aaaa"
	n := &Namespaces{Registry: reg, Run: &RunService{Registry: reg, Forward: &recordForward{}}, Locate: w, Claims: w}
	r1, target, err := n.claim(context.Background(), "app::")
	if err != nil || target != "" {
		t.Fatalf("%q %v", target, err)
	}
	r2, target, err := n.claim(context.Background(), "app::")
	if err != nil || target != "" {
		t.Fatalf("second: %q %v", target, err)
	}
	r1()
	r1() // a release is once
	listed := func() []string {
		tags, _ := w.Claimants(context.Background(), "app::")
		return tags
	}
	time.Sleep(20 * time.Millisecond)
	if got := listed(); len(got) != 1 {
		t.Fatalf("the claim went while a registration relied on it: %v", got)
	}
	r2()
	deadline := time.Now().Add(2 * time.Second)
	for len(listed()) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the claim outlived its registrations: %v", listed())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
