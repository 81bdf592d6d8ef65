package core

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/code-runner-go/code-runner/limits"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// GuestInvocation is one bus invocation of a guest-registered function:
// the payload and metadata as they came, then, on the engine's side of the
// route, the budget the call's configuration grants the handler (the
// route's timeout clamp; engines start it after any restart of the
// runtime) and the bridge for the guest calls the handler makes.
type GuestInvocation struct {
	Payload  json.RawMessage
	Metadata json.RawMessage
	// Traceparent and Baggage are the caller's trace context, as the bus
	// delivered it.
	Traceparent, Baggage string
	// Budget and Bridge are the route's (GuestStages); zero on the bus side.
	Budget time.Duration
	Bridge Bridge
}

// GuestRoutes is the core.Bus engines publish guest functions through:
// each guest function becomes a route of the router (GuestStages, then the
// engine's handler) and the bus below is handed a
// handler that enters through that router, so a guest function is served
// through the same door, on the same configuration snapshot, as the
// worker's own functions. Triggers and trigger types pass straight to the
// bus below.
type GuestRoutes struct {
	Router *Router
	Bus    Bus
}

var _ Bus = (*GuestRoutes)(nil)

// RegisterFunction installs reg.ID's route and publishes it on the bus.
func (g *GuestRoutes) RegisterFunction(reg FunctionRegistration, h GuestHandler) {
	terminal := func(ctx context.Context, call *Call) (any, error) {
		res, err := h(ctx, GuestInvocation{Payload: call.Payload, Metadata: call.Metadata, Budget: call.Budget, Bridge: call.Bridge})
		if err != nil {
			return nil, err
		}
		return res, nil // nil stays nil: the wire adapter answers null
	}
	g.Router.HandleCurrent(reg.ID, terminal, GuestStages(reg.PayloadLimit)...)
	id := reg.ID
	g.Bus.RegisterFunction(reg, func(ctx context.Context, inv GuestInvocation) (json.RawMessage, error) {
		res, err := g.Router.Serve(ctx, Inbound{FunctionID: id, Payload: inv.Payload, Metadata: inv.Metadata, Traceparent: inv.Traceparent, Baggage: inv.Baggage})
		if err != nil {
			return nil, err
		}
		if raw, ok := res.(json.RawMessage); ok {
			return raw, nil
		}
		return jsonx.Marshal(res) // only a stage's own value; guest values are raw
	})
}

type bridgeKey struct{}

// WithBridge returns ctx carrying b, the bridge for the guest calls of the
// work ctx is handed to (an engine keeps a task's context while its guest
// code runs, and its guest calls find their bridge there).
func WithBridge(ctx context.Context, b Bridge) context.Context {
	return context.WithValue(ctx, bridgeKey{}, b)
}

// BridgeFrom returns the bridge ctx carries (WithBridge), or nil: work no
// routed call started, such as detached guest work.
func BridgeFrom(ctx context.Context) Bridge {
	b, _ := ctx.Value(bridgeKey{}).(Bridge)
	return b
}

// UnregisterFunction retires id from the bus and removes its dynamic route
// (never a static one: the worker's own functions stay).
func (g *GuestRoutes) UnregisterFunction(id string) {
	g.Bus.UnregisterFunction(id)
	g.Router.RemoveCurrent(id)
}

// RegisterTrigger passes through.
func (g *GuestRoutes) RegisterTrigger(t TriggerRegistration) string { return g.Bus.RegisterTrigger(t) }

// UnregisterTrigger passes through.
func (g *GuestRoutes) UnregisterTrigger(id string) { g.Bus.UnregisterTrigger(id) }

// RegisterTriggerType publishes a guest trigger type whose provider
// callbacks enter through the router (CallbackStages): the engine delivers a
// binding to guest code under the call's budget and bridge, counted and
// traced like any call.
func (g *GuestRoutes) RegisterTriggerType(id, description string, p TriggerProvider) {
	g.Bus.RegisterTriggerType(id, description, routedProvider{router: g.Router, typeID: id, p: p})
}

// routedProvider is a guest TriggerProvider behind the router's door.
type routedProvider struct {
	router *Router
	typeID string
	p      TriggerProvider
}

func (rp routedProvider) RegisterTrigger(ctx context.Context, b Binding) error {
	return rp.serve(ctx, b, rp.p.RegisterTrigger)
}

func (rp routedProvider) UnregisterTrigger(ctx context.Context, b Binding) error {
	return rp.serve(ctx, b, rp.p.UnregisterTrigger)
}

func (rp routedProvider) serve(ctx context.Context, b Binding, deliver func(context.Context, Binding) error) error {
	_, err := rp.router.ServeCallback(ctx, Inbound{FunctionID: rp.typeID}, func(ctx context.Context, call *Call) (any, error) {
		ctx, cancel := context.WithTimeout(WithBridge(ctx, call.Bridge), call.Budget)
		defer cancel()
		return nil, deliver(ctx, b)
	}, CallbackStages()...)
	return err
}

// UnregisterTriggerType passes through.
func (g *GuestRoutes) UnregisterTriggerType(id string) { g.Bus.UnregisterTriggerType(id) }

// PayloadLimit refuses payloads over max bytes with
// `payload is <n> bytes; max <max>`.
func PayloadLimit(max int) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) (any, error) {
			if n := len(call.Payload); n > max {
				return nil, Errorf(CodeInvalidRequest, "%s", limits.OverMax("payload", n, max))
			}
			return next(ctx, call)
		}
	}
}

// WireOf renders an error a routed call returned in its wire shape: an id
// without a route is the engine-standard function_not_found, an *Error its
// own code and "<code>: <text>", anything else the internal engine error.
// It is the one mapping from code-runner errors to the wire.
func WireOf(err error, functionID string) WireError {
	if errors.Is(err, ErrFunctionNotFound) {
		return WireError{Code: "function_not_found", Message: "Function " + functionID + " not found"}
	}
	return AsError(err, functionID).Wire()
}
