package core

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Many workers on one engine (contract §24): callers use the shared ids,
// and a kept runtime lives on the worker that made it. Every kept runtime
// id carries its worker's routing tag — the first four hex digits of its
// UUID v4, leaving 106 random bits — and every worker also serves the run
// and teardown routes under per-worker ids, the shared id with "@" and the
// tag appended. A call on a shared id for a runtime another worker minted
// is forwarded there; a call on a per-worker id is served where it lands.

// teardownForwardBudget bounds a forwarded teardown (the route itself has
// no budget).
const teardownForwardBudget = 30 * time.Second

// TagLen is the length of a routing tag: four lowercase hex digits.
const TagLen = 4

// NewTaggedRuntimeID mints "rt-" + a lowercase UUID v4 whose first TagLen
// hex digits are tag ("" = no tag: all random).
func NewTaggedRuntimeID(tag string) string {
	id := uuid.Must(uuid.NewRandom()).String()
	if len(tag) == TagLen {
		id = tag + id[TagLen:]
	}
	return "rt-" + id
}

// RuntimeTag is the routing tag of a runtime id ("" when it has none).
func RuntimeTag(id string) string {
	if !strings.HasPrefix(id, "rt-") || len(id) < 3+TagLen {
		return ""
	}
	return id[3 : 3+TagLen]
}

// WorkerID is a shared id's per-worker id: id + "@" + tag.
func WorkerID(id, tag string) string { return id + "@" + tag }

// Forwarder calls a per-worker id of another worker over the engine.
type Forwarder interface {
	// Forward invokes functionID with payload within timeout and returns
	// its result; a remote error is a *RemoteError.
	Forward(ctx context.Context, functionID string, payload json.RawMessage, timeout time.Duration) (json.RawMessage, error)
}

// forwardFor reports the per-worker id a call for runtime id must be
// forwarded to, or "" when this worker serves it: no forwarder, a call
// that already arrived on a per-worker id, this worker's own tag, or a
// runtime this worker knows.
func (s *RunService) forwardFor(call *Call, shared, id string) string {
	if s.Forward == nil || call.FunctionID != shared {
		return ""
	}
	tag := RuntimeTag(id)
	if tag == "" || tag == s.Registry.Tag {
		return ""
	}
	if _, state := s.Registry.Lookup(id); state != StateUnknown {
		return ""
	}
	return WorkerID(shared, tag)
}

// forward sends call's payload to target within what is left of ctx's
// budget. The runtime's worker answering that it serves no such id means
// that worker is gone: the runtime expired with it (contract §24.2).
func (s *RunService) forward(ctx context.Context, call *Call, target, id string, budget time.Duration) (json.RawMessage, error) {
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	if budget <= 0 {
		return nil, ErrTimeout()
	}
	res, err := s.Forward.Forward(ctx, target, call.Payload, budget)
	if err == nil {
		return res, nil
	}
	var re *RemoteError
	if errors.As(err, &re) {
		switch {
		case re.Code == "function_not_found":
			return nil, ErrExpired(id)
		case strings.HasPrefix(re.Code, "code-runner::"):
			return nil, &Error{Code: Code(re.Code), Text: strings.TrimPrefix(re.Message, re.Code+": ")}
		case re.Code == "TIMEOUT":
			return nil, ErrTimeout()
		}
	}
	return nil, &Error{Code: CodeEngine, Text: "the worker that holds this runtime did not answer; retry", Cause: err}
}
