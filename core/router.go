package core

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
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
// use; routes may be added and removed while calls are served.
//
// The worker's own routes are one immutable table behind one pointer,
// together with the snapshot the router serves: a reconfiguration builds
// every route's chain for the new snapshot first and then swaps the whole
// table, so no call ever sees one route on the new configuration and
// another on the old. Routes added with HandleCurrent (guest functions,
// which come and go with guest code) live beside the table in a concurrent
// map: their chains do not depend on the configuration, and each call takes
// the snapshot from the same table load, so they move with a
// reconfiguration at the same instant while adding or removing one costs
// no copy of the table.
type Router struct {
	mu        sync.Mutex // serializes table writers; readers only load table
	table     atomic.Pointer[routeTable]
	dynamic   sync.Map // function id → Handler (HandleCurrent)
	transport Transport
	log       *slog.Logger
}

// routeTable is the immutable part of a Router.
type routeTable struct {
	routes map[string]Route
	snap   *configsvc.Snapshot // what dynamic routes serve
}

// NewRouter returns an empty Router whose calls reach the bus through
// transport (nil means no bus: every guest call fails). Until its first
// Reconfigure, dynamic routes serve the default configuration.
func NewRouter(transport Transport, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	r := &Router{transport: transport, log: log}
	r.table.Store(&routeTable{routes: map[string]Route{}, snap: &configsvc.Snapshot{Config: configsvc.Defaults(), Source: "defaults"}})
	return r
}

// update swaps in a copy of the table changed by edit.
func (r *Router) update(edit func(*routeTable)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table.Load()
	next := &routeTable{routes: make(map[string]Route, len(old.routes)+1), snap: old.snap}
	for id, rt := range old.routes {
		next.routes[id] = rt
	}
	edit(next)
	r.table.Store(next)
}

// Handle registers route under functionID, replacing any previous one.
func (r *Router) Handle(functionID string, route Route) {
	r.update(func(t *routeTable) { t.routes[functionID] = route })
}

// HandleCurrent installs a dynamic route for functionID: terminal behind
// stages, serving whatever snapshot the router serves at each call (so a
// route added while a reload swaps the table is never left on the old
// configuration). It replaces a previous dynamic route of that id and
// never copies the table.
func (r *Router) HandleCurrent(functionID string, terminal Handler, stages ...Stage) {
	r.dynamic.Store(functionID, Chain(terminal, stages...))
}

// RemoveCurrent deletes the dynamic route of functionID, if any; a static
// route of that id stays.
func (r *Router) RemoveCurrent(functionID string) { r.dynamic.Delete(functionID) }

// Remove deletes the route of functionID, static or dynamic.
func (r *Router) Remove(functionID string) {
	r.dynamic.Delete(functionID)
	if _, ok := r.table.Load().routes[functionID]; ok {
		r.update(func(t *routeTable) { delete(t.routes, functionID) })
	}
}

// Reconfigure moves every route to snap, keeping its stages: each static
// route's chain is rebuilt for snap into a new table, which also carries
// snap for the dynamic routes, and the table is swapped in one step.
func (r *Router) Reconfigure(snap *configsvc.Snapshot) {
	r.update(func(t *routeTable) {
		t.snap = snap
		for id, rt := range t.routes {
			rt.Pipeline = rt.Pipeline.With(snap)
			t.routes[id] = rt
		}
	})
}

// Invoke handles one invocation of functionID. It returns ErrFunctionNotFound
// for an id without a route; every other failure is an *Error (a panic
// anywhere below becomes the internal code-runner::engine error).
func (r *Router) Invoke(ctx context.Context, functionID string, payload, metadata json.RawMessage) (result any, err error) {
	t := r.table.Load()
	route, ok := t.routes[functionID]
	var dynamic Handler
	if !ok {
		h, found := r.dynamic.Load(functionID)
		if !found {
			return nil, ErrFunctionNotFound
		}
		dynamic = h.(Handler)
	}
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "panic while handling a call", "function_id", functionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, AsError(fmt.Errorf("panic: %v", p), functionID)
		}
	}()
	call := &Call{FunctionID: functionID, Payload: payload, Metadata: metadata, Received: time.Now(), Transport: r.transport}
	if route.Decode != nil {
		if err := route.Decode(call); err != nil {
			return nil, AsError(err, functionID)
		}
	}
	var res any
	if dynamic != nil {
		call.Config = &t.snap.Config
		res, err = dynamic(ctx, call)
	} else {
		res, err = route.Pipeline.Serve(ctx, call)
	}
	if err != nil {
		return nil, AsError(err, functionID)
	}
	return res, nil
}
