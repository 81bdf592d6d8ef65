package core

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/code-runner-go/code-runner/limits"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// GuestInvocation is one bus invocation of a guest-registered function as
// its engine receives it: the payload and metadata as they came, and the
// budget the call's configuration grants the handler (the route's timeout
// clamp; engines start it after any restart of the runtime).
type GuestInvocation struct {
	Payload  json.RawMessage
	Metadata json.RawMessage
	Budget   time.Duration
}

// GuestRoutes is the core.Bus engines publish guest functions through:
// each guest function becomes a route of the router — payload limit,
// timeout clamp, then the engine's handler — and the bus below is handed a
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
	var stages []Stage
	if reg.PayloadLimit > 0 {
		stages = append(stages, PayloadLimit(reg.PayloadLimit))
	}
	terminal := func(ctx context.Context, call *Call) (any, error) {
		res, err := h(ctx, GuestInvocation{Payload: call.Payload, Metadata: call.Metadata, Budget: RunBudget(0, call.Config)})
		if err != nil {
			return nil, err
		}
		return res, nil // nil stays nil: the wire adapter answers null
	}
	g.Router.HandleCurrent(reg.ID, terminal, stages...)
	id := reg.ID
	g.Bus.RegisterFunction(reg, func(ctx context.Context, inv GuestInvocation) (json.RawMessage, error) {
		res, err := g.Router.Invoke(ctx, id, inv.Payload, inv.Metadata)
		if err != nil {
			return nil, err
		}
		if raw, ok := res.(json.RawMessage); ok {
			return raw, nil
		}
		return jsonx.Marshal(res) // only a stage's own value; guest values are raw
	})
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

// RegisterTriggerType passes through.
func (g *GuestRoutes) RegisterTriggerType(id, description string, p TriggerProvider) {
	g.Bus.RegisterTriggerType(id, description, p)
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
