package core

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

// busRecorder is the bus below GuestRoutes: it keeps the handler it was
// handed, as the engine connection would.
type busRecorder struct {
	mu        sync.Mutex
	handlers  map[string]GuestHandler
	providers map[string]TriggerProvider
}

func (b *busRecorder) RegisterFunction(reg FunctionRegistration, h GuestHandler) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.handlers == nil {
		b.handlers = map[string]GuestHandler{}
	}
	b.handlers[reg.ID] = h
}
func (b *busRecorder) UnregisterFunction(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.handlers, id)
}
func (b *busRecorder) RegisterTrigger(TriggerRegistration) string { return "t" }
func (b *busRecorder) UnregisterTrigger(string)                   {}
func (b *busRecorder) RegisterTriggerType(id, description string, p TriggerProvider) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.providers == nil {
		b.providers = map[string]TriggerProvider{}
	}
	b.providers[id] = p
}
func (b *busRecorder) UnregisterTriggerType(string) {}

func (b *busRecorder) handler(id string) GuestHandler {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.handlers[id]
}

// TestGuestFunctionsEnterThroughTheRouter: a guest function published
// through GuestRoutes is a route; the handler the bus holds enters through
// it, so the engine sees the budget of the router's current snapshot (a
// reload changes it), the route's payload limit refuses before the engine
// runs, and once retired the id answers function_not_found without
// touching the worker's own routes.
func TestGuestFunctionsEnterThroughTheRouter(t *testing.T) {
	r := NewRouter(snapWith(func(c *configsvc.Config) { c.DefaultTimeoutMS = 1234 }).Config, "test", nil, nil)
	r.Handle(FnRun, Route{Terminal: func(context.Context, *Call) (any, error) { return "run", nil }})
	below := &busRecorder{}
	g := &GuestRoutes{Router: r, Bus: below}
	var mu sync.Mutex
	var seen []GuestInvocation
	g.RegisterFunction(FunctionRegistration{ID: "ns::f", PayloadLimit: 8}, func(ctx context.Context, inv GuestInvocation) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, inv)
		mu.Unlock()
		return json.RawMessage(`"ok"`), nil
	})
	if ids := strings.Join(r.IDs(), ","); ids != FnRun+",ns::f" {
		t.Fatalf("routes %s", ids)
	}
	h := below.handler("ns::f")
	ctx := context.Background()
	if res, err := h(ctx, GuestInvocation{Payload: json.RawMessage(`{}`)}); err != nil || string(res) != `"ok"` {
		t.Fatalf("%s %v", res, err)
	}
	reconfigure(r, snapWith(func(c *configsvc.Config) { c.DefaultTimeoutMS = 4321 }))
	if _, err := h(ctx, GuestInvocation{Payload: json.RawMessage(`{}`), Budget: time.Hour}); err != nil {
		t.Fatal(err)
	}
	_, err := h(ctx, GuestInvocation{Payload: json.RawMessage(`{"a":123}`)})
	var ce *Error
	if !errors.As(err, &ce) || ce.Code != CodeInvalidRequest || ce.Text != "payload is 9 bytes; max 8" {
		t.Fatalf("over the limit: %v", err)
	}
	mu.Lock()
	if len(seen) != 2 || seen[0].Budget != 1234*time.Millisecond || seen[1].Budget != 4321*time.Millisecond {
		t.Fatalf("the engine saw %+v", seen)
	}
	mu.Unlock()

	g.UnregisterFunction("ns::f")
	g.UnregisterFunction(FnRun) // not a guest route: stays
	if ids := strings.Join(r.IDs(), ","); ids != FnRun {
		t.Fatalf("routes after retiring %s", ids)
	}
	_, err = h(ctx, GuestInvocation{Payload: json.RawMessage(`{}`)}) // a late invocation
	if w := WireOf(err, "ns::f"); w.Code != "function_not_found" || w.Message != "Function ns::f not found" {
		t.Fatalf("late invocation: %+v", w)
	}
}

// TestRouteAddedDuringAReloadServesTheNewSnapshot: HandleCurrent reads the
// snapshot under the router's lock, so a guest route added after a reload
// swapped the table serves the reloaded configuration.
func TestRouteAddedDuringAReloadServesTheNewSnapshot(t *testing.T) {
	r := NewRouter(snapWith(func(c *configsvc.Config) { c.MaxResultBytes = 111 }).Config, "test", nil, nil)
	r.HandleCurrent("g", func(_ context.Context, c *Call) (any, error) { return c.Config.MaxResultBytes, nil })
	res, err := r.Invoke(context.Background(), "g", nil, nil)
	if err != nil || res.(int64) != 111 {
		t.Fatalf("%v %v", res, err)
	}
}

func TestWireOf(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		code, message string
	}{
		{"no route", ErrFunctionNotFound, "function_not_found", "Function x::y not found"},
		{"code-runner error", ErrTimeout(), "code-runner::timeout", "code-runner::timeout: execution exceeded its deadline"},
		{"wrapped code-runner error", errors.Join(errors.New("ctx"), ErrExpired("r1")), "code-runner::expired", ErrExpired("r1").Error()},
		{"anything else", errors.New("boom"), "code-runner::engine", "code-runner::engine: internal error while handling x::y; see the worker logs"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if w := WireOf(tc.err, "x::y"); w.Code != tc.code || w.Message != tc.message {
				t.Fatalf("%+v", w)
			}
		})
	}
}

// providerProbe is a guest trigger type's provider as an engine implements
// it: it records the deadline and the bridge each callback got.
type providerProbe struct {
	budget time.Duration
	bridge bool
	err    error
}

func (p *providerProbe) RegisterTrigger(ctx context.Context, b Binding) error {
	if dl, ok := ctx.Deadline(); ok {
		p.budget = time.Until(dl)
	}
	p.bridge = BridgeFrom(ctx) != nil
	return p.err
}

func (p *providerProbe) UnregisterTrigger(ctx context.Context, b Binding) error {
	return p.RegisterTrigger(ctx, b)
}

// TestTriggerTypeCallbacksEnterThroughTheDoor: a guest trigger type's
// provider callbacks pass the router's door (counted like any call) and
// reach the engine with the budget of the router's snapshot and a bridge;
// the provider's own error reaches the registrant unchanged.
func TestTriggerTypeCallbacksEnterThroughTheDoor(t *testing.T) {
	var doors []string
	door := func(next Handler) Handler {
		return func(ctx context.Context, c *Call) (any, error) {
			doors = append(doors, c.FunctionID)
			return next(ctx, c)
		}
	}
	r := NewRouter(snapWith(func(c *configsvc.Config) { c.DefaultTimeoutMS = 1234 }).Config, "test", nil, nil, door)
	below := &busRecorder{}
	g := &GuestRoutes{Router: r, Bus: below}
	probe := &providerProbe{}
	g.RegisterTriggerType("ns::ticks", "every tick", probe)
	p := below.providers["ns::ticks"]
	if p == nil {
		t.Fatal("the trigger type was not published")
	}
	if err := p.RegisterTrigger(context.Background(), Binding{ID: "b1", FunctionID: "ns::f"}); err != nil {
		t.Fatal(err)
	}
	if len(doors) != 1 || doors[0] != "ns::ticks" {
		t.Fatalf("the callback passed the door as %v", doors)
	}
	// The defaults would give 5,000 ms: at most 1,234 is the snapshot's.
	if probe.budget <= 0 || probe.budget > 1234*time.Millisecond || !probe.bridge {
		t.Fatalf("the provider got a budget of %v (want the snapshot's 1234 ms) and a bridge %v", probe.budget, probe.bridge)
	}
	probe.err = errors.New("trigger_type_not_found: this runtime no longer provides ns::ticks")
	if err := p.UnregisterTrigger(context.Background(), Binding{ID: "b1"}); err != probe.err {
		t.Fatalf("the provider's error came back as %v", err)
	}
	if len(doors) != 2 {
		t.Fatalf("%d callbacks passed the door, want 2", len(doors))
	}
}
