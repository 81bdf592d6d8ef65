package iii

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/google/uuid"
)

// Message types of the engine protocol (docs/behaviour.md#wire-messages).
const (
	TypeRegisterFunction          = "registerfunction"
	TypeUnregisterFunction        = "unregisterfunction"
	TypeRegisterTriggerType       = "registertriggertype"
	TypeRegisterTrigger           = "registertrigger"
	TypeUnregisterTrigger         = "unregistertrigger"
	TypeTriggerRegistrationResult = "triggerregistrationresult"
	TypeInvokeFunction            = "invokefunction"
	TypeInvocationResult          = "invocationresult"
	TypeWorkerRegistered          = "workerregistered"
	TypeReattach                  = "reattach"
	TypePing                      = "ping"
	TypePong                      = "pong"
	TypeRegistrationRejected      = "registrationrejected"
	TypeError                     = "error"
)

// ErrorBody is the `error` object of invocationresult and
// triggerregistrationresult.
type ErrorBody struct {
	Code       string `json:"code"`
	Message    string `json:"message"`
	Stacktrace string `json:"stacktrace,omitempty"`
}

// Frame is the union of every message's fields. Decoding is lenient: unknown
// fields are ignored and absent fields are zero. Encoding omits unset
// optional fields, except the function formats (see RegisterFunctionFrame).
type Frame struct {
	Type string `json:"type"`

	ID             string          `json:"id,omitempty"`
	Description    *string         `json:"description,omitempty"`
	RequestFormat  json.RawMessage `json:"request_format,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`

	TriggerType          string          `json:"trigger_type,omitempty"`
	FunctionID           string          `json:"function_id,omitempty"`
	Config               json.RawMessage `json:"config,omitempty"`
	TriggerRequestFormat json.RawMessage `json:"trigger_request_format,omitempty"`
	CallRequestFormat    json.RawMessage `json:"call_request_format,omitempty"`

	InvocationID string          `json:"invocation_id,omitempty"`
	Data         json.RawMessage `json:"data,omitempty"`
	Action       json.RawMessage `json:"action,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Error        *ErrorBody      `json:"error,omitempty"`
	Traceparent  string          `json:"traceparent,omitempty"`
	Baggage      string          `json:"baggage,omitempty"`
	Namespace    string          `json:"namespace,omitempty"`

	WorkerID         string `json:"worker_id,omitempty"`
	ReattachToken    string `json:"reattach_token,omitempty"`
	PreviousWorkerID string `json:"previous_worker_id,omitempty"`

	Code          string `json:"code,omitempty"`
	WorkerName    string `json:"worker_name,omitempty"`
	OwnerWorkerID string `json:"owner_worker_id,omitempty"`
}

// ErrMalformed is wrapped by DecodeFrame for frames that must be dropped.
var ErrMalformed = errors.New("malformed frame")

// DecodeFrame decodes one frame leniently: unknown fields and unknown types
// are accepted (the caller ignores unknown types). It fails, wrapping
// ErrMalformed, for text that is not a JSON object, a frame without a string
// `type`, and for known frames missing a required field or carrying a
// non-UUID invocation id.
func DecodeFrame(b []byte) (*Frame, error) {
	var f Frame
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if f.Type == "" {
		return nil, fmt.Errorf("%w: no type", ErrMalformed)
	}
	// A required field is usually shown sent by its decoded value; only a
	// zero value (absent, empty or null) needs the frame's keys, which are
	// then decoded once. (Decoding them for every frame was half of the
	// cost of decoding an invocation.)
	var raw map[string]json.RawMessage
	need := func(fields ...string) error {
		for _, k := range fields {
			if f.shows(k) {
				continue
			}
			if raw == nil {
				raw = map[string]json.RawMessage{}
				_ = json.Unmarshal(b, &raw)
			}
			if _, ok := raw[k]; !ok {
				return fmt.Errorf("%w: %s without %s", ErrMalformed, f.Type, k)
			}
		}
		return nil
	}
	switch f.Type {
	case TypeInvokeFunction:
		if err := need("function_id", "data"); err != nil {
			return nil, err
		}
		if f.InvocationID != "" && !isUUID(f.InvocationID) {
			return nil, fmt.Errorf("%w: invocation_id %q is not a UUID", ErrMalformed, f.InvocationID)
		}
		if f.Data == nil {
			f.Data = json.RawMessage("null")
		}
	case TypeInvocationResult:
		if err := need("invocation_id", "function_id"); err != nil {
			return nil, err
		}
		if !isUUID(f.InvocationID) {
			return nil, fmt.Errorf("%w: invocation_id %q is not a UUID", ErrMalformed, f.InvocationID)
		}
	case TypeRegisterFunction, TypeUnregisterFunction:
		if err := need("id"); err != nil {
			return nil, err
		}
	case TypeRegisterTriggerType:
		if err := need("id", "description"); err != nil {
			return nil, err
		}
	case TypeRegisterTrigger:
		if err := need("id", "trigger_type", "function_id", "config"); err != nil {
			return nil, err
		}
	case TypeUnregisterTrigger:
		if err := need("id"); err != nil {
			return nil, err
		}
	case TypeTriggerRegistrationResult:
		if err := need("id", "trigger_type", "function_id"); err != nil {
			return nil, err
		}
	case TypeWorkerRegistered:
		if err := need("worker_id"); err != nil {
			return nil, err
		}
	case TypeReattach:
		if err := need("previous_worker_id"); err != nil {
			return nil, err
		}
	}
	return &f, nil
}

// shows reports whether f's decoded value for the required field k proves
// the frame carried it; false means it may be absent, empty or null.
func (f *Frame) shows(k string) bool {
	switch k {
	case "id":
		return f.ID != ""
	case "description":
		return f.Description != nil
	case "trigger_type":
		return f.TriggerType != ""
	case "function_id":
		return f.FunctionID != ""
	case "config":
		return f.Config != nil
	case "invocation_id":
		return f.InvocationID != ""
	case "data":
		return f.Data != nil
	case "worker_id":
		return f.WorkerID != ""
	case "previous_worker_id":
		return f.PreviousWorkerID != ""
	}
	return false
}

func isUUID(s string) bool {
	_, err := uuid.Parse(s)
	return err == nil && len(s) == 36
}

// encodeFrame renders f as JSON. registerfunction frames always carry
// request_format and response_format (null when unset), as the engine's own
// types do.
func encodeFrame(f *Frame) []byte {
	b, err := jsonx.Marshal(f)
	if err != nil {
		panic(fmt.Sprintf("iii: encode %s frame: %v", f.Type, err))
	}
	if f.Type == TypeRegisterFunction && (f.RequestFormat == nil || f.ResponseFormat == nil) {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(b, &m)
		for _, k := range []string{"request_format", "response_format"} {
			if _, ok := m[k]; !ok {
				m[k] = json.RawMessage("null")
			}
		}
		b, _ = jsonx.Marshal(m)
	}
	return b
}

// EncodeFrame renders f as one JSON text frame without HTML escaping.
func EncodeFrame(f *Frame) []byte { return encodeFrame(f) }

// marshalValue renders a handler's result without HTML escaping.
func marshalValue(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return x, nil
	}
	b, err := jsonx.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}
