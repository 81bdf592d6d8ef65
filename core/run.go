package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/limits"
	"log/slog"
	"sort"
	"time"
)

// RunService is the terminal handler of code-runner::run: routing and
// validation in the order of docs/behaviour.md#run-validation-order, and the
// lifecycle of docs/behaviour.md#run-lifecycle.
type RunService struct {
	Registry *Registry
	// Engines must not change once the service serves.
	Engines map[Lang]Engine
	Log     *slog.Logger
	// Forward, when set, reaches other workers: a call on the shared run
	// or teardown id for a runtime another worker minted goes there
	// (route.go). Nil: every runtime id is this worker's.
	Forward Forwarder
	// PeerSeen reports whether a worker with the routing tag was ever seen
	// on the engine: a forward that finds no worker answers expired for a
	// worker that left, runtime_not_found for one never seen (nil: always
	// expired).
	PeerSeen func(tag string) bool
	// Spread, when set, names the other workers a new run goes to when
	// this one has no free slot (route.go); nil: capacity is answered here.
	Spread Spreader

	langs langList
}

// DecodeRunCall is the Decoder of the run route.
func (s *RunService) DecodeRunCall(call *Call) error {
	req, err := DecodeRun(call.Payload, s.langs.of(s.Engines))
	if err != nil {
		return err
	}
	call.Request = req
	call.Held = req.RuntimeID
	call.TimeoutMS = req.TimeoutMS
	return nil
}

// Handle runs call (whose Request is a *RunRequest) and returns a
// *RunResponse.
func (s *RunService) Handle(ctx context.Context, call *Call) (any, error) {
	req := call.Request.(*RunRequest)
	if req.MemoryMB != nil && req.RuntimeID != "" {
		return nil, Errorf(CodeInvalidRequest, "`memory_mb` is fixed when a runtime is created; omit it when passing `runtime_id`")
	}
	if req.RuntimeID != "" {
		if target := s.forwardFor(call, FnRun, req.RuntimeID); target != "" {
			return s.forwardRun(ctx, call, target, s.goneAnswer(req.RuntimeID))
		}
		k, state := s.Registry.Lookup(req.RuntimeID)
		switch state {
		case StateTombstoned:
			return nil, ErrExpired(req.RuntimeID)
		case StateUnknown:
			return nil, ErrUnknownRuntime(req.RuntimeID)
		}
		if req.Lang != "" && req.Lang != k.Lang {
			return nil, Errorf(CodeInvalidRequest, "this runtime runs %s; omit `lang` or pass the matching one — languages cannot be mixed in one runtime", k.Lang)
		}
		noteCall(ctx, k.Lang, ModeKept)
		if err := checkCodeSize(req.Code); err != nil {
			return nil, err
		}
		return s.runKept(ctx, call, req, k)
	}
	if req.Lang == "" {
		return nil, Errorf(CodeInvalidRequest, "`lang` is required when there is no `runtime_id`: %s", langField(s.langs.of(s.Engines)).expected())
	}
	if req.Keep {
		noteCall(ctx, req.Lang, ModeKept)
	} else {
		noteCall(ctx, req.Lang, ModeOneShot)
	}
	if err := checkCodeSize(req.Code); err != nil {
		return nil, err
	}
	eng, err := s.engine(req.Lang)
	if err != nil {
		return nil, err
	}
	slot, err := s.Registry.AcquireSlot(call.Config.MaxRuntimes)
	if err != nil {
		// Full here: the least-loaded other worker gets one try; its
		// capacity answer means the group is full.
		if target := s.spreadTarget(ctx, call, FnRun); target != "" {
			return s.forwardRun(ctx, call, target, AsError(err, call.FunctionID))
		}
		return nil, err
	}
	var mem uint32
	if req.MemoryMB != nil {
		mem = *req.MemoryMB
	}
	rt, err := eng.NewRuntime(ctx, RuntimeOptions{MemoryMB: mem, Namespace: NewRunNamespace(), Config: call.Config, OneShot: !req.Keep, Budget: call.Budget, Code: req.Code})
	if err != nil {
		slot.Release()
		return nil, AsError(err, call.FunctionID)
	}
	runCtx, cancel := context.WithTimeout(ctx, call.Budget)
	defer cancel()
	out, runErr := rt.Run(runCtx, Exec{Code: req.Code, Bridge: call.Bridge, MaxResultBytes: call.Config.MaxResultBytes})
	if runErr == nil && req.Keep && out.ExitCode == 0 {
		k := s.Registry.Adopt(req.Lang, rt, slot)
		if m, ok := rt.(Mortal); ok {
			// A kept runtime that dies between calls (a guest handler's
			// timeout, a crashed host) is tombstoned like a killed one.
			m.OnDeath(func() {
				if s.Registry.Forget(k, true) {
					rt.Destroy()
				}
			})
		}
		// Checked after the death hook is in place: a runtime that died at
		// the end of its run (or while being adopted) is never answered as
		// kept — the caller gets the error, not an id that is already dead.
		if !rt.Alive() {
			if s.Registry.Forget(k, false) {
				rt.Destroy()
			}
			return nil, ErrLostMidRun()
		}
		return response(call, out, k.ID), nil
	}
	rt.Destroy()
	slot.Release()
	if runErr != nil {
		return nil, runErr
	}
	return response(call, out, ""), nil
}

// forwardRun runs call on another worker's per-worker run id (target);
// gone is the answer when that worker left.
func (s *RunService) forwardRun(ctx context.Context, call *Call, target string, gone *Error) (any, error) {
	out, err := forwardAs[RunResponse](ctx, s, call, target, gone, "the worker that ran this call answered something that is not a run response; retry")
	if err != nil {
		return nil, err // a nil any, not a nil *RunResponse
	}
	return out, nil
}

// forwardAs forwards call to target (forwardTo) and decodes the answer as
// a T; unreadable is the error text for an answer that is not one.
func forwardAs[T any](ctx context.Context, s *RunService, call *Call, target string, gone *Error, unreadable string) (*T, error) {
	res, err := s.forwardTo(ctx, call, target, call.Budget, gone)
	if err != nil {
		return nil, err
	}
	out := new(T)
	if err := json.Unmarshal(res, out); err != nil {
		return nil, &Error{Code: CodeEngine, Text: unreadable, Cause: err}
	}
	return out, nil
}

func (s *RunService) runKept(ctx context.Context, call *Call, req *RunRequest, k *Kept) (any, error) {
	// The deadline is armed when the call starts waiting for the runtime.
	runCtx, cancel := context.WithTimeout(ctx, call.Budget)
	defer cancel()
	if !k.Acquire(runCtx) {
		return nil, ErrTimeout()
	}
	out, runErr := k.Runtime.Run(runCtx, Exec{Code: req.Code, Bridge: call.Bridge, MaxResultBytes: call.Config.MaxResultBytes})
	alive := k.Runtime.Alive()
	k.Release()
	if !alive {
		if s.Registry.Forget(k, true) {
			k.Runtime.Destroy()
		}
	}
	if runErr != nil {
		var ce *Error
		if errors.As(runErr, &ce) && ce.Code == CodeExpired {
			if _, st := s.Registry.Lookup(k.ID); st != StateTombstoned {
				return nil, ErrUnknownRuntime(k.ID) // torn down while this call waited
			}
			return nil, ErrExpired(k.ID)
		}
		return nil, runErr
	}
	return response(call, out, k.ID), nil
}

func (s *RunService) engine(lang Lang) (Engine, error) {
	eng, ok := s.Engines[lang]
	if !ok {
		return nil, Errorf(CodeEngine, "the %s engine is not available on this worker", lang)
	}
	if err := eng.Available(); err != nil {
		if u, ok := eng.(Unavailability); ok {
			return nil, u.Unavailable(err)
		}
		return nil, &Error{Code: CodeEngine, Text: fmt.Sprintf("the %s engine is not available on this worker; check its boot logs", lang), Cause: err}
	}
	return eng, nil
}

func checkCodeSize(code string) error {
	if len(code) > limits.MaxCodeBytes {
		return Errorf(CodeInvalidRequest, "%s", limits.OverMax("code", len(code), limits.MaxCodeBytes))
	}
	return nil
}

func response(call *Call, out Outcome, runtimeID string) *RunResponse {
	d := time.Since(call.Received)
	return &RunResponse{
		RuntimeID:  runtimeID,
		Stdout:     out.Stdout,
		Stderr:     out.Stderr,
		ExitCode:   out.ExitCode,
		Success:    out.ExitCode == 0,
		DurationMS: uint64(d / time.Millisecond),
		Result:     out.Result,
		omitted:    out.ResultOmitted,
	}
}

// TeardownRuntime destroys a kept runtime addressed by id
// (docs/behaviour.md#teardown): it waits for an in-flight call (bounded by that call's own deadline),
// then forgets the id without a tombstone and destroys the runtime,
// reporting the function ids it unregistered, sorted.
func (s *RunService) TeardownRuntime(ctx context.Context, id string) (*TeardownResponse, error) {
	k, state := s.Registry.Lookup(id)
	switch state {
	case StateTombstoned:
		return nil, ErrExpired(id)
	case StateUnknown:
		return nil, ErrUnknownRuntime(id)
	}
	if !k.Acquire(ctx) {
		return nil, AsError(errors.New("teardown wait cancelled"), FnTeardown)
	}
	forgotten := s.Registry.Forget(k, false)
	k.Release()
	if !forgotten {
		// A kill tombstoned it while we waited.
		if _, st := s.Registry.Lookup(id); st == StateTombstoned {
			return nil, ErrExpired(id)
		}
		return nil, ErrUnknownRuntime(id)
	}
	ids := append([]string{}, k.Runtime.Destroy()...)
	sort.Strings(ids)
	return &TeardownResponse{RuntimeID: id, TornDown: true, Unregistered: ids}, nil
}
