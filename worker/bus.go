package worker

import (
	"context"
	"encoding/json"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
)

// Bus publishes guest registrations over the worker's engine connection
// (core.Bus). Everything goes through the client's replay maps, so it
// survives reconnects. Engines reach it through core.GuestRoutes, so the
// handlers it is given enter through the router.
type Bus struct {
	Client *iii.Client
}

// RegisterFunction publishes a guest function. h enters through the
// router (core.GuestRoutes), whose door traces each invocation.
func (b Bus) RegisterFunction(reg core.FunctionRegistration, h core.GuestHandler) {
	b.Client.RegisterFunction(iii.FunctionDef{ID: reg.ID, Description: reg.Description, RequestFormat: reg.RequestFormat, ResponseFormat: reg.ResponseFormat},
		func(ctx context.Context, req iii.Request) (any, error) {
			res, err := h(ctx, core.GuestInvocation{Payload: req.Data, Metadata: req.Metadata, Traceparent: req.Traceparent, Baggage: req.Baggage})
			if err != nil {
				w := core.WireOf(err, req.FunctionID)
				return nil, &iii.InvocationError{Code: w.Code, Message: w.Message, Err: err}
			}
			if res == nil {
				return json.RawMessage("null"), nil
			}
			return res, nil
		})
}

// UnregisterFunction retires a guest function.
func (b Bus) UnregisterFunction(id string) { b.Client.UnregisterFunction(id) }

// RegisterTrigger binds a guest trigger with a minted UUID id.
func (b Bus) RegisterTrigger(t core.TriggerRegistration) string {
	return b.Client.RegisterTrigger(iii.Trigger{TriggerType: t.TriggerType, FunctionID: t.FunctionID, Config: t.Config, Metadata: t.Metadata})
}

// UnregisterTrigger removes a guest trigger.
func (b Bus) UnregisterTrigger(id string) { b.Client.UnregisterTrigger(id) }

// RegisterTriggerType publishes a guest trigger type.
func (b Bus) RegisterTriggerType(id, description string, p core.TriggerProvider) {
	b.Client.RegisterTriggerType(iii.TriggerTypeDef{ID: id, Description: description}, providerAdapter{p})
}

// UnregisterTriggerType stops providing a guest trigger type.
func (b Bus) UnregisterTriggerType(id string) { b.Client.UnregisterTriggerType(id) }

type providerAdapter struct{ p core.TriggerProvider }

func (a providerAdapter) RegisterTrigger(ctx context.Context, b iii.Binding) error {
	return a.p.RegisterTrigger(ctx, core.Binding{ID: b.ID, FunctionID: b.FunctionID, Config: b.Config, Metadata: b.Metadata, TriggerType: b.TriggerType})
}

func (a providerAdapter) UnregisterTrigger(ctx context.Context, b iii.Binding) error {
	return a.p.UnregisterTrigger(ctx, core.Binding{ID: b.ID, FunctionID: b.FunctionID, Config: b.Config, Metadata: b.Metadata, TriggerType: b.TriggerType})
}
