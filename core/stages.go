package core

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/configsvc"
)

// BridgePolicy attaches call.Bridge: call.Transport behind the deny-list and
// the guest timeout clamp, both read from the call's configuration.
func BridgePolicy(next Handler) Handler {
	return func(ctx context.Context, call *Call) (any, error) {
		call.Bridge = &policyBridge{transport: call.Transport, cfg: call.Config}
		return next(ctx, call)
	}
}

// TimeoutClamp sets call.Budget from call.TimeoutMS and the call's
// configuration (docs/behaviour.md#timeouts-run-budget).
func TimeoutClamp(next Handler) Handler {
	return func(ctx context.Context, call *Call) (any, error) {
		call.Budget = RunBudget(call.TimeoutMS, call.Config)
		return next(ctx, call)
	}
}

// RunBudget is min(t, max_timeout_ms), at least 1 ms, where t is requested
// when non-zero, else default_timeout_ms.
func RunBudget(requestedMS uint64, cfg *configsvc.Config) time.Duration {
	t := requestedMS
	if t == 0 {
		t = uint64(cfg.DefaultTimeoutMS)
	}
	if max := uint64(cfg.MaxTimeoutMS); t > max {
		t = max
	}
	if t < 1 {
		t = 1
	}
	return time.Duration(t) * time.Millisecond
}

// OutputCap applies the result and stream caps (docs/behaviour.md#output-caps) to a
// *RunResponse on the way out, with the call's configuration.
func OutputCap(next Handler) Handler {
	return func(ctx context.Context, call *Call) (any, error) {
		res, err := next(ctx, call)
		if r, ok := res.(*RunResponse); ok && err == nil {
			result, stdout, stderr := r.Result, r.Stdout, r.Stderr
			if !r.omitted { // a marker the engine made is never capped again
				r.Result = capsfilter.ResultCap(r.Result, int(call.Config.MaxResultBytes))
			}
			r.Stdout = capsfilter.StreamCap(r.Stdout, capsfilter.Stdout, int(call.Config.MaxStreamBytes))
			r.Stderr = capsfilter.StreamCap(r.Stderr, capsfilter.Stderr, int(call.Config.MaxStreamBytes))
			r.Capped = r.omitted || !bytes.Equal(result, r.Result) || stdout != r.Stdout || stderr != r.Stderr
		}
		return res, err
	}
}

// RedactUnheld rewrites not-found and expired errors for callers that held
// no runtime id (docs/behaviour.md#runtime-id-capability), so an id never reaches a caller that
// did not already own it.
func RedactUnheld(next Handler) Handler {
	return func(ctx context.Context, call *Call) (any, error) {
		res, err := next(ctx, call)
		if err == nil || call.Held != "" {
			return res, err
		}
		var ce *Error
		if errors.As(err, &ce) && (ce.Code == CodeRuntimeNotFound || ce.Code == CodeExpired) {
			return nil, ErrLostMidRun()
		}
		if ce != nil && capsfilter.ContainsRuntimeID(ce.Text) {
			return nil, &Error{Code: ce.Code, Text: capsfilter.RedactRuntimeIDs(ce.Text), Cause: ce.Cause}
		}
		return res, err
	}
}

// Every call, whatever its route, passes the router's door first, then its
// route's decoder and stages, then its terminal. The stage lists, outermost
// first (the design card's order: deny-list bridge checks → timeout clamp →
// engine → output cap → capability redaction):
//
//	door (every call)        DoorStages: Admit → Trace
//	code-runner::run         RunStages: RedactUnheld → OutputCap → BridgePolicy → TimeoutClamp → RunService
//	register_function        RegisterStages: RedactUnheld → BridgePolicy → Namespaces.Register
//	teardown                 (none) → Namespaces.Teardown
//	a guest function         GuestStages: [PayloadLimit] → TimeoutClamp → BridgePolicy → the engine's handler
//	a trigger-type callback  CallbackStages: TimeoutClamp → BridgePolicy → the engine's provider
//	inject-guidance          hooks.PreGenerate: [Guidance] → "no change"
//	on-config-change         hooks.ConfigChanged: serialize → validate → provision → swap → clean up
//	ui-content, workers-changed  (none)

// DoorStages is the stage list every call passes first, outermost first:
// admission (the call counts as work in flight; a draining worker's Gate
// refuses it) and telemetry (a span and the metrics of the invocation).
// The worker supplies them — core links no OpenTelemetry — and a nil stage
// is skipped.
func DoorStages(admit, trace Stage, more ...Stage) []Stage {
	return append([]Stage{admit, trace}, more...)
}

// Admit counts a call as work in flight while it runs: enter is called as
// the call starts, and the function it returns as the call ends (the
// worker's GOMAXPROCS governor, internal/tuning).
func Admit(enter func() (leave func())) Stage {
	return func(next Handler) Handler {
		return func(ctx context.Context, call *Call) (any, error) {
			leave := enter()
			defer leave()
			return next(ctx, call)
		}
	}
}

// RunStages is the stage list of the run pipeline, outermost first: on the
// way in the bridge policy is attached and the timeout clamped; on the way
// out the output caps apply, then runtime-id redaction.
func RunStages() []Stage {
	return []Stage{RedactUnheld, OutputCap, BridgePolicy, TimeoutClamp}
}

// RegisterStages is the stage list of register_function: the bridge policy
// for the handler's definition run, redaction of ids on the way out.
func RegisterStages() []Stage { return []Stage{RedactUnheld, BridgePolicy} }

// CallbackStages is the stage list of a guest trigger type's provider
// callback (Router.ServeCallback): the guest code that takes or drops a
// binding runs under the call's budget and bridge.
func CallbackStages() []Stage { return []Stage{TimeoutClamp, BridgePolicy} }

// GuestStages is the stage list of a guest function's route: its payload
// limit (payloadLimit > 0), the timeout clamp (the handler's budget from the
// call's configuration) and the bridge policy (the guest calls the handler
// makes, under the same configuration).
func GuestStages(payloadLimit int) []Stage {
	var stages []Stage
	if payloadLimit > 0 {
		stages = append(stages, PayloadLimit(payloadLimit))
	}
	return append(stages, TimeoutClamp, BridgePolicy)
}

// NewPolicyBridge returns t behind the deny-list and guest timeout rules,
// with cfg as the configuration (for guest calls no routed call made:
// detached guest work, the replay of a restarted runtime).
func NewPolicyBridge(t Transport, cfg *configsvc.Config) Bridge {
	return &policyBridge{transport: t, cfg: cfg}
}

// policyBridge enforces the deny-list (docs/behaviour.md#bridge-checks)
// and the guest-call timeouts (docs/behaviour.md#timeouts-guest-calls) in
// front of a Transport.
type policyBridge struct {
	transport Transport
	cfg       *configsvc.Config
}

// guestMargin is kept back from the run's remaining budget so a guest call
// fails in time for the guest to handle the error (docs/behaviour.md#timeouts-guest-calls).
const guestMargin = 200 * time.Millisecond

// RefusalObserver is implemented by a Transport that wants to hear about
// the guest calls the bridge refused before they reached it (telemetry
// counts them).
type RefusalObserver interface {
	Refused(ctx context.Context, functionID string)
}

// NoteRefusal tells t, when it is a RefusalObserver, that a guest call to
// functionID ("" when the request was too malformed to name one) was
// refused before it reached the bus. Engines call it for the checks they
// make before the bridge.
func NoteRefusal(ctx context.Context, t Transport, functionID string) {
	if o, ok := t.(RefusalObserver); ok {
		o.Refused(ctx, functionID)
	}
}

func (b *policyBridge) Trigger(ctx context.Context, req GuestTrigger) (json.RawMessage, error) {
	if err := capsfilter.CheckGuestTrigger(req.FunctionID, req.Payload); err != nil {
		NoteRefusal(ctx, b.transport, req.FunctionID)
		return nil, err
	}
	timeout := GuestTimeout(req.TimeoutMS, req.Deadline, time.Now(), b.cfg)
	if b.transport == nil {
		return nil, fmt.Errorf("no engine connection: %s cannot be reached", req.FunctionID)
	}
	return b.transport.Invoke(ctx, Invocation{FunctionID: req.FunctionID, Data: req.Payload, Action: req.Action, Timeout: timeout})
}

func (b *policyBridge) CheckTriggerTarget(functionID string) error {
	return capsfilter.CheckTriggerTarget(functionID)
}

// GuestTimeout is the effective timeout of a guest bus call (docs/behaviour.md#timeouts-guest-calls):
// max(1 ms, min(requested or default_timeout_ms, max_timeout_ms, remaining −
// 200 ms)); with no active deadline only max_timeout_ms applies.
func GuestTimeout(requestedMS uint64, deadline, now time.Time, cfg *configsvc.Config) time.Duration {
	t := time.Duration(requestedMS) * time.Millisecond
	if requestedMS == 0 {
		t = time.Duration(cfg.DefaultTimeoutMS) * time.Millisecond
	}
	if max := time.Duration(cfg.MaxTimeoutMS) * time.Millisecond; t > max {
		t = max
	}
	if !deadline.IsZero() {
		if rem := deadline.Sub(now) - guestMargin; t > rem {
			t = rem
		}
	}
	if t < time.Millisecond {
		t = time.Millisecond
	}
	return t
}
