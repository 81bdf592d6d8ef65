// Package demo is a Go worker named "g" that the Node interop suite drives
// through the bus to exercise the iii client from the other side:
//
//	g::echo  {…}                                    → {"data": <payload>, "metadata": <metadata>}
//	g::call  {function_id, payload?, timeout_ms?, action?} → {"result": …} or {"error": {code, message}}
//	g::bindings {}                                  → {"registered": [binding…], "unregistered": [id…]}
//	g::fire  {trigger_id, payload}                  → what the bound function answered
//
// and it provides the trigger type "g-tt".
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/iii"
)

// Worker is the running demo worker.
type Worker struct {
	c *iii.Client

	mu           sync.Mutex
	registered   []iii.Binding
	unregistered []string
}

// Start connects the demo worker to url.
func Start(url string, log *slog.Logger) *Worker {
	w := &Worker{c: iii.New(iii.Options{URL: url, Name: "g", Version: "demo", Description: "Go demo worker for interop tests", Logger: log})}
	w.c.RegisterTriggerType(iii.TriggerTypeDef{ID: "g-tt", Description: "Demo trigger type provided by the Go client"}, w)
	w.c.RegisterFunction(iii.FunctionDef{ID: "g::echo", Description: "Echo the payload and metadata"}, func(ctx context.Context, r iii.Request) (any, error) {
		return map[string]json.RawMessage{"data": orNull(r.Data), "metadata": orNull(r.Metadata)}, nil
	})
	w.c.RegisterFunction(iii.FunctionDef{ID: "g::call", Description: "Call a function from the Go client"}, w.call)
	w.c.RegisterFunction(iii.FunctionDef{ID: "g::bindings", Description: "Bindings delivered to g-tt"}, func(ctx context.Context, r iii.Request) (any, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		type b struct {
			ID         string          `json:"id"`
			FunctionID string          `json:"function_id"`
			Config     json.RawMessage `json:"config"`
			Metadata   json.RawMessage `json:"metadata"`
		}
		regs := []b{}
		for _, x := range w.registered {
			regs = append(regs, b{x.ID, x.FunctionID, orNull(x.Config), orNull(x.Metadata)})
		}
		return map[string]any{"registered": regs, "unregistered": append([]string{}, w.unregistered...)}, nil
	})
	w.c.RegisterFunction(iii.FunctionDef{ID: "g::fire", Description: "Fire a g-tt binding"}, w.fire)
	return w
}

// Close disconnects the worker.
func (w *Worker) Close() { _ = w.c.Close() }

func orNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func (w *Worker) call(ctx context.Context, r iii.Request) (any, error) {
	var in struct {
		FunctionID string          `json:"function_id"`
		Payload    json.RawMessage `json:"payload"`
		Metadata   json.RawMessage `json:"metadata"`
		TimeoutMS  int64           `json:"timeout_ms"`
		Action     json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(r.Data, &in); err != nil {
		return nil, err
	}
	res, err := w.c.Invoke(ctx, iii.Call{FunctionID: in.FunctionID, Data: in.Payload, Metadata: in.Metadata, Action: in.Action,
		Timeout: time.Duration(in.TimeoutMS) * time.Millisecond})
	if err != nil {
		var ie *iii.InvocationError
		if errors.As(err, &ie) {
			return map[string]any{"error": map[string]string{"code": ie.Code, "message": ie.Message}}, nil
		}
		return nil, err
	}
	return map[string]json.RawMessage{"result": orNull(res)}, nil
}

func (w *Worker) fire(ctx context.Context, r iii.Request) (any, error) {
	var in struct {
		TriggerID string          `json:"trigger_id"`
		Payload   json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(r.Data, &in); err != nil {
		return nil, err
	}
	w.mu.Lock()
	var target *iii.Binding
	for i := range w.registered {
		if w.registered[i].ID == in.TriggerID {
			target = &w.registered[i]
		}
	}
	w.mu.Unlock()
	if target == nil {
		return nil, fmt.Errorf("no binding %s", in.TriggerID)
	}
	return w.c.Invoke(ctx, iii.Call{FunctionID: target.FunctionID, Data: in.Payload, Metadata: target.Metadata})
}

// RegisterTrigger records a g-tt binding.
func (w *Worker) RegisterTrigger(ctx context.Context, b iii.Binding) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.registered = append(w.registered, b)
	return nil
}

// UnregisterTrigger records the removal of a g-tt binding.
func (w *Worker) UnregisterTrigger(ctx context.Context, b iii.Binding) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unregistered = append(w.unregistered, b.ID)
	return nil
}
