package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
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

// teardownForwardBudget bounds a forwarded call whose route has no budget
// of its own (teardown, register_function) and whose context no deadline.
const teardownForwardBudget = 30 * time.Second

// forwardMargin is what a forwarded call may take beyond its budget: the
// hop to the other worker and back.
const forwardMargin = 2 * time.Second

// TagLen is the length of a routing tag: four lowercase hex digits.
const TagLen = 4

// TagOf is a worker's routing tag: the first TagLen hex digits of the
// SHA-256 of its name.
func TagOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])[:TagLen]
}

// NewTaggedRuntimeID mints "rt-" + a lowercase UUID v4 whose first TagLen
// hex digits are tag ("" = no tag: all random).
func NewTaggedRuntimeID(tag string) string {
	id := uuid.Must(uuid.NewRandom()).String()
	if len(tag) == TagLen {
		id = tag + id[TagLen:]
	}
	return "rt-" + id
}

// runtimeIDForm is a runtime id as minted: "rt-" + a lowercase UUID v4.
var runtimeIDForm = regexp.MustCompile(`^rt-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// RuntimeTag is the routing tag of a runtime id: "" for anything that is
// not an id as minted (such an id is no runtime anywhere).
func RuntimeTag(id string) string {
	if !runtimeIDForm.MatchString(id) {
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
	return s.forwardTo(ctx, call, target, budget, s.goneAnswer(id))
}

// goneAnswer is the answer for runtime id when its worker serves nothing
// any more: expired, or runtime_not_found when no worker with its tag was
// ever seen (it was never issued).
func (s *RunService) goneAnswer(id string) *Error {
	if s.PeerSeen != nil && !s.PeerSeen(RuntimeTag(id)) {
		return ErrUnknownRuntime(id)
	}
	return ErrExpired(id)
}

// forwardTo sends call's payload to target within what is left of ctx's
// budget (budget when ctx has no deadline); gone is the answer when target
// is served by no worker any more.
func (s *RunService) forwardTo(ctx context.Context, call *Call, target string, budget time.Duration, gone *Error) (json.RawMessage, error) {
	if budget <= 0 {
		budget = teardownForwardBudget // a route without a budget of its own
	}
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	if budget <= 0 {
		return nil, ErrTimeout()
	}
	// The other worker's own clamp ends the run within budget; the margin
	// is the hop's, so a run that ends just in time is answered as it ended.
	res, err := s.Forward.Forward(ctx, target, call.Payload, budget+forwardMargin)
	if err == nil {
		return res, nil
	}
	var re *RemoteError
	if errors.As(err, &re) {
		switch {
		case re.Code == "function_not_found":
			return nil, gone
		case strings.HasPrefix(re.Code, "code-runner::"):
			return nil, &Error{Code: Code(re.Code), Text: strings.TrimPrefix(re.Message, re.Code+": ")}
		case re.Code == "TIMEOUT":
			// The hop timed out, not a guest: no kill here (the other
			// worker counts its own).
			return nil, &Error{Code: CodeTimeout, Text: ErrTimeout().Text}
		}
	}
	return nil, &Error{Code: CodeEngine, Text: "the worker that holds this runtime did not answer; retry", Cause: err}
}

// NamespaceTag returns the routing tag of the other code-runner worker
// that serves functions under ns ("" when none does, or when the worker
// serving them is not a code-runner: the publishing rules refuse its ids).
// A worker is a code-runner when it serves code-runner::run@<its tag>.
func (o *EngineOwners) NamespaceTag(ctx context.Context, ns string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ownerQueryTimeout)
	defer cancel()
	rows, err := o.functions(ctx, ns)
	if err != nil {
		return "", err
	}
	for _, f := range rows {
		if !strings.HasPrefix(f.FunctionID, ns) || f.WorkerName == "" || f.WorkerName == o.Self {
			continue
		}
		tag := TagOf(f.WorkerName)
		target := WorkerID(FnRegisterFunction, tag)
		peer, err := o.functions(ctx, target)
		if err != nil {
			return "", err
		}
		for _, p := range peer {
			if p.FunctionID == target && p.WorkerName == f.WorkerName {
				return tag, nil
			}
		}
		return "", nil
	}
	return "", nil
}

// NamespaceLocator finds the code-runner worker that serves a
// register_function namespace (EngineOwners implements it).
type NamespaceLocator interface {
	NamespaceTag(ctx context.Context, ns string) (string, error)
}

// namespaceTarget reports the per-worker id of shared (register_function
// or teardown) on the worker that already serves namespace ns, or "" when
// this worker serves the call: no locator, a call that arrived on a
// per-worker id, a namespace this worker has, or one nobody else serves.
func (n *Namespaces) namespaceTarget(ctx context.Context, call *Call, shared, ns string) (string, error) {
	if n.Locate == nil || n.Run.Forward == nil || call.FunctionID != shared {
		return "", nil
	}
	if n.servesNamespace(ns) {
		return "", nil
	}
	tag, err := n.Locate.NamespaceTag(ctx, ns)
	if err != nil {
		return "", &Error{Code: CodeEngine, Text: fmt.Sprintf("could not ask the engine which worker serves namespace %q; retry", ns), Cause: err}
	}
	if tag == "" || tag == n.Registry.Tag {
		return "", nil
	}
	return WorkerID(shared, tag), nil
}

// namespaceGone answers a forward to a namespace's worker that left
// meanwhile.
func namespaceGone(ns string) *Error {
	return Errorf(CodeEngine, "the worker serving namespace %q left while this call was forwarded to it; retry", ns)
}

// Spreader names the other code-runner workers new work may go to when
// this one has no free slot (contract §24.3: new runtimes go to a worker
// with free slots).
type Spreader interface {
	// Peers returns the routing tags of the other live code-runner
	// workers, least loaded first.
	Peers(ctx context.Context) ([]string, error)
}

// spreadTarget reports the per-worker id of shared on the least-loaded
// other worker, for new work this worker has no slot for; "" keeps the
// capacity answer here: no spreader, a call that arrived on a per-worker
// id (it was spread once already, or its caller chose this worker), or no
// other worker.
func (s *RunService) spreadTarget(ctx context.Context, call *Call, shared string) string {
	if s.Spread == nil || s.Forward == nil || call.FunctionID != shared {
		return ""
	}
	tags, err := s.Spread.Peers(ctx)
	if err != nil {
		if s.Log != nil {
			s.Log.Warn("could not ask the engine for a worker with a free slot; answering capacity", "err", err)
		}
		return ""
	}
	for _, tag := range tags {
		if tag != s.Registry.Tag {
			return WorkerID(shared, tag)
		}
	}
	return ""
}
