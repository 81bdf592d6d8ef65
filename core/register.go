package core

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/code-runner-go/code-runner/limits"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Definer is implemented by runtimes that can host register_function
// handlers (docs/behaviour.md#register-node-source, #register-python-source).
type Definer interface {
	// Define runs source in the runtime so that it defines handler(payload)
	// and publishes it as functionID. A definition failure is an *Error
	// (invalid_request with the diagnostic, timeout, resource_exhausted).
	Define(ctx context.Context, def Definition) error
}

// Definition is one register_function request handed to a runtime.
type Definition struct {
	FunctionID     string
	Source         string
	Description    *string
	RequestFormat  []byte // nil when absent
	ResponseFormat []byte
}

// nsKey names one namespace runtime.
type nsKey struct {
	ns   string // canonical "<seg>::"
	lang Lang
}

// nsRuntime is one (namespace, lang) runtime.
type nsRuntime struct {
	key     nsKey
	rt      Runtime
	slot    *Slot
	mu      sync.Mutex // serializes registrations
	ids     map[string]bool
	gone    bool
	touched time.Time
}

// Namespaces is the terminal of code-runner::register_function and
// code-runner::teardown: one runtime per (namespace, lang), created by that
// language's first registration.
type Namespaces struct {
	Registry *Registry
	Engines  map[Lang]Engine
	Run      *RunService
	Now      func() time.Time
	// Owners answers whether another worker on the engine serves an id
	// (nil: no engine, as in local mode).
	Owners Owners
	// Locate finds the other code-runner worker that serves a namespace:
	// register_function and teardown for it are forwarded there, so one
	// namespace never spans two workers (nil: every namespace is here).
	Locate NamespaceLocator
	// Claims settles which worker creates a namespace new to the group
	// (claim.go; nil: every namespace is here).
	Claims NamespaceClaims
	// Records keeps every published function's record (records.go; nil:
	// registrations live in memory only).
	Records RecordStore
	// WorkerName is written in each record.
	WorkerName string
	// Log gets what goes wrong on the side (a record not deleted).
	Log *slog.Logger

	mu     sync.Mutex
	recs   map[string]*nsRecords
	live   map[nsKey]*nsRuntime
	claims map[string]*nsClaim
	langs  langList
}

// DecodeRegisterCall is the Decoder of the register_function route.
func (n *Namespaces) DecodeRegisterCall(call *Call) error {
	req, err := DecodeRegister(call.Payload, n.langs.of(n.Engines))
	if err != nil {
		return err
	}
	call.Request = req
	return nil
}

// DecodeTeardownCall is the Decoder of the teardown route.
func DecodeTeardownCall(call *Call) error {
	req, err := DecodeTeardown(call.Payload)
	if err != nil {
		return err
	}
	call.Request = req
	call.Held = req.RuntimeID
	return nil
}

var workerNameChars = regexp.MustCompile(`^[a-z0-9._-]+$`)

// CheckNamespaceSegment applies the worker-name charset rule
// (docs/behaviour.md#register-validation-order) to seg; ns is its
// canonical "<seg>::" form for messages.
func CheckNamespaceSegment(seg string) error {
	ns := seg + "::"
	reason := ""
	switch {
	case len(seg) > 64:
		reason = fmt.Sprintf(`worker name %q is %d bytes; max 64`, seg, len(seg))
	case strings.Contains(seg, ".."):
		reason = fmt.Sprintf(`worker name %q contains ".."`, seg)
	case strings.HasPrefix(seg, "."):
		reason = fmt.Sprintf(`worker name %q starts with "."`, seg)
	case !workerNameChars.MatchString(seg):
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				reason = fmt.Sprintf(`worker name %q contains '%c'; use lowercase letters, digits, ".", "_" or "-"`, seg, c)
				break
			}
		}
	}
	if reason == "" {
		return nil
	}
	return Errorf(CodeInvalidRequest, `namespace %q is not one worker name: %s. A namespace's first segment IS the worker name on the bus, so pass a single segment — "my-app::", with lowercase letters, digits, ".", "_" or "-". Ids may still nest below it: "my-app::v2::save" registers fine under namespace "my-app::".`, ns, reason)
}

// Register handles code-runner::register_function (docs/behaviour.md#register-validation-order).
func (n *Namespaces) Register(ctx context.Context, call *Call) (any, error) {
	req := call.Request.(*RegisterRequest)
	noteCall(ctx, req.Lang, ModeNamespace)
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"request_format", req.RequestFormat}, {"response_format", req.ResponseFormat}} {
		if f.raw != nil {
			if err := CheckFormat(f.name, f.raw); err != nil {
				return nil, err
			}
		}
	}
	if l := len(req.FunctionID); l > limits.MaxFunctionIDBytes {
		prefix := req.FunctionID
		if utf8.RuneCountInString(prefix) > 40 {
			prefix = string([]rune(prefix)[:40])
		}
		return nil, Errorf(CodeInvalidRequest, "%s", limits.OverLimit(fmt.Sprintf("function id %q…", prefix), l, limits.MaxFunctionIDBytes))
	}
	if req.Description != nil && len(*req.Description) > limits.MaxDescriptionBytes {
		return nil, Errorf(CodeInvalidRequest, "%s", limits.OverLimit("description", len(*req.Description), limits.MaxDescriptionBytes))
	}
	if len(req.Source) > limits.MaxCodeBytes {
		return nil, Errorf(CodeInvalidRequest, "%s", limits.OverMax("source", len(req.Source), limits.MaxCodeBytes))
	}
	seg, _, found := strings.Cut(req.FunctionID, "::")
	if !found || seg == "" {
		return nil, Errorf(CodeInvalidRequest, `function id %q has no namespace; pass something like "my-app::greet"`, req.FunctionID)
	}
	if err := CheckNamespaceSegment(seg); err != nil {
		return nil, err
	}
	ns := seg + "::"
	if ns == "code-runner::" {
		return nil, Errorf(CodeInvalidRequest, `namespace "code-runner::" is reserved for the worker itself; pick your own namespace`)
	}
	if err := CheckOwnID(WhatFunction, req.FunctionID); err != nil {
		return nil, err
	}
	replay := restoring(ctx) != nil
	if target, err := n.namespaceTarget(ctx, call, FnRegisterFunction, ns); err != nil {
		return nil, err
	} else if target != "" {
		if replay {
			return nil, ErrServedElsewhere
		}
		return n.forwardRegister(ctx, call, target, namespaceGone(ns))
	}
	eng, err := n.Run.engine(req.Lang)
	if err != nil {
		return nil, err
	}
	release, target, err := n.claim(ctx, ns)
	if err != nil {
		return nil, err
	} else if target != "" {
		if replay {
			return nil, ErrServedElsewhere
		}
		return n.forwardRegister(ctx, call, target, namespaceGone(ns))
	}
	defer release()
	owner := string(req.Lang) + ":" + ns
	if n.Registry.FunctionOwner(req.FunctionID) == "" {
		if err := CheckNotServedElsewhere(ctx, n.Owners, WhatFunction, req.FunctionID); err != nil {
			return nil, err
		}
	}
	if err := n.Registry.ClaimFunction(req.FunctionID, owner); err != nil {
		return nil, Errorf(CodeInvalidRequest, "function id %q is already taken", req.FunctionID)
	}
	key := nsKey{ns: ns, lang: req.Lang}
	nr, created, err := n.getOrCreate(ctx, key, eng, call, req.Source)
	if err != nil {
		n.releaseIfUnused(req.FunctionID, owner, nil)
		// No slot for a namespace new to the group: the least-loaded
		// other worker gets one try.
		if ce := AsError(err, call.FunctionID); ce.Code == CodeCapacity && !replay && !n.servesNamespace(ns) {
			if target := n.Run.spreadTarget(ctx, call, FnRegisterFunction); target != "" {
				release() // the other worker claims it for itself
				return n.forwardRegister(ctx, call, target, ce)
			}
		}
		return nil, err
	}
	nr.mu.Lock()
	defer nr.mu.Unlock()
	if nr.gone {
		n.Registry.ReleaseFunction(req.FunctionID, owner)
		return nil, Errorf(CodeEngine, "namespace %q was torn down while this registration was in flight", ns)
	}
	definer, ok := nr.rt.(Definer)
	if !ok {
		n.releaseIfUnused(req.FunctionID, owner, nr)
		return nil, Errorf(CodeEngine, "registration failed: the %s engine cannot host register_function handlers", req.Lang)
	}
	// The record first (contract §26.1): a function the store cannot keep
	// is not published.
	commit, undo, err := n.keepRecord(ctx, req, ns)
	if err != nil {
		if !nr.ids[req.FunctionID] {
			n.Registry.ReleaseFunction(req.FunctionID, owner)
		}
		if created && len(nr.ids) == 0 {
			n.remove(nr)
		}
		return nil, err
	}
	// The definition run's guest calls go through this call's bridge
	// (RegisterStages), under its configuration.
	dctx, cancel := context.WithTimeout(WithBridge(ctx, call.Bridge), RunBudget(0, call.Config))
	defer cancel()
	err = definer.Define(dctx, Definition{FunctionID: req.FunctionID, Source: req.Source, Description: req.Description,
		RequestFormat: req.RequestFormat, ResponseFormat: req.ResponseFormat})
	if err != nil {
		undo()
		if !nr.ids[req.FunctionID] {
			n.Registry.ReleaseFunction(req.FunctionID, owner)
		}
		if created && len(nr.ids) == 0 || !nr.rt.Alive() {
			n.remove(nr)
		}
		return nil, err
	}
	commit()
	nr.ids[req.FunctionID] = true
	nr.touched = n.now()
	return &RegisterResponse{FunctionID: req.FunctionID, Registered: true}, nil
}

// forwardRegister registers call's function on another worker's
// per-worker register_function id (target); gone is the answer when that
// worker left.
func (n *Namespaces) forwardRegister(ctx context.Context, call *Call, target string, gone *Error) (any, error) {
	out, err := forwardAs[RegisterResponse](ctx, n.Run, call, target, gone, "the worker serving this namespace answered something that is not a registration response; retry")
	if err != nil {
		return nil, err // a nil any, not a nil *RegisterResponse
	}
	return out, nil
}

// servesNamespace reports whether this worker has a runtime for ns in
// either language.
func (n *Namespaces) servesNamespace(ns string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.servesLocked(ns)
}

// servesLocked is servesNamespace with n.mu held.
func (n *Namespaces) servesLocked(ns string) bool {
	for lang := range n.Engines {
		if _, ok := n.live[nsKey{ns: ns, lang: lang}]; ok {
			return true
		}
	}
	return false
}

func (n *Namespaces) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

func (n *Namespaces) releaseIfUnused(id, owner string, nr *nsRuntime) {
	if nr != nil && nr.ids[id] {
		return
	}
	n.Registry.ReleaseFunction(id, owner)
}

func (n *Namespaces) getOrCreate(ctx context.Context, key nsKey, eng Engine, call *Call, source string) (*nsRuntime, bool, error) {
	n.mu.Lock()
	if n.live == nil {
		n.live = map[nsKey]*nsRuntime{}
	}
	if nr, ok := n.live[key]; ok && nr.rt.Alive() {
		n.mu.Unlock()
		return nr, false, nil
	} else if ok {
		delete(n.live, key)
		n.mu.Unlock()
		n.destroy(nr)
		n.mu.Lock()
	}
	n.mu.Unlock()
	slot, err := n.Registry.AcquireSlot(call.Config.MaxRuntimes)
	if err != nil {
		return nil, false, err
	}
	rt, err := eng.NewRuntime(ctx, RuntimeOptions{Namespace: key.ns, Config: call.Config, Code: source})
	if err != nil {
		slot.Release()
		return nil, false, AsError(err, call.FunctionID)
	}
	nr := &nsRuntime{key: key, rt: rt, slot: slot, ids: map[string]bool{}, touched: n.now()}
	n.mu.Lock()
	if other, ok := n.live[key]; ok && other.rt.Alive() {
		// Another registration created it first; use that one.
		n.mu.Unlock()
		rt.Destroy()
		slot.Release()
		return other, false, nil
	}
	n.live[key] = nr
	n.mu.Unlock()
	if m, ok := rt.(Mortal); ok {
		m.OnDeath(func() { n.remove(nr) })
	}
	return nr, true, nil
}

// remove forgets and destroys a namespace runtime.
func (n *Namespaces) remove(nr *nsRuntime) []string {
	n.mu.Lock()
	if cur, ok := n.live[nr.key]; ok && cur == nr {
		delete(n.live, nr.key)
	}
	n.mu.Unlock()
	return n.destroy(nr)
}

func (n *Namespaces) destroy(nr *nsRuntime) []string {
	nr.gone = true
	ids := nr.rt.Destroy()
	owner := string(nr.key.lang) + ":" + nr.key.ns
	for id := range nr.ids {
		n.Registry.ReleaseFunction(id, owner)
	}
	nr.slot.Release()
	n.settleClaim(nr.key.ns)
	return ids
}

// Teardown handles code-runner::teardown (docs/behaviour.md#teardown).
func (n *Namespaces) Teardown(ctx context.Context, call *Call) (any, error) {
	req := call.Request.(*TeardownRequest)
	switch {
	case req.RuntimeID != "" && req.Namespace != "":
		return nil, Errorf(CodeInvalidRequest, "pass exactly one of runtime_id or namespace, not both: runtime_id tears down a single kept run's runtime, namespace tears down every runtime backing a register_function namespace")
	case req.RuntimeID == "" && req.Namespace == "":
		return nil, Errorf(CodeInvalidRequest, `pass exactly one of runtime_id (a kept run's runtime) or namespace (a register_function namespace, e.g. "app" for ids like app::greet)`)
	case req.RuntimeID != "":
		if target := n.Run.forwardFor(call, FnTeardown, req.RuntimeID); target != "" {
			res, err := n.Run.forward(ctx, call, target, req.RuntimeID, teardownForwardBudget)
			if err != nil {
				return nil, err
			}
			var out TeardownResponse
			if err := json.Unmarshal(res, &out); err != nil {
				return nil, &Error{Code: CodeEngine, Text: "the worker that holds this runtime answered something that is not a teardown response; retry", Cause: err}
			}
			return &out, nil
		}
		return n.Run.TeardownRuntime(ctx, req.RuntimeID)
	}
	seg := strings.TrimRight(req.Namespace, ":")
	if err := CheckNamespaceSegment(seg); err != nil {
		return nil, err
	}
	ns := seg + "::"
	if target, err := n.namespaceTarget(ctx, call, FnTeardown, ns); err != nil {
		return nil, err
	} else if target != "" {
		res, err := n.Run.forwardTo(ctx, call, target, teardownForwardBudget, namespaceGone(ns))
		if err != nil {
			return nil, err
		}
		var out TeardownResponse
		if err := json.Unmarshal(res, &out); err != nil {
			return nil, &Error{Code: CodeEngine, Text: "the worker serving this namespace answered something that is not a teardown response; retry", Cause: err}
		}
		return &out, nil
	}
	var victims []*nsRuntime
	n.mu.Lock()
	for lang := range n.Engines {
		if nr, ok := n.live[nsKey{ns: ns, lang: lang}]; ok {
			delete(n.live, nr.key)
			victims = append(victims, nr)
		}
	}
	n.mu.Unlock()
	if len(victims) == 0 {
		// Records no worker restored (their replay failed, or none has
		// run yet) end with the namespace all the same.
		if n.dropRecords(ctx, ns, "") {
			return &TeardownResponse{Namespace: ns, TornDown: true, Unregistered: []string{}}, nil
		}
		return nil, Errorf(CodeRuntimeNotFound, `no runtime is registered for namespace %q; register a function in it first, or pass a runtime_id instead`, ns)
	}
	set := map[string]bool{}
	for _, nr := range victims {
		nr.mu.Lock()
		for _, id := range n.destroy(nr) {
			set[id] = true
		}
		nr.mu.Unlock()
	}
	ids := make([]string, 0, len(set))
	for id := range set {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	n.dropRecords(ctx, ns, "") // before the answer: nothing torn down comes back
	return &TeardownResponse{Namespace: ns, TornDown: true, Unregistered: ids}, nil
}

// ReapIdle destroys namespace runtimes idle longer than ttl, except those
// of engines that pin them (NamespacePinner: python's,
// docs/behaviour.md#register-namespace-lifetime).
// It returns how many it reaped.
func (n *Namespaces) ReapIdle(ttl time.Duration) int {
	now := n.now()
	var victims []*nsRuntime
	n.mu.Lock()
	for k, nr := range n.live {
		if p, ok := n.Engines[k.lang].(NamespacePinner); ok && p.PinsNamespaces() {
			continue
		}
		idle := now.Sub(nr.touched)
		if t, ok := nr.rt.(interface{ LastActive() time.Time }); ok {
			if la := t.LastActive(); la.After(nr.touched) {
				idle = now.Sub(la)
			}
		}
		if idle >= ttl && nr.mu.TryLock() {
			delete(n.live, k)
			victims = append(victims, nr)
		}
	}
	n.mu.Unlock()
	for _, nr := range victims {
		n.destroy(nr)
		// Reaping is the namespace runtime's end of life (§13.8): its
		// records go with it.
		n.dropRecords(context.Background(), nr.key.ns, nr.key.lang)
		nr.mu.Unlock()
	}
	return len(victims)
}

// CountLang returns how many namespace runtimes of lang are live.
func (n *Namespaces) CountLang(lang Lang) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for k := range n.live {
		if k.lang == lang {
			c++
		}
	}
	return c
}

// DestroyAll destroys every namespace runtime (worker shutdown).
func (n *Namespaces) DestroyAll() {
	n.mu.Lock()
	victims := make([]*nsRuntime, 0, len(n.live))
	for k, nr := range n.live {
		delete(n.live, k)
		victims = append(victims, nr)
	}
	n.mu.Unlock()
	for _, nr := range victims {
		n.destroy(nr)
	}
}

// Routes returns the routes of the three code functions — run,
// register_function and teardown — each with its decoder and its pipeline
// of stages (docs/behaviour.md#run-lifecycle, #register-validation-order, #teardown).
func Routes(run *RunService, ns *Namespaces) map[string]Route {
	return map[string]Route{
		FnRun:              {Decode: run.DecodeRunCall, Terminal: run.Handle, Stages: RunStages()},
		FnRegisterFunction: {Decode: ns.DecodeRegisterCall, Terminal: ns.Register, Stages: RegisterStages()},
		// No redaction: a namespace teardown's not-found quotes no id, and a
		// runtime-id teardown comes from a caller that holds the id.
		FnTeardown: {Decode: DecodeTeardownCall, Terminal: ns.Teardown},
	}
}
