package core

import (
	"context"
	"encoding/json"
)

// GuestHandler serves a function a guest registered: it returns the
// function's JSON result or an error (an *Error travels with its code).
type GuestHandler func(ctx context.Context, inv GuestInvocation) (json.RawMessage, error)

// FunctionRegistration is a guest function as published on the bus.
type FunctionRegistration struct {
	ID             string
	Description    string
	RequestFormat  json.RawMessage
	ResponseFormat json.RawMessage
	// PayloadLimit, when positive, refuses larger payloads on the route
	// before the handler runs (python's fixed 1 MiB).
	PayloadLimit int
}

// TriggerRegistration is a guest trigger binding.
type TriggerRegistration struct {
	TriggerType string
	FunctionID  string
	Config      json.RawMessage
	Metadata    json.RawMessage
}

// Binding is a binding of a guest-provided trigger type, delivered by the
// engine.
type Binding struct {
	ID          string          `json:"id"`
	FunctionID  string          `json:"function_id"`
	Config      json.RawMessage `json:"config"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	TriggerType string          `json:"-"`
}

// TriggerProvider serves a guest-provided trigger type.
type TriggerProvider interface {
	RegisterTrigger(ctx context.Context, b Binding) error
	UnregisterTrigger(ctx context.Context, b Binding) error
}

// Bus publishes guest registrations. The worker implements it over its
// engine connection; local mode keeps them in-process.
type Bus interface {
	RegisterFunction(reg FunctionRegistration, h GuestHandler)
	UnregisterFunction(id string)
	RegisterTrigger(t TriggerRegistration) (id string)
	UnregisterTrigger(id string)
	RegisterTriggerType(id, description string, p TriggerProvider)
	UnregisterTriggerType(id string)
}

// Mortal is implemented by runtimes that can die on their own (a node
// isolate killed by a handler timeout, its host process crashing). The
// registry uses it to tombstone a kept runtime that died between calls.
type Mortal interface {
	OnDeath(func())
}

// RemoteError is a failed bus call seen by a guest: the callee's (or the
// client's) error code and message. Its text follows docs/behaviour.md#guest-iii-trigger: the
// message, prefixed with "<code>: " unless it already starts with "<code>:".
type RemoteError struct {
	Code    string
	Message string
}

// Error renders the guest-visible text.
func (e *RemoteError) Error() string {
	if e.Code == "" || len(e.Message) > len(e.Code) && e.Message[:len(e.Code)+1] == e.Code+":" {
		return e.Message
	}
	return e.Code + ": " + e.Message
}
