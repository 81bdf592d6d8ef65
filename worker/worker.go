package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
)

// Publisher registers routed worker functions on the bus.
type Publisher struct {
	Client *iii.Client
	Router *core.Router
	Log    *slog.Logger
}

// Publish registers the given worker function ids, in the order given, each
// with its definition and a handler that dispatches into the
// router. Callers pass ids in the published order and only ids whose route is
// installed (nothing is registered as a stub).
func (p *Publisher) Publish(ids ...string) {
	for _, id := range ids {
		d := DefOf(id)
		p.Client.RegisterFunction(iii.FunctionDef{ID: d.ID, Description: d.Description, RequestFormat: d.RequestFormat,
			ResponseFormat: d.ResponseFormat, Metadata: d.Metadata}, Handler(p.Router, p.Log))
	}
}

// Handler adapts the router to the wire: results are returned as is, a
// core.Error becomes its wire error (code = the code-runner code, message
// "<code>: <text>"), and an id the router no longer serves answers the
// engine-standard function_not_found.
func Handler(r *core.Router, log *slog.Logger) iii.Handler {
	if log == nil {
		log = slog.Default()
	}
	return func(ctx context.Context, req iii.Request) (any, error) {
		res, err := r.Invoke(ctx, req.FunctionID, req.Data, req.Metadata)
		if err == nil {
			return res, nil
		}
		if ce := core.AsError(err, req.FunctionID); ce.Cause != nil && !errors.Is(err, core.ErrFunctionNotFound) {
			log.Error("call failed", "function_id", req.FunctionID, "code", ce.Code, "cause", capsfilter.RedactRuntimeIDs(ce.Cause.Error()))
		}
		w := core.WireOf(err, req.FunctionID)
		return nil, &iii.InvocationError{Code: w.Code, Message: w.Message}
	}
}

// Transport is the core.Transport of a worker connected to an engine.
type Transport struct {
	Client *iii.Client
}

// Invoke performs a guest bus call through the client. A remote error (or
// the client's timeout) comes back as a *core.RemoteError.
func (t Transport) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	res, err := t.Client.Invoke(ctx, iii.Call{FunctionID: inv.FunctionID, Data: inv.Data, Action: inv.Action, Timeout: inv.Timeout})
	var ie *iii.InvocationError
	if errors.As(err, &ie) {
		return nil, &core.RemoteError{Code: ie.Code, Message: ie.Message}
	}
	return res, err
}
