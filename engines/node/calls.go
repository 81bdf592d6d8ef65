package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/limits"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/core"
)

// Default catalog descriptions.
const (
	guestDescription    = "Registered at runtime by code-runner; implemented in JavaScript."
	registerDescription = "Registered through code-runner::register_function; implemented in JavaScript."
)

// handleCall answers one bridge call from the host.
func (r *runtime) handleCall(p *hostProc, m *hostproto.Msg) {
	switch m.Op {
	case "trigger":
		r.trigger(p, m)
	case "registerFunction":
		r.reply(m.Call, nil, r.registerFunction(r.callCtx(m.Task), m.Args))
	case "unregisterFunction":
		r.reply(m.Call, nil, r.unregisterFunction(m.Args))
	case "registerTrigger":
		id, err := r.registerTrigger(m.Args)
		v, _ := jsonx.Marshal(id)
		r.reply(m.Call, v, err)
	case "unregisterTrigger":
		r.reply(m.Call, nil, r.unregisterTrigger(m.Args))
	case "registerTriggerType":
		r.reply(m.Call, nil, r.registerTriggerType(r.callCtx(m.Task), m.Args))
	case "unregisterTriggerType":
		r.reply(m.Call, nil, r.unregisterTriggerType(m.Args))
	default:
		r.reply(m.Call, nil, fmt.Errorf("unknown host call %q", m.Op))
	}
}

type triggerArgs struct {
	FunctionID string          `json:"function_id"`
	Payload    json.RawMessage `json:"payload"`
	Action     json.RawMessage `json:"action"`
	TimeoutMS  uint64          `json:"timeout_ms"`
}

// callCtx is the values (trace) of the call task serves: what the worker
// does for a host call joins that call; detached work belongs to none.
func (r *runtime) callCtx(task int64) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.taskValues[task]; c != nil {
		return c
	}
	return context.Background() // detached work: no call
}

// trigger makes one guest call for host p (the host that asked: after a
// restart the runtime's current host may be another).
func (r *runtime) trigger(p *hostProc, m *hostproto.Msg) {
	var a triggerArgs
	parent := r.callCtx(m.Task)
	// The bridge of the call the task serves (a run's, a handler
	// invocation's route); detached work has none and gets the live
	// configuration's.
	b := core.BridgeFrom(parent)
	if err := json.Unmarshal(m.Args, &a); err != nil {
		core.NoteRefusal(parent, r.e.opts.Transport, "")
		r.reply(m.Call, nil, fmt.Errorf("malformed iii request: %v", err))
		return
	}
	if b == nil {
		b = core.NewPolicyBridge(r.e.opts.Transport, r.e.config())
	}
	var deadline time.Time
	if m.DeadlineMS > 0 {
		deadline = time.UnixMilli(m.DeadlineMS)
	}
	if string(a.Action) == "null" {
		a.Action = nil
	}
	ctx, cancel := context.WithTimeout(parent, time.Duration(r.e.config().MaxTimeoutMS)*time.Millisecond+time.Second)
	defer cancel()
	// No host call outlives a kill: the call ends with the host that made
	// it (a timeout, memory or crash kill) or with the runtime (a
	// destroyed one-shot, whose recycled host serves another tenant next).
	host := p
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-host.exited:
		case <-r.gone:
		case <-stop:
			return
		}
		cancel()
	}()
	res, err := b.Trigger(ctx, core.GuestTrigger{FunctionID: a.FunctionID, Payload: a.Payload, Action: a.Action, TimeoutMS: a.TimeoutMS, Deadline: deadline})
	if err == nil && len(res) == 0 {
		res = json.RawMessage("null")
	}
	r.reply(m.Call, res, err)
}

// checkNamespace refuses ids outside the runtime's namespace.
func (r *runtime) checkNamespace(id string) error {
	if !strings.HasPrefix(id, r.namespace) {
		return fmt.Errorf("id %q must start with this runtime's namespace %q — a runtime can only register or unregister ids inside its own namespace", id, r.namespace)
	}
	return nil
}

// checkIDAndDescription applies the namespace, id-size and description-size
// rules shared by functions and trigger types (docs/behaviour.md#guest-iii-register).
func (r *runtime) checkIDAndDescription(id string, description *string) error {
	if err := r.checkNamespace(id); err != nil {
		return err
	}
	if n := len(id); n > limits.MaxFunctionIDBytes {
		return errors.New(limits.OverLimit("function id", n, limits.MaxFunctionIDBytes))
	}
	if description != nil && len(*description) > limits.MaxDescriptionBytes {
		return errors.New(limits.OverLimit("description", len(*description), limits.MaxDescriptionBytes))
	}
	return nil
}

// checkOthers refuses an id that belongs to others (reserved prefixes, the
// deny-list, another worker's function or trigger type). An id this worker
// already holds is its own.
func (r *runtime) checkOthers(ctx context.Context, what, id string) error {
	if err := core.CheckOwnID(what, id); err != nil {
		return errors.New(err.Text)
	}
	if what != core.WhatTriggerType && r.e.opts.Registry.FunctionOwner(id) != "" {
		return nil
	}
	if err := core.CheckNotServedElsewhere(ctx, r.e.opts.Owners, what, id); err != nil {
		return errors.New(err.Text)
	}
	return nil
}

func (r *runtime) countLocked() int { return len(r.fns) + len(r.triggers) + len(r.ttypes) }

func budgetErr() error {
	return fmt.Errorf("this runtime already holds %d registrations (functions, triggers, and trigger types share one budget); reuse an id or tear the runtime down", limits.MaxRegistrations)
}

type registerArgs struct {
	ID                string          `json:"id"`
	Description       *string         `json:"description"`
	RequestFormat     json.RawMessage `json:"request_format"`
	HasRequestFormat  bool            `json:"has_request_format"`
	ResponseFormat    json.RawMessage `json:"response_format"`
	HasResponseFormat bool            `json:"has_response_format"`
	// DefaultDescription is set by register_function definitions.
	DefaultDescription string `json:"default_description"`
}

// registerFunction publishes a guest function (docs/behaviour.md#guest-iii-register).
func (r *runtime) registerFunction(ctx context.Context, raw json.RawMessage) error {
	var a registerArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return fmt.Errorf("malformed registration: %v", err)
	}
	for _, f := range []struct {
		name string
		has  bool
		raw  json.RawMessage
	}{{"request_format", a.HasRequestFormat, a.RequestFormat}, {"response_format", a.HasResponseFormat, a.ResponseFormat}} {
		if f.has {
			if err := core.CheckFormat(f.name, f.raw); err != nil {
				return errors.New(err.(*core.Error).Text)
			}
		}
	}
	if err := r.checkIDAndDescription(a.ID, a.Description); err != nil {
		return err
	}
	r.mu.Lock()
	held := r.fns[a.ID]
	if !held && r.countLocked() >= limits.MaxRegistrations {
		r.mu.Unlock()
		return budgetErr()
	}
	r.mu.Unlock()
	if !held {
		if err := r.checkOthers(ctx, core.WhatFunction, a.ID); err != nil {
			return err
		}
	}
	if err := r.e.opts.Registry.ClaimFunction(a.ID, r.owner); err != nil {
		return fmt.Errorf("id %s is already registered", a.ID)
	}
	r.mu.Lock()
	r.fns[a.ID] = true
	r.mu.Unlock()
	if held && a.Description == nil && !a.HasRequestFormat && !a.HasResponseFormat {
		return nil // the JS handler is swapped in place; the bus registration stays
	}
	desc := guestDescription
	if a.DefaultDescription != "" {
		desc = a.DefaultDescription
	}
	if a.Description != nil {
		desc = *a.Description
	}
	reg := core.FunctionRegistration{ID: a.ID, Description: desc}
	if a.HasRequestFormat {
		reg.RequestFormat = a.RequestFormat
	}
	if a.HasResponseFormat {
		reg.ResponseFormat = a.ResponseFormat
	}
	if bus := r.e.opts.Bus; bus != nil {
		if held {
			bus.UnregisterFunction(a.ID)
		}
		bus.RegisterFunction(reg, r.invokeHandler(a.ID))
	}
	return nil
}

func (r *runtime) unregisterFunction(raw json.RawMessage) error {
	var a struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &a)
	if err := r.checkNamespace(a.ID); err != nil {
		return err
	}
	r.mu.Lock()
	held := r.fns[a.ID]
	delete(r.fns, a.ID)
	r.mu.Unlock()
	if held {
		if bus := r.e.opts.Bus; bus != nil {
			bus.UnregisterFunction(a.ID)
		}
		r.e.opts.Registry.ReleaseFunction(a.ID, r.owner)
	}
	return nil
}

// invokeHandler serves bus invocations of a guest function (docs/behaviour.md#register-invocations)
// behind its route: the budget is the route's, from the call's snapshot.
func (r *runtime) invokeHandler(id string) core.GuestHandler {
	return func(ctx context.Context, inv core.GuestInvocation) (json.RawMessage, error) {
		if r.isNamespaceRuntime() && r.host().dead() {
			// Restore first; the invocation's own budget starts after the replay.
			if err := r.restart(ctx); err != nil {
				return nil, err
			}
		}
		r.mu.Lock()
		brokenText, broken := r.broken[id]
		r.mu.Unlock()
		if broken {
			return nil, core.ErrHandlerNotRestored(id, brokenText)
		}
		cctx, cancel := context.WithTimeout(core.WithBridge(ctx, inv.Bridge), inv.Budget)
		defer cancel()
		d, err := r.exec(cctx, &hostproto.Msg{T: "invoke", FunctionID: id, Payload: inv.Payload})
		if err != nil {
			var ce *core.Error
			if errors.As(err, &ce) && (ce.Code == core.CodeExpired || ce.Code == core.CodeEngine && !r.Alive()) {
				return nil, core.ErrHandlerGone(id)
			}
			return nil, err
		}
		switch d.Status {
		case hostproto.StatusOK:
			return d.Result, nil
		case hostproto.StatusQuota:
			return nil, core.Errorf(core.CodeResourceExhausted, "%s", d.Error)
		case hostproto.StatusMissing:
			return nil, core.ErrHandlerGone(id)
		}
		return nil, core.Errorf(core.CodeHandlerError, "%s", d.Error)
	}
}

type triggerRegArgs struct {
	Type       string          `json:"type"`
	FunctionID string          `json:"function_id"`
	Config     json.RawMessage `json:"config"`
	Metadata   json.RawMessage `json:"metadata"`
}

func (r *runtime) registerTrigger(raw json.RawMessage) (string, error) {
	var a triggerRegArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return "", fmt.Errorf("malformed trigger registration: %v", err)
	}
	if err := capsfilter.CheckTriggerTarget(a.FunctionID); err != nil {
		return "", err
	}
	if err := capsfilter.CheckTriggerBinding(a.Type, a.Config); err != nil {
		return "", err
	}
	// A target is not published: the engine invokes it when the trigger
	// fires, with no more authority than the guest's own iii.trigger. So it
	// keeps only the rules that need no engine (contract §22a.6, amended); a
	// target another worker serves is bound and reaches that worker.
	if err := core.CheckOwnID(core.WhatTarget, a.FunctionID); err != nil {
		return "", errors.New(err.Text)
	}
	if n := len(a.Config); n > limits.MaxTriggerConfigBytes {
		return "", errors.New(limits.OverLimit("trigger config", n, limits.MaxTriggerConfigBytes))
	}
	r.mu.Lock()
	if r.countLocked() >= limits.MaxRegistrations {
		r.mu.Unlock()
		return "", budgetErr()
	}
	r.mu.Unlock()
	if string(a.Metadata) == "null" {
		a.Metadata = nil
	}
	id := ""
	if bus := r.e.opts.Bus; bus != nil {
		id = bus.RegisterTrigger(core.TriggerRegistration{TriggerType: a.Type, FunctionID: a.FunctionID, Config: a.Config, Metadata: a.Metadata})
	} else {
		id = core.NewRuntimeID()[3:] // a UUID v4
	}
	r.mu.Lock()
	r.triggers[id] = true
	r.mu.Unlock()
	return id, nil
}

func (r *runtime) unregisterTrigger(raw json.RawMessage) error {
	var a struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &a)
	r.mu.Lock()
	held := r.triggers[a.ID]
	delete(r.triggers, a.ID)
	r.mu.Unlock()
	if held && r.e.opts.Bus != nil {
		r.e.opts.Bus.UnregisterTrigger(a.ID)
	}
	return nil
}

func (r *runtime) registerTriggerType(ctx context.Context, raw json.RawMessage) error {
	var a struct {
		ID          string  `json:"id"`
		Description *string `json:"description"`
	}
	_ = json.Unmarshal(raw, &a)
	if err := r.checkIDAndDescription(a.ID, a.Description); err != nil {
		return err
	}
	r.mu.Lock()
	held := r.ttypes[a.ID]
	r.mu.Unlock()
	if !held {
		if err := r.checkOthers(ctx, core.WhatTriggerType, a.ID); err != nil {
			return err
		}
	}
	r.mu.Lock()
	if !held && r.countLocked() >= limits.MaxRegistrations {
		r.mu.Unlock()
		return budgetErr()
	}
	r.ttypes[a.ID] = true
	r.mu.Unlock()
	if held {
		return nil // the handler is swapped in the isolate; no bus write
	}
	desc := guestDescription
	if a.Description != nil {
		desc = *a.Description
	}
	if bus := r.e.opts.Bus; bus != nil {
		bus.RegisterTriggerType(a.ID, desc, &typeProvider{r: r, typeID: a.ID})
	}
	return nil
}

func (r *runtime) unregisterTriggerType(raw json.RawMessage) error {
	var a struct {
		ID *string `json:"id"`
	}
	_ = json.Unmarshal(raw, &a)
	id := ""
	if a.ID != nil {
		id = *a.ID
	}
	if err := r.checkNamespace(id); err != nil {
		return err
	}
	r.mu.Lock()
	held := r.ttypes[id]
	delete(r.ttypes, id)
	r.mu.Unlock()
	if held && r.e.opts.Bus != nil {
		r.e.opts.Bus.UnregisterTriggerType(id)
	}
	return nil
}

// typeProvider delivers bindings of a guest trigger type to its handler.
type typeProvider struct {
	r      *runtime
	typeID string
}

func (t *typeProvider) call(ctx context.Context, kind string, b core.Binding) error {
	t.r.mu.Lock()
	provided := t.r.ttypes[t.typeID]
	t.r.mu.Unlock()
	if !provided {
		return errors.New("trigger_type_not_found: this runtime no longer provides " + t.typeID)
	}
	body, _ := jsonx.Marshal(b)
	cctx, cancel := context.WithTimeout(ctx, core.RunBudget(0, t.r.e.config()))
	defer cancel()
	d, err := t.r.exec(cctx, &hostproto.Msg{T: kind, TypeID: t.typeID, Binding: body})
	if err != nil {
		return err
	}
	if d.Status != hostproto.StatusOK {
		if d.Status == hostproto.StatusMissing {
			return errors.New("trigger_type_not_found: this runtime no longer provides " + t.typeID)
		}
		return errors.New(d.Error)
	}
	return nil
}

// RegisterTrigger runs the guest's handler.registerTrigger.
func (t *typeProvider) RegisterTrigger(ctx context.Context, b core.Binding) error {
	return t.call(ctx, "treg", b)
}

// UnregisterTrigger runs the guest's handler.unregisterTrigger.
func (t *typeProvider) UnregisterTrigger(ctx context.Context, b core.Binding) error {
	return t.call(ctx, "tunreg", b)
}
