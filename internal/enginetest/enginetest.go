// Package enginetest holds the test doubles the engine tests share: a
// Transport that answers guest bus calls in-process and a Bus that records
// guest registrations and lets a test invoke their handlers the way the
// engine would. Production code must not import it.
package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/core"
)

// Loopback is a core.Transport for tests: code-runner::run goes back into
// Router (nested runs), test::echo echoes its payload (void resolves null,
// any other action answers a receipt), test::never never answers; anything
// else is function_not_found. Every call is recorded.
type Loopback struct {
	Router *core.Router

	mu    sync.Mutex
	calls []core.Invocation
}

// Invoke answers one guest call.
func (l *Loopback) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	l.mu.Lock()
	l.calls = append(l.calls, inv)
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, inv.Timeout)
	defer cancel()
	switch inv.FunctionID {
	case core.FnRun:
		res, err := l.Router.Invoke(ctx, core.FnRun, inv.Data, nil)
		if err != nil {
			ce := core.AsError(err, core.FnRun)
			return nil, &core.RemoteError{Code: string(ce.Code), Message: ce.Error()}
		}
		return jsonx.Marshal(res)
	case "test::never":
		<-ctx.Done()
		return nil, &core.RemoteError{Code: "TIMEOUT", Message: fmt.Sprintf("invocation timed out after %dms", inv.Timeout.Milliseconds())}
	case "test::echo":
		if string(inv.Action) == `{"type":"void"}` {
			return nil, nil
		}
		if len(inv.Action) > 0 {
			return json.RawMessage(`{"messageReceiptId":"00000000-0000-4000-8000-000000000000"}`), nil
		}
		return inv.Data, nil
	}
	return nil, &core.RemoteError{Code: "function_not_found", Message: "Function " + inv.FunctionID + " not found"}
}

// Seen returns every call so far.
func (l *Loopback) Seen() []core.Invocation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]core.Invocation{}, l.calls...)
}

// Bus records guest registrations (core.Bus).
type Bus struct {
	mu       sync.Mutex
	fns      map[string]core.FunctionRegistration
	handlers map[string]core.GuestHandler
	triggers map[string]core.TriggerRegistration
	types    map[string]core.TriggerProvider
	n        int
}

// NewBus returns an empty Bus.
func NewBus() *Bus {
	return &Bus{fns: map[string]core.FunctionRegistration{}, handlers: map[string]core.GuestHandler{},
		triggers: map[string]core.TriggerRegistration{}, types: map[string]core.TriggerProvider{}}
}

// RegisterFunction records a function and its handler.
func (b *Bus) RegisterFunction(reg core.FunctionRegistration, h core.GuestHandler) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fns[reg.ID], b.handlers[reg.ID] = reg, h
}

// UnregisterFunction forgets a function.
func (b *Bus) UnregisterFunction(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.fns, id)
	delete(b.handlers, id)
}

// RegisterTrigger records a binding and mints its id.
func (b *Bus) RegisterTrigger(t core.TriggerRegistration) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n++
	id := fmt.Sprintf("trig-%d", b.n)
	b.triggers[id] = t
	return id
}

// UnregisterTrigger forgets a binding.
func (b *Bus) UnregisterTrigger(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.triggers, id)
}

// RegisterTriggerType records a provider.
func (b *Bus) RegisterTriggerType(id, description string, p core.TriggerProvider) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.types[id] = p
}

// UnregisterTriggerType forgets a provider.
func (b *Bus) UnregisterTriggerType(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.types, id)
}

// Invoke calls the handler registered for id, as an engine invocation would.
func (b *Bus) Invoke(t testing.TB, id, payload string) (json.RawMessage, error) {
	t.Helper()
	b.mu.Lock()
	h := b.handlers[id]
	b.mu.Unlock()
	if h == nil {
		t.Fatalf("%s is not registered on the bus", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Behind core.GuestRoutes (as in the worker) the route sets the budget;
	// this one only applies to a handler registered without a router.
	return h(ctx, core.GuestInvocation{Payload: json.RawMessage(payload), Budget: 30 * time.Second})
}

// Has reports whether id is registered.
func (b *Bus) Has(id string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.fns[id]
	return ok
}

// Registration returns the registration of id.
func (b *Bus) Registration(id string) core.FunctionRegistration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fns[id]
}

// Provider returns the provider of trigger type id.
func (b *Bus) Provider(id string) core.TriggerProvider {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.types[id]
}

// Count returns how many functions, triggers and trigger types are registered.
func (b *Bus) Count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.fns) + len(b.triggers) + len(b.types)
}

// CapCase is one result whose JSON holds characters encoders like to escape
// (<, >, &, U+2028, U+2029): Unit repeated N times, measured against the
// default max_result_bytes (32768) as raw UTF-8 compact JSON.
type CapCase struct {
	Name   string
	Unit   string
	N      int
	Capped string // the marker's size and shape, "" when the value comes back whole
}

// CapCases are the same cases for both engines, at and over the cap.
var CapCases = []CapCase{
	{"html under the cap", "<&>", 10000, ""},
	{"html over the cap", "<&>", 10923, "~32 KB (a 32769-char string)"},
	{"line separators under the cap", "\u2028\u2029", 5000, ""},
	{"line separators over the cap", "\u2028\u2029", 5462, "~32 KB (a 10924-char string)"},
}
