package core

import (
	"context"
	"encoding/json"
	"errors"
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

// Router dispatches invocations by function id, and it is the one holder of
// the live configuration: an immutable table of every route's chain,
// compiled for one snapshot, behind one pointer. Everything else that
// follows the configuration (engines, sweeper) reads Live.
//
// A reconfiguration provisions a new table — every chain compiled for the
// new snapshot — and then swaps it in with one store, so no call ever sees
// one route on the new configuration and another on the old, and calls in
// flight finish on the table they started with. Routes added with
// HandleCurrent (guest functions, which come and go with guest code) live
// beside the table in a concurrent map; each call of one takes the snapshot
// from the same table load, so they move with a reconfiguration at the
// same instant while adding or removing one costs no copy of the table.
type Router struct {
	mu        sync.Mutex // serializes table writers; readers only load table
	table     atomic.Pointer[Table]
	dynamic   sync.Map // function id → Handler (HandleCurrent)
	transport Transport
	log       *slog.Logger
	door      []Stage // in front of every route's own stages
	notFound  Handler // the door around the not-found answer
}

// Table is one immutable generation of a Router: its routes, each chain
// compiled for snap. Provision builds one; Swap makes it live.
type Table struct {
	routes map[string]compiledRoute
	snap   *configsvc.Snapshot
	base   *Table // the table it was provisioned from (nil: not provisioned)
}

type compiledRoute struct {
	route   Route
	handler Handler
}

// NewRouter returns an empty Router serving initial, whose calls reach the
// bus through transport (nil means no bus: every guest call fails). door is
// the stage list every call passes first, whatever its route — an unknown
// id included (the worker's: DoorStages); nil stages are skipped.
func NewRouter(initial configsvc.Config, source string, transport Transport, log *slog.Logger, door ...Stage) *Router {
	if log == nil {
		log = slog.Default()
	}
	r := &Router{transport: transport, log: log}
	for _, s := range door {
		if s != nil {
			r.door = append(r.door, s)
		}
	}
	// Innermost in the door: a panic below becomes an error the door's
	// stages see (the call's span ends, its admission is released).
	r.door = append(r.door, r.recoverPanics)
	r.notFound = Chain(func(context.Context, *Call) (any, error) { return nil, ErrFunctionNotFound }, r.door...)
	r.table.Store(&Table{routes: map[string]compiledRoute{}, snap: &configsvc.Snapshot{Config: initial, Source: source, Seq: 1, AppliedAt: time.Now()}})
	return r
}

// Live returns the live configuration snapshot. Read it once and use that
// value throughout a piece of work: a later Live may be another.
func (r *Router) Live() *configsvc.Snapshot { return r.table.Load().snap }

// update swaps in a copy of the table changed by edit, under the writer
// lock.
func (r *Router) update(edit func(*Table)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.table.Load()
	next := &Table{routes: make(map[string]compiledRoute, len(old.routes)+1), snap: old.snap}
	for id, rt := range old.routes {
		next.routes[id] = rt
	}
	edit(next)
	r.table.Store(next)
}

// Handle registers route under functionID, replacing any previous one; its
// chain is compiled for the live snapshot at once.
func (r *Router) Handle(functionID string, route Route) {
	r.update(func(t *Table) {
		t.routes[functionID] = compiledRoute{route: route, handler: Chain(route.compile(t.snap), r.door...)}
	})
}

// HandleCurrent installs a dynamic route for functionID: terminal behind
// stages, serving whatever snapshot the router serves at each call (so a
// route added while a reload swaps the table is never left on the old
// configuration). It replaces a previous dynamic route of that id and
// never copies the table.
func (r *Router) HandleCurrent(functionID string, terminal Handler, stages ...Stage) {
	r.dynamic.Store(functionID, Chain(Chain(terminal, stages...), r.door...))
}

// RemoveCurrent deletes the dynamic route of functionID, if any; a static
// route of that id stays.
func (r *Router) RemoveCurrent(functionID string) { r.dynamic.Delete(functionID) }

// Remove deletes the route of functionID, static or dynamic.
func (r *Router) Remove(functionID string) {
	r.dynamic.Delete(functionID)
	if _, ok := r.table.Load().routes[functionID]; ok {
		r.update(func(t *Table) { delete(t.routes, functionID) })
	}
}

// Provision builds, without making it live, the table that serves cfg:
// every route's chain compiled for the snapshot cfg would become. It
// cannot fail and changes nothing.
func (r *Router) Provision(cfg configsvc.Config, source string) *Table {
	return r.provision(r.table.Load(), cfg, source)
}

func (r *Router) provision(base *Table, cfg configsvc.Config, source string) *Table {
	snap := &configsvc.Snapshot{Config: cfg, Source: source, Seq: base.snap.Seq + 1, AppliedAt: time.Now()}
	t := &Table{routes: make(map[string]compiledRoute, len(base.routes)), snap: snap, base: base}
	for id, rt := range base.routes {
		t.routes[id] = compiledRoute{route: rt.route, handler: Chain(rt.route.compile(snap), r.door...)}
	}
	return t
}

// Swap makes t live and returns the snapshot it replaced. When the table
// changed since t was provisioned (a route added or removed, another
// swap), t's configuration is provisioned again on the current table
// first, so Swap never loses a route and never fails; Seq numbers grow by
// one per swap.
func (r *Router) Swap(t *Table) (old *configsvc.Snapshot, live *configsvc.Snapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := r.table.Load()
	if t.base != cur {
		t = r.provision(cur, t.snap.Config, t.snap.Source)
	}
	t.base = nil // the old table is not kept alive by the new one
	r.table.Store(t)
	return cur.snap, t.snap
}

// recoverPanics turns a panic of the route below into the internal
// code-runner::engine error, logged with its stack.
func (r *Router) recoverPanics(next Handler) Handler {
	return func(ctx context.Context, call *Call) (result any, err error) {
		defer func() {
			if p := recover(); p != nil {
				r.log.ErrorContext(ctx, "panic while handling a call", "function_id", call.FunctionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				result, err = nil, AsError(fmt.Errorf("panic: %v", p), call.FunctionID)
			}
		}()
		return next(ctx, call)
	}
}

// ServeCallback runs terminal behind the door and stages for a call that
// has no route of its own — a guest trigger type's provider callback —
// under the live snapshot. The terminal's error comes back as it returned
// it (the callback's caller words its own failure); a panic below the door
// is the internal engine error.
func (r *Router) ServeCallback(ctx context.Context, in Inbound, terminal Handler, stages ...Stage) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "panic in the door while handling a callback", "function_id", in.FunctionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, AsError(fmt.Errorf("panic: %v", p), in.FunctionID)
		}
	}()
	t := r.table.Load()
	call := &Call{FunctionID: in.FunctionID, Payload: in.Payload, Metadata: in.Metadata, Received: time.Now(), Transport: r.transport,
		Config: &t.snap.Config, Guest: true, Traceparent: in.Traceparent, Baggage: in.Baggage}
	return Chain(Chain(terminal, stages...), r.door...)(ctx, call)
}

// Inbound is one invocation as it reaches the router.
type Inbound struct {
	FunctionID string
	Payload    json.RawMessage
	Metadata   json.RawMessage
	// Traceparent and Baggage are the caller's W3C trace context, as the
	// bus delivered it (the door's telemetry stage continues it).
	Traceparent, Baggage string
}

// Invoke handles one invocation of functionID with no trace context of its
// own (Serve).
func (r *Router) Invoke(ctx context.Context, functionID string, payload, metadata json.RawMessage) (any, error) {
	return r.Serve(ctx, Inbound{FunctionID: functionID, Payload: payload, Metadata: metadata})
}

// Serve handles one invocation: the door's stages, then the route's
// decoder, stages and terminal. An id without a route passes the door and
// answers ErrFunctionNotFound; every other failure is an *Error (a panic
// anywhere, the door's own stages included, becomes the internal
// code-runner::engine error).
func (r *Router) Serve(ctx context.Context, in Inbound) (result any, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.ErrorContext(ctx, "panic in the door while handling a call", "function_id", in.FunctionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			result, err = nil, AsError(fmt.Errorf("panic: %v", p), in.FunctionID)
		}
	}()
	functionID := in.FunctionID
	t := r.table.Load()
	route, static := t.routes[functionID]
	h := route.handler
	guest := false
	if !static {
		if d, found := r.dynamic.Load(functionID); found {
			h, guest = d.(Handler), true
		} else {
			h = r.notFound
		}
	}
	call := &Call{FunctionID: functionID, Payload: in.Payload, Metadata: in.Metadata, Received: time.Now(), Transport: r.transport,
		Config: &t.snap.Config, Guest: guest, Traceparent: in.Traceparent, Baggage: in.Baggage}
	res, err := h(ctx, call)
	if errors.Is(err, ErrFunctionNotFound) {
		return nil, ErrFunctionNotFound
	}
	if err != nil {
		return nil, AsError(err, functionID)
	}
	return res, nil
}
