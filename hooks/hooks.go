// Package hooks owns code-runner's named hook points — pre_generate (the
// harness guidance hook) and config_changed (applying a new configuration) —
// each an ordered list of stages that can be swapped whole while calls run.
// A hook point holds no configuration itself; its stages receive what they
// need in the value that flows through them.
package hooks

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Names of the hook points.
const (
	PreGenerate   = "pre_generate"
	ConfigChanged = "config_changed"
)

// Stage is one named step of a hook point. It receives the value produced by
// the previous stage and returns the value for the next one.
type Stage[T any] struct {
	Name string
	Fn   func(ctx context.Context, v T) (T, error)
}

// Point is a named, ordered list of stages. Run loads the list once, so a
// concurrent Add or Replace never affects a run in progress.
type Point[T any] struct {
	name   string
	mu     sync.Mutex // serializes writers; readers never lock
	stages atomic.Pointer[[]Stage[T]]
}

// NewPoint returns an empty hook point.
func NewPoint[T any](name string) *Point[T] {
	p := &Point[T]{name: name}
	p.stages.Store(&[]Stage[T]{})
	return p
}

// Name returns the hook point's name.
func (p *Point[T]) Name() string { return p.name }

// Add appends a stage.
func (p *Point[T]) Add(s Stage[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cur := *p.stages.Load()
	next := make([]Stage[T], len(cur), len(cur)+1)
	copy(next, cur)
	next = append(next, s)
	p.stages.Store(&next)
}

// Replace swaps the whole stage list.
func (p *Point[T]) Replace(stages []Stage[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	next := append([]Stage[T]{}, stages...)
	p.stages.Store(&next)
}

// Names returns the stage names in order.
func (p *Point[T]) Names() []string {
	cur := *p.stages.Load()
	out := make([]string, len(cur))
	for i, s := range cur {
		out[i] = s.Name
	}
	return out
}

// Run passes v through every stage in order. The first failing stage stops
// the run; its error is returned wrapped with the point and stage names,
// together with the last good value.
func (p *Point[T]) Run(ctx context.Context, v T) (T, error) {
	for _, s := range *p.stages.Load() {
		next, err := s.Fn(ctx, v)
		if err != nil {
			return v, fmt.Errorf("hook %s, stage %s: %w", p.name, s.Name, err)
		}
		v = next
	}
	return v, nil
}
