package core

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sort"
	"sync"
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
type Router struct {
	mu        sync.RWMutex
	routes    map[string]Route
	transport Transport
	log       *slog.Logger
}

// NewRouter returns an empty Router whose calls reach the bus through
// transport (nil means no bus: every guest call fails).
func NewRouter(transport Transport, log *slog.Logger) *Router {
	if log == nil {
		log = slog.Default()
	}
	return &Router{routes: map[string]Route{}, transport: transport, log: log}
}

// Handle registers route under functionID, replacing any previous one.
func (r *Router) Handle(functionID string, route Route) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.routes[functionID] = route
}

// Remove deletes the route of functionID.
func (r *Router) Remove(functionID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.routes, functionID)
}

// IDs returns the routed function ids, sorted.
func (r *Router) IDs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := make([]string, 0, len(r.routes))
	for id := range r.routes {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Reconfigure swaps every route's pipeline to snap, keeping its stages.
func (r *Router) Reconfigure(snap *configsvc.Snapshot) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, rt := range r.routes {
		rt.Pipeline.Install(snap)
	}
}

// Invoke handles one invocation of functionID. It returns ErrFunctionNotFound
// for an id without a route; every other failure is an *Error (a panic
// anywhere below becomes the internal code-runner::engine error).
func (r *Router) Invoke(ctx context.Context, functionID string, payload, metadata json.RawMessage) (result any, err error) {
	r.mu.RLock()
	route, ok := r.routes[functionID]
	r.mu.RUnlock()
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
