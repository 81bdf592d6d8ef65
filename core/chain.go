package core

import (
	"context"
	"sync/atomic"

	"github.com/code-runner-go/code-runner/configsvc"
)

// Handler handles one Call and returns its response value or an error.
type Handler func(ctx context.Context, call *Call) (any, error)

// Stage wraps the next Handler: work before calling next happens on the way
// in, work after it on the way out (the net/http middleware idiom).
type Stage func(next Handler) Handler

// Chain composes stages around terminal; stages[0] is outermost.
func Chain(terminal Handler, stages ...Stage) Handler {
	h := terminal
	for i := len(stages) - 1; i >= 0; i-- {
		h = stages[i](h)
	}
	return h
}

// compiled is one immutable chain together with the configuration snapshot
// it serves.
type compiled struct {
	handler Handler
	snap    *configsvc.Snapshot
}

// Pipeline is a named, live-swappable chain. Serve loads the current chain
// once per call; Install swaps a new one in whole, so calls in flight finish
// on the chain (and the configuration) they started with.
type Pipeline struct {
	terminal Handler
	stages   atomic.Pointer[[]Stage]
	cur      atomic.Pointer[compiled]
}

// NewPipeline returns a Pipeline serving terminal behind stages under snap.
func NewPipeline(snap *configsvc.Snapshot, terminal Handler, stages ...Stage) *Pipeline {
	p := &Pipeline{terminal: terminal}
	p.Install(snap, stages...)
	return p
}

// Install composes stages around the terminal handler and swaps the result in
// together with snap. Passing no stages keeps the current stage list (a pure
// configuration swap).
func (p *Pipeline) Install(snap *configsvc.Snapshot, stages ...Stage) {
	if stages == nil {
		if cur := p.stages.Load(); cur != nil {
			stages = *cur
		}
	} else {
		s := append([]Stage(nil), stages...)
		p.stages.Store(&s)
	}
	p.cur.Store(&compiled{handler: Chain(p.terminal, stages...), snap: snap})
}

// With returns a new Pipeline with p's terminal and stages serving snap;
// p itself is unchanged (Router.Reconfigure builds every route's with it
// before swapping any).
func (p *Pipeline) With(snap *configsvc.Snapshot) *Pipeline {
	var stages []Stage
	if cur := p.stages.Load(); cur != nil {
		stages = *cur
	}
	return NewPipeline(snap, p.terminal, stages...)
}

// Serve runs call through the current chain with call.Config set to that
// chain's configuration.
func (p *Pipeline) Serve(ctx context.Context, call *Call) (any, error) {
	c := p.cur.Load()
	call.Config = &c.snap.Config
	return c.handler(ctx, call)
}
