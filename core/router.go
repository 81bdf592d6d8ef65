package core

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

// Decoder turns a raw payload into the Call's request fields. It returns an
// error (normally code-runner::invalid_request) for a malformed request.
type Decoder func(call *Call) error

// Route binds one function id to its decoder and pipeline.
type Route struct {
	Decode   Decoder // may be nil
	Pipeline *Pipeline
}

// Router dispatches invocations by function id. It is safe for concurrent
// use; routes may be added and removed while calls are served. Its routes
// are one immutable table behind one pointer: a reconfiguration builds every
// route's chain for the new snapshot first and then swaps the whole table,
// so no call ever sees one route on the new configuration and another on
// the old.
type Router struct {
	mu        sync.Mutex // serializes writers; readers only load table
	table     atomic.Pointer[map[string]Route]
	snap      *configsvc.Snapshot // the last Reconfigure's; guarded by mu
	transport Transport
	log       *slog.Logger
}

// NewRouter returns an empty Router whose calls reach the bus through
// transport (nil means no bus: every guest call fails).
func NewRouter(transport Transport, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	r := &Router{transport: transport, log: log}
	r.table.Store(&map[string]Route{})
	return r
}

// update swaps in a copy of the table changed by edit.
func (r *Router) update(edit func(map[string]Route)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.table.Load()
	next := make(map[string]Route, len(old)+1)
	for id, rt := range old {
		next[id] = rt
	}
	edit(next)
	r.table.Store(&next)
}

// Handle registers route under functionID, replacing any previous one.
func (r *Router) Handle(functionID string, route Route) {
	r.update(func(t map[string]Route) { t[functionID] = route })
}

// HandleCurrent installs a route for functionID serving terminal behind
// stages on the router's current configuration: the snapshot of its last
// Reconfigure (a route added while a reload swaps the table can never be
// left on the old one), or the default configuration before any.
func (r *Router) HandleCurrent(functionID string, terminal Handler, stages ...Stage) {
	r.update(func(t map[string]Route) {
		d := configsvc.Defaults()
		t[functionID] = Route{Pipeline: NewPipeline(r.snapshotOr(&configsvc.Snapshot{Config: d}), terminal, stages...)}
	})
}

// Remove deletes the route of functionID.
func (r *Router) Remove(functionID string) {
	r.update(func(t map[string]Route) { delete(t, functionID) })
}

// IDs returns the routed function ids, sorted.
func (r *Router) IDs() []string {
	t := *r.table.Load()
	ids := make([]string, 0, len(t))
	for id := range t {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Reconfigure moves every route to snap, keeping its stages: each route's
// chain is rebuilt for snap into a new table, and the table is swapped in
// one step.
func (r *Router) Reconfigure(snap *configsvc.Snapshot) {
	r.update(func(t map[string]Route) {
		r.snap = snap
		for id, rt := range t {
			rt.Pipeline = rt.Pipeline.With(snap)
			t[id] = rt
		}
	})
}

// Invoke handles one invocation of functionID. It returns ErrFunctionNotFound
// for an id without a route; every other failure is an *Error (a panic
// anywhere below becomes the internal code-runner::engine error).
func (r *Router) Invoke(ctx context.Context, functionID string, payload, metadata json.RawMessage) (result any, err error) {
	route, ok := (*r.table.Load())[functionID]
	if !ok {
		return nil, ErrFunctionNotFound
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("panic while handling a call", "function_id", functionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, AsError(fmt.Errorf("panic: %v", p), functionID)
		}
	}()
	call := &Call{FunctionID: functionID, Payload: payload, Metadata: metadata, Received: time.Now(), Transport: r.transport}
	if route.Decode != nil {
		if err := route.Decode(call); err != nil {
			return nil, AsError(err, functionID)
		}
	}
	res, err := route.Pipeline.Serve(ctx, call)
	if err != nil {
		return nil, AsError(err, functionID)
	}
	return res, nil
}
