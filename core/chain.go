package core

import (
	"context"

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

// Route binds one function id to its decoder, its terminal handler and the
// stages in front of it. The Router compiles a route's chain once per
// configuration snapshot, so a call never sees a chain of one snapshot
// with the configuration of another.
type Route struct {
	Decode   Decoder // may be nil
	Terminal Handler
	// Stages are the route's stages, outermost first.
	Stages []Stage
	// StagesFor, when set, gives the stages for a snapshot instead of
	// Stages: a hook's stages follow the configuration, and a reload swaps
	// them with everything else.
	StagesFor func(*configsvc.Snapshot) []Stage
}

// compile builds r's chain for snap: the decoder, then the stages.
func (r Route) compile(snap *configsvc.Snapshot) Handler {
	stages := r.Stages
	if r.StagesFor != nil {
		stages = r.StagesFor(snap)
	}
	h := Chain(r.Terminal, stages...)
	if r.Decode == nil {
		return h
	}
	return func(ctx context.Context, call *Call) (any, error) {
		if err := r.Decode(call); err != nil {
			return nil, err
		}
		return h(ctx, call)
	}
}
