package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/telemetry"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Publisher registers routed worker functions on the bus.
type Publisher struct {
	Client *iii.Client
	Router *core.Router
	Log    *slog.Logger
	Tel    *telemetry.Telemetry // nil: no spans
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

// PublishStandby is Publish for ids the client keeps on standby
// (iii.Client.RegisterStandby): a group's shared ids, registered only
// when no live worker holds them (holdSharedIDs).
func (p *Publisher) PublishStandby(ids ...string) {
	for _, id := range ids {
		d := DefOf(id)
		p.Client.RegisterStandby(iii.FunctionDef{ID: d.ID, Description: d.Description, RequestFormat: d.RequestFormat,
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
		res, err := r.Serve(ctx, core.Inbound{FunctionID: req.FunctionID, Payload: req.Data, Metadata: req.Metadata, Traceparent: req.Traceparent, Baggage: req.Baggage})
		if err == nil {
			return res, nil
		}
		if ce := core.AsError(err, req.FunctionID); ce.Cause != nil && !errors.Is(err, core.ErrFunctionNotFound) {
			log.ErrorContext(ctx, "call failed", "function_id", req.FunctionID, "code", ce.Code, "cause", capsfilter.RedactRuntimeIDs(ce.Cause.Error()))
		}
		w := core.WireOf(err, req.FunctionID)
		return nil, &iii.InvocationError{Code: w.Code, Message: w.Message, Err: err}
	}
}

// OutcomeGuestError is the outcome of a run whose guest threw or raised:
// the call answered, with exit_code ≠ 0.
const OutcomeGuestError = "guest_error"

// Trace is the door's telemetry stage (core.DoorStages): a span per
// invocation (telemetry.StartServer), parented on the caller's
// traceparent, with the function id, for runs the language, mode and exit
// code, the request and result sizes, the outcome ("ok", OutcomeGuestError
// or the error's wire code) and, when guest code was stopped, the kill
// (core.Kill). Never the code, the payload, the result or a runtime id.
// The metrics count the invocation as "guest" (a guest function) or
// "worker", with runs, their durations and the kills among them. A nil
// tel is no stage.
//
// Every call answered code-runner::engine (a bus call the worker made
// failed, a host died, a forward failed) also writes one WARN record to
// log inside the call's span, so an operator finds it by the trace id:
// the function id, the error's own text with runtime ids redacted, and
// the kill — never guest text or a runtime id.
func Trace(tel *telemetry.Telemetry, log *slog.Logger) core.Stage {
	if tel == nil {
		if log == nil {
			return nil
		}
		// Telemetry off: the WARN record still goes to the worker's log.
		return func(next core.Handler) core.Handler {
			return func(ctx context.Context, call *core.Call) (any, error) {
				res, err := next(ctx, call)
				if err != nil && core.WireOf(err, call.FunctionID).Code == string(core.CodeEngine) {
					log.WarnContext(ctx, "a call answered code-runner::engine", "function_id", call.FunctionID,
						"failure", capsfilter.RedactRuntimeIDs(core.AsError(err, call.FunctionID).Text))
				}
				return res, err
			}
		}
	}
	return func(next core.Handler) core.Handler {
		return func(ctx context.Context, call *core.Call) (any, error) {
			start := time.Now()
			ctx = telemetry.Extract(ctx, call.Traceparent, call.Baggage)
			var (
				mu         sync.Mutex
				lang, mode string
			)
			// The run and register services note the language and the kind
			// of runtime once they have decoded the request: a language one
			// of the worker's engines runs (the decoder refuses any other),
			// never a guest's own word.
			ctx = core.WithCallNotes(ctx, func(l core.Lang, m string) {
				mu.Lock()
				defer mu.Unlock()
				lang, mode = string(l), m
			})
			ctx, span := tel.StartServer(ctx, call.FunctionID, attribute.Int("code_runner.request_bytes", len(call.Payload)))
			res, err := next(ctx, call)
			outcome := "ok"
			if err != nil {
				outcome = core.WireOf(err, call.FunctionID).Code
			}
			kill := string(core.KillOf(err))
			if outcome == string(core.CodeEngine) && log != nil {
				ce := core.AsError(err, call.FunctionID)
				log.WarnContext(ctx, "a call answered code-runner::engine", "function_id", call.FunctionID,
					"failure", capsfilter.RedactRuntimeIDs(ce.Text), "kill", kill)
			}
			var end []attribute.KeyValue
			switch r := res.(type) {
			case json.RawMessage:
				end = append(end, attribute.Int("code_runner.result_bytes", len(r)))
			case *core.RunResponse:
				if r == nil {
					break
				}
				result, stdout, stderr, capped := r.Sizes()
				end = append(end, attribute.Int("code_runner.result_bytes", result), attribute.Int("code_runner.stdout_bytes", stdout),
					attribute.Int("code_runner.stderr_bytes", stderr), attribute.Bool("code_runner.output_capped", capped),
					attribute.Int64("code_runner.exit_code", r.ExitCode))
				if err == nil && r.ExitCode != 0 {
					outcome = OutcomeGuestError // the guest threw or raised (contract §22a.11)
				}
			}
			if kill != "" {
				end = append(end, attribute.String("code_runner.kill", kill))
			}
			mu.Lock()
			if mode != "" {
				end = append(end, attribute.String("code_runner.mode", mode))
			}
			if lang != "" {
				end = append(end, attribute.String("code_runner.lang", lang))
			}
			l, m := lang, mode
			mu.Unlock()
			span.End(outcome, end...)
			kind := "worker"
			if call.Guest {
				kind = "guest"
			}
			tel.Metrics().Invocation(ctx, kind, call.FunctionID, l, m, outcome, kill, time.Since(start))
			return res, err
		}
	}
}

// Transport is the core.Transport of a worker connected to an engine.
type Transport struct {
	Client *iii.Client
	Tel    *telemetry.Telemetry // nil: no spans
	// Internal marks the worker's own queries of the engine (the
	// ownership checks before a guest publishes): not guest calls, so not
	// counted in code_runner.bridge.calls, and traced only as children of
	// the call they serve — never as roots of their own.
	Internal bool
}

// Refused counts a guest call the bridge refused (core.RefusalObserver).
func (t Transport) Refused(ctx context.Context, functionID string) {
	t.Tel.Metrics().BridgeCall(ctx, "refused")
}

var _ core.RefusalObserver = Transport{}

// Invoke performs a guest bus call through the client, in a span of its
// own whose context goes to the callee as traceparent and baggage. A
// remote error (or the client's timeout) comes back as a *core.RemoteError.
func (t Transport) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	tel := t.Tel
	if t.Internal {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			tel = nil // no call to be part of: no span
		}
		t.Tel = nil // and no guest-call metrics
	}
	ctx, span := tel.StartClient(ctx, inv.FunctionID, attribute.Int("code_runner.request_bytes", len(inv.Data)))
	tp, bg := telemetry.Inject(ctx)
	res, err := t.Client.Invoke(ctx, iii.Call{FunctionID: inv.FunctionID, Data: inv.Data, Action: inv.Action, Timeout: inv.Timeout,
		Traceparent: tp, Baggage: bg})
	var ie *iii.InvocationError
	if errors.As(err, &ie) {
		span.End(ie.Code)
		t.Tel.Metrics().BridgeCall(ctx, ie.Code)
		return nil, &core.RemoteError{Code: ie.Code, Message: ie.Message}
	}
	if err != nil {
		span.End("invocation_failed")
		t.Tel.Metrics().BridgeCall(ctx, "invocation_failed")
	} else {
		span.End("ok", attribute.Int("code_runner.result_bytes", len(res)))
		t.Tel.Metrics().BridgeCall(ctx, "ok")
	}
	return res, err
}
