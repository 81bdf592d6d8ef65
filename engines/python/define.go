package python

import (
	"context"
	"encoding/json"
	"github.com/code-runner-go/code-runner/limits"
	"strings"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/core"
)

const registerDescription = "Registered through code-runner::register_function; implemented in Python."

// Define runs a register_function source and the handler check as one turn
// in this namespace interpreter, captures the handler for its id, and
// publishes it (docs/behaviour.md#register-python-source).
func (r *pyRuntime) Define(ctx context.Context, def core.Definition) error {
	if !r.acquireTurn(ctx) {
		return core.ErrTimeout()
	}
	defer r.releaseTurn()
	frame, _ := jsonx.Marshal(turnFrame{Kind: "define", Code: def.Source, ID: def.FunctionID, Namespace: r.namespace})
	res := r.runTurn(ctx, frame, core.BridgeFrom(ctx)) // the register call's (nil: the live configuration's)
	r.afterKill(ctx, res)
	if res.err != nil {
		return res.err
	}
	if res.failure != "" {
		return core.Errorf(core.CodeInvalidRequest, "%s", strings.TrimSuffix(res.failure, "\n"))
	}
	r.mu.Lock()
	held := r.fns[def.FunctionID]
	r.fns[def.FunctionID] = true
	delete(r.broken, def.FunctionID)
	kept := r.sources[:0]
	for _, s := range r.sources {
		if s.id != def.FunctionID {
			kept = append(kept, s)
		}
	}
	r.sources = append(kept, source{id: def.FunctionID, code: def.Source})
	r.mu.Unlock()
	if bus := r.e.opts.Bus; bus != nil {
		if held {
			bus.UnregisterFunction(def.FunctionID) // the old registration is retired first
		}
		desc := registerDescription
		if def.Description != nil {
			desc = *def.Description
		}
		bus.RegisterFunction(core.FunctionRegistration{ID: def.FunctionID, Description: desc, RequestFormat: def.RequestFormat, ResponseFormat: def.ResponseFormat,
			PayloadLimit: limits.MaxPayloadBytes},
			r.invokeHandler(def.FunctionID))
	}
	return nil
}

// invokeHandler serves bus invocations of a python handler: one turn that
// calls the handler captured for id (docs/behaviour.md#register-invocations), behind its route
// (the payload limit and the budget are the route's).
func (r *pyRuntime) invokeHandler(id string) core.GuestHandler {
	return func(ctx context.Context, inv core.GuestInvocation) (json.RawMessage, error) {
		payload := inv.Payload
		if !r.Alive() {
			return nil, core.ErrHandlerGone(id)
		}
		cctx, cancel := context.WithTimeout(ctx, inv.Budget)
		defer cancel()
		if !r.acquireTurn(cctx) {
			return nil, core.ErrTimeout()
		}
		defer r.releaseTurn()
		// A dead interpreter is rebooted and the sources replayed before the
		// invocation's own budget starts.
		if _, err := r.interpreter(ctx); err != nil {
			return nil, err
		}
		r.mu.Lock()
		brokenText, broken := r.broken[id]
		r.mu.Unlock()
		if broken {
			return nil, core.ErrHandlerNotRestored(id, brokenText)
		}
		ictx, icancel := context.WithTimeout(ctx, inv.Budget)
		defer icancel()
		if len(payload) == 0 {
			payload = json.RawMessage("null")
		}
		frame, _ := jsonx.Marshal(turnFrame{Kind: "invoke", ID: id, Payload: payload, Namespace: r.namespace})
		res := r.runTurn(ictx, frame, inv.Bridge) // the route's (nil: the live configuration's)
		r.afterKill(ictx, res)
		if res.err != nil {
			return nil, res.err
		}
		if res.failure != "" {
			if res.envelope.Kind == "missing" {
				return nil, core.ErrHandlerGone(id)
			}
			return nil, core.Errorf(core.CodeHandlerError, "%s", strings.TrimSuffix(res.failure, "\n"))
		}
		return res.envelope.Result, nil
	}
}
