package iiitest

import (
	"context"
	"encoding/json"
	"sort"

	"github.com/code-runner-go/code-runner/iii"
)

// registerBuiltinType installs an in-process trigger type.
func (e *Engine) registerBuiltinType(id, description string, p BuiltinProvider) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.triggerTypes[id] = &triggerType{id: id, description: description, builtin: p}
}

func (c *econn) registerTriggerType(f *iii.Frame) {
	e := c.e
	desc := ""
	if f.Description != nil {
		desc = *f.Description
	}
	e.mu.Lock()
	e.triggerTypes[f.ID] = &triggerType{id: f.ID, description: desc, provider: c}
	var redeliver []*trigger
	for id, t := range e.triggers {
		if t.TriggerType != f.ID {
			continue
		}
		if t.owner != nil {
			if _, alive := e.conns[t.owner.id]; !alive {
				delete(e.triggers, id)
				continue
			}
		}
		t.live = true
		redeliver = append(redeliver, t)
	}
	e.mu.Unlock()
	sort.Slice(redeliver, func(i, j int) bool { return redeliver[i].ID < redeliver[j].ID })
	for _, t := range redeliver {
		c.send(bindingFrame(t))
	}
}

func bindingFrame(t *trigger) *iii.Frame {
	return &iii.Frame{Type: iii.TypeRegisterTrigger, ID: t.ID, TriggerType: t.TriggerType, FunctionID: t.FunctionID, Config: t.Config, Metadata: t.Metadata}
}

func (c *econn) registerTrigger(f *iii.Frame) {
	e := c.e
	t := &trigger{TriggerInfo: TriggerInfo{ID: f.ID, TriggerType: f.TriggerType, FunctionID: f.FunctionID, Config: f.Config, Metadata: nullToNil(f.Metadata), Owner: c.id}, owner: c}
	e.mu.Lock()
	tt := e.triggerTypes[f.TriggerType]
	if old, ok := e.triggers[f.ID]; ok && old.live {
		e.mu.Unlock()
		e.deliverUnregister(old)
		e.mu.Lock()
	}
	e.triggers[f.ID] = t
	switch {
	case tt == nil:
		e.log.Warn("iiitest: binding parked until its trigger type appears", "trigger_type", f.TriggerType, "trigger_id", f.ID)
		e.mu.Unlock()
	case tt.builtin != nil:
		e.mu.Unlock()
		if err := tt.builtin.Register(t.TriggerInfo); err != nil {
			e.mu.Lock()
			delete(e.triggers, f.ID)
			e.mu.Unlock()
			c.send(&iii.Frame{Type: iii.TypeTriggerRegistrationResult, ID: f.ID, TriggerType: f.TriggerType, FunctionID: f.FunctionID,
				Error: &iii.ErrorBody{Code: "trigger_registration_failed", Message: err.Error()}})
			return
		}
		e.mu.Lock()
		t.live = true
		e.mu.Unlock()
	default:
		t.live = true
		provider := tt.provider
		e.mu.Unlock()
		provider.send(bindingFrame(t))
	}
}

func (e *Engine) unregisterTrigger(id string) {
	e.mu.Lock()
	t, ok := e.triggers[id]
	if ok {
		delete(e.triggers, id)
	}
	e.mu.Unlock()
	if ok && t.live {
		e.deliverUnregister(t)
	}
}

// deliverUnregister tells the provider of a live binding that it is gone.
func (e *Engine) deliverUnregister(t *trigger) {
	e.mu.Lock()
	tt := e.triggerTypes[t.TriggerType]
	e.mu.Unlock()
	if tt == nil {
		return
	}
	if tt.builtin != nil {
		tt.builtin.Unregister(t.ID)
		return
	}
	tt.provider.send(&iii.Frame{Type: iii.TypeUnregisterTrigger, ID: t.ID, TriggerType: t.TriggerType})
}

func (c *econn) triggerResult(f *iii.Frame) {
	e := c.e
	if f.Error == nil {
		return
	}
	e.mu.Lock()
	tt := e.triggerTypes[f.TriggerType]
	t := e.triggers[f.ID]
	if tt == nil || tt.provider != c || t == nil {
		e.mu.Unlock()
		return
	}
	t.live = false
	owner := t.owner
	e.mu.Unlock()
	if owner != nil {
		owner.send(&iii.Frame{Type: iii.TypeTriggerRegistrationResult, ID: t.ID, TriggerType: t.TriggerType, FunctionID: t.FunctionID, Error: f.Error})
	}
}

// Bindings returns the live and parked bindings of triggerType.
func (e *Engine) Bindings(triggerType string) []TriggerInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []TriggerInfo
	for _, t := range e.triggers {
		if t.TriggerType == triggerType {
			out = append(out, t.TriggerInfo)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// workersAvailable is the built-in engine::workers-available trigger type.
type workersAvailable struct{ e *Engine }

func (w workersAvailable) Register(TriggerInfo) error { return nil }
func (w workersAvailable) Unregister(string)          {}

func (e *Engine) fireWorkersAvailable(event, workerID string) {
	for _, t := range e.Bindings("engine::workers-available") {
		payload, _ := json.Marshal(map[string]string{"event": event, "worker_id": workerID})
		go e.fire(context.Background(), t.FunctionID, json.RawMessage(payload), t.Metadata)
	}
}

// rejectBinding parks a live binding whose in-process provider failed
// asynchronously and tells the registrant, as a provider's error result does.
func (e *Engine) rejectBinding(id, msg string) {
	e.mu.Lock()
	t, ok := e.triggers[id]
	if ok {
		t.live = false
	}
	e.mu.Unlock()
	if ok && t.owner != nil {
		t.owner.send(&iii.Frame{Type: iii.TypeTriggerRegistrationResult, ID: t.ID, TriggerType: t.TriggerType, FunctionID: t.FunctionID,
			Error: &iii.ErrorBody{Code: "trigger_registration_failed", Message: msg}})
	}
}
