package core

import (
	"errors"
	"fmt"

	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// Code is a code-runner error code; it travels as the wire error's `code`.
type Code string

// The eight error codes (docs/behaviour.md#errors-codes).
const (
	CodeInvalidRequest    Code = "code-runner::invalid_request"
	CodeRuntimeNotFound   Code = "code-runner::runtime_not_found"
	CodeExpired           Code = "code-runner::expired"
	CodeCapacity          Code = "code-runner::capacity"
	CodeTimeout           Code = "code-runner::timeout"
	CodeResourceExhausted Code = "code-runner::resource_exhausted"
	CodeHandlerError      Code = "code-runner::handler_error"
	CodeEngine            Code = "code-runner::engine"
)

// Codes lists every code in the order of docs/behaviour.md#errors-codes.
var Codes = []Code{CodeInvalidRequest, CodeRuntimeNotFound, CodeExpired, CodeCapacity,
	CodeTimeout, CodeResourceExhausted, CodeHandlerError, CodeEngine}

// Error is a failed invocation. Its Error() is the wire message
// "<code>: <text>" (docs/behaviour.md#errors-wire-shape).
type Error struct {
	Code  Code
	Text  string
	Cause error // for logs only; never sent on the wire
	// Kill says why guest code was stopped, when it was: telemetry counts
	// kills by it (contract §22a.11). Never sent on the wire.
	Kill Kill
}

// Kill is why a call's guest code was stopped.
type Kill string

// The kills telemetry tells apart.
const (
	KillTimeout   Kill = "timeout"    // its deadline
	KillMemory    Kill = "memory"     // a memory cap
	KillBudget    Kill = "budget"     // python's /work or /out budget
	KillHostDeath Kill = "host_death" // an isolate host that died under its call
)

// KillOf returns the kill err carries ("" when guest code was not
// stopped), wherever it is in err's chain.
func KillOf(err error) Kill {
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Kill
	}
	return ""
}

// Error returns "<code>: <text>".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Text }

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Cause }

// Errorf builds an *Error whose text is formatted like fmt.Sprintf.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Text: fmt.Sprintf(format, args...)}
}

// WireError is the `error` object of an invocationresult (docs/behaviour.md#errors-wire-shape).
type WireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Wire renders e in its wire shape.
func (e *Error) Wire() WireError {
	return WireError{Code: string(e.Code), Message: e.Error()}
}

// MarshalJSON renders e in its wire shape.
func (e *Error) MarshalJSON() ([]byte, error) { return jsonx.Marshal(e.Wire()) }

// AsError returns err as an *Error. Anything else becomes the internal
// `code-runner::engine` error for functionID, keeping err as the cause.
func AsError(err error, functionID string) *Error {
	var ce *Error
	if errors.As(err, &ce) {
		return ce
	}
	return &Error{Code: CodeEngine, Text: fmt.Sprintf("internal error while handling %s; see the worker logs", functionID), Cause: err}
}

// Catalogue constructors for messages used in more than one place
// (docs/behaviour.md#errors-messages).

// ErrCapacity is `all <n> runtime slots are in use`.
func ErrCapacity(max int64) *Error {
	return Errorf(CodeCapacity, "all %d runtime slots are in use", max)
}

// ErrTimeout is `execution exceeded its deadline`.
func ErrTimeout() *Error {
	return &Error{Code: CodeTimeout, Text: "execution exceeded its deadline", Kill: KillTimeout}
}

// MaxAskableMemoryMB is the largest memory_mb a memory-cap refusal tells a
// caller to ask for.
const MaxAskableMemoryMB = 512

// ErrMemoryCap is a memory-cap kill (contract §16.3): subject ("the
// runtime" for node, "run" for python) "exceeded its memory cap of <mib> MiB
// and was killed", naming below 512 MiB how to ask for more.
func ErrMemoryCap(subject string, mib int64) *Error {
	text := fmt.Sprintf("%s exceeded its memory cap of %d MiB and was killed", subject, mib)
	if mib < MaxAskableMemoryMB {
		text += fmt.Sprintf(" (a run that creates a runtime may ask for up to %d MiB with memory_mb)", MaxAskableMemoryMB)
	}
	return &Error{Code: CodeResourceExhausted, Text: text, Kill: KillMemory}
}

// ErrUnknownRuntime is `unknown runtime_id <id>`.
func ErrUnknownRuntime(id string) *Error {
	return Errorf(CodeRuntimeNotFound, "unknown runtime_id %s", id)
}

// ErrExpired is the expired-runtime message for a held id.
func ErrExpired(id string) *Error {
	return Errorf(CodeExpired, "runtime %s expired: it was reaped or killed and its functions unregistered — call run again without this runtime_id to get a fresh one (its scratch directory starts empty)", id)
}

// ErrHandlerGone is the answer of a guest function whose runtime was reaped
// or torn down (its id is being unregistered).
func ErrHandlerGone(functionID string) *Error {
	return Errorf(CodeExpired, "the runtime behind %s was reaped or torn down; its functions are unregistered", functionID)
}

// ErrHandlerNotRestored is the answer of a guest function whose source
// failed when its restarted runtime replayed it; why is the failure.
func ErrHandlerNotRestored(functionID, why string) *Error {
	return Errorf(CodeHandlerError, "handler for %s could not be restored after its runtime restarted: %s", functionID, why)
}

// ErrLostMidRun replaces not-found/expired for callers that held no id
// (docs/behaviour.md#runtime-id-capability).
func ErrLostMidRun() *Error {
	return Errorf(CodeEngine, "the run's runtime was reaped or lost mid-run; retry")
}

// ErrDiskBudget is python's /work or /out budget kill naming dir.
func ErrDiskBudget(maxBytes int64, maxEntries int, dir string) *Error {
	return &Error{Code: CodeResourceExhausted, Kill: KillBudget,
		Text: fmt.Sprintf("run wrote more than %d bytes (or more than %d files) under %s and was killed", maxBytes, maxEntries, dir)}
}

// ErrHostCrashed is a node isolate host that died under its call.
func ErrHostCrashed() *Error {
	return &Error{Code: CodeEngine, Text: "the runtime's isolate host crashed during this call; retry", Kill: KillHostDeath}
}

// ErrFunctionNotFound is what the wire layer answers, with the engine-standard
// code `function_not_found`, for an id the worker does not serve.
var ErrFunctionNotFound = errors.New("function not found")
