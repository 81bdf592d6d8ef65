package core

import (
	"encoding/json"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/configsvc"
)

// Lang names the engine behind a runtime: the `lang` a request names.
// Engines say which is theirs (Engine.Lang); core names none.
type Lang string

// The worker's six function ids, in registration order (docs/behaviour.md#functions-list).
const (
	FnRun              = "code-runner::run"
	FnTeardown         = "code-runner::teardown"
	FnRegisterFunction = "code-runner::register_function"
	FnInjectGuidance   = "code-runner::inject-guidance"
	FnUIContent        = "code-runner::ui-content"
	FnOnConfigChange   = "code-runner::on-config-change"
)

// WorkerFunctionIDs lists the six ids in registration order.
var WorkerFunctionIDs = []string{FnRun, FnTeardown, FnRegisterFunction, FnInjectGuidance, FnUIContent, FnOnConfigChange}

// Call is one invocation travelling through a route's chain. The Router fills the
// request fields; stages fill the rest before the terminal handler runs.
type Call struct {
	FunctionID string
	Payload    json.RawMessage
	Metadata   json.RawMessage
	Received   time.Time // when handling began (duration_ms counts from here)
	// Guest marks a call of a guest-registered function (a dynamic route).
	Guest bool
	// Traceparent and Baggage are the caller's W3C trace context as the bus
	// delivered it ("" when none).
	Traceparent, Baggage string

	// Request is the decoded request (for example *RunRequest).
	Request any
	// Held is the runtime_id the caller supplied, "" for an unheld caller.
	Held string
	// TimeoutMS is the caller's requested budget; 0 means the default.
	TimeoutMS uint64

	// Config is the configuration this call runs under, loaded once from the
	// chain's snapshot; never nil inside a stage.
	Config *configsvc.Config
	// Budget is the clamped wall-clock budget (set by the timeout clamp).
	Budget time.Duration
	// Transport reaches the bus; Bridge is Transport behind the bridge
	// policy and is what engines hand to guest code.
	Transport Transport
	Bridge    Bridge
}

// RunRequest is the decoded code-runner::run request (its JSON schema: worker/schemas/run.request.json).
type RunRequest struct {
	Code      string
	Keep      bool
	Lang      Lang   // "" when absent
	RuntimeID string // "" when absent
	TimeoutMS uint64 // 0 when absent
	MemoryMB  *uint32
}

// RunResponse is the code-runner::run response; its field order is the wire
// order of docs/behaviour.md#run-response.
type RunResponse struct {
	RuntimeID  string          `json:"runtime_id,omitempty"`
	Stdout     string          `json:"stdout"`
	Stderr     string          `json:"stderr"`
	ExitCode   int64           `json:"exit_code"`
	Success    bool            `json:"success"`
	DurationMS uint64          `json:"duration_ms"`
	Result     json.RawMessage `json:"result"`
	// Capped records that the output caps cut the result or a stream (not
	// on the wire; telemetry reports it).
	Capped bool `json:"-"`
	// omitted: Result is already the cap's marker (Outcome.ResultOmitted).
	omitted bool
}

// Sizes reports the byte lengths of the result and the streams as sent, and
// whether the output caps cut any of them.
func (r *RunResponse) Sizes() (result, stdout, stderr int, capped bool) {
	return len(r.Result), len(r.Stdout), len(r.Stderr), r.Capped
}

// MarshalJSON renders the response with result always present (null when
// unset) and without HTML escaping: the completion value's JSON text is kept
// as the guest produced it.
func (r RunResponse) MarshalJSON() ([]byte, error) {
	type wire RunResponse
	w := wire(r)
	if len(w.Result) == 0 {
		w.Result = json.RawMessage("null")
	}
	return jsonx.Marshal(w)
}

// TeardownRequest is the decoded code-runner::teardown request.
type TeardownRequest struct {
	Namespace string
	RuntimeID string
}

// TeardownResponse is the code-runner::teardown response (docs/behaviour.md#teardown).
type TeardownResponse struct {
	RuntimeID    string   `json:"runtime_id,omitempty"`
	Namespace    string   `json:"namespace,omitempty"`
	TornDown     bool     `json:"torn_down"`
	Unregistered []string `json:"unregistered"`
}

// RegisterRequest is the decoded code-runner::register_function request.
type RegisterRequest struct {
	Description    *string
	FunctionID     string
	Lang           Lang
	RequestFormat  json.RawMessage // nil when absent or null
	ResponseFormat json.RawMessage
	Source         string
}

// RegisterResponse is the code-runner::register_function response.
type RegisterResponse struct {
	FunctionID string `json:"function_id"`
	Registered bool   `json:"registered"`
}
