package node

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/core"
)

// leadingExport matches an `export` keyword that is the first token,
// followed by whitespace, and not `export default` (docs/behaviour.md#register-node-source).
var leadingExport = regexp.MustCompile(`^(\s*)export\s+`)
var exportDefault = regexp.MustCompile(`^\s*export\s+default\b`)

// stripExport removes one leading `export` keyword; nothing else is rewritten.
func stripExport(src string) string {
	if exportDefault.MatchString(src) {
		return src
	}
	if loc := leadingExport.FindStringSubmatchIndex(src); loc != nil {
		return src[:loc[3]] + src[loc[1]:]
	}
	return src
}

// Define runs a register_function source in this (namespace) isolate and
// publishes its handler (docs/behaviour.md#register-node-source).
func (r *runtime) Define(ctx context.Context, def core.Definition) error {
	opts := map[string]any{}
	if def.Description != nil {
		opts["description"] = *def.Description
	}
	if def.RequestFormat != nil {
		opts["request_format"] = json.RawMessage(def.RequestFormat)
	}
	if def.ResponseFormat != nil {
		opts["response_format"] = json.RawMessage(def.ResponseFormat)
	}
	optsJSON, _ := jsonx.Marshal(opts)
	d, err := r.exec(ctx, &hostproto.Msg{T: "define", Code: stripExport(def.Source), FunctionID: def.FunctionID, Payload: optsJSON})
	if err != nil {
		return err
	}
	switch d.Status {
	case hostproto.StatusOK:
		r.remember(def)
		return nil
	case hostproto.StatusParse:
		return core.Errorf(core.CodeInvalidRequest, `handler for %s does not parse: %s. Source must define handler(payload) — write, for example, "export function handler(p) { ... }" or "const handler = (p) => { ... }".`, def.FunctionID, d.Error)
	case hostproto.StatusThrew, hostproto.StatusError:
		return core.Errorf(core.CodeInvalidRequest, "handler for %s threw while being defined: %s", def.FunctionID, d.Error)
	case hostproto.StatusQuota:
		return core.Errorf(core.CodeResourceExhausted, "%s", d.Error)
	}
	return core.Errorf(core.CodeInvalidRequest, "%s", d.Error)
}

// LastActive is when a call last started or ended in this runtime.
func (r *runtime) LastActive() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastActive
}

// remember records a successful definition for replay: the latest source
// of an id, at its latest position.
func (r *runtime) remember(def core.Definition) {
	if !r.isNamespaceRuntime() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.sources[:0]
	for _, s := range r.sources {
		if s.def.FunctionID != def.FunctionID {
			kept = append(kept, s)
		}
	}
	r.sources = append(kept, nodeSource{def: def})
	delete(r.broken, def.FunctionID)
}

// restart gives a namespace runtime whose host died a fresh host on the
// same scratch directory and replays its registration sources in order,
// each under default_timeout_ms; a source that fails leaves its id broken
// (handler_error) until it is registered again (docs/behaviour.md#register-namespace-lifetime).
func (r *runtime) restart(ctx context.Context) error {
	r.restartMu.Lock()
	defer r.restartMu.Unlock()
	if !r.host().dead() {
		return nil
	}
	cfg := r.e.config()
	p, err := r.e.spawn(ctx, r.heapMB, r.filesCfg != nil, r.e.kinds.rich())
	if err != nil {
		if ctx.Err() != nil {
			return core.ErrTimeout() // the call's budget ran out before a host was up
		}
		return core.AsError(err, core.FnRegisterFunction)
	}
	p.mu.Lock()
	p.onCall, p.onLog, p.onExit = func(m *hostproto.Msg) { r.handleCall(p, m) }, r.detachedLog, r.hostExited
	p.mu.Unlock()
	if err := p.send(r.bindMsg()); err != nil {
		p.kill("destroy")
		return core.AsError(err, core.FnRegisterFunction)
	}
	r.mu.Lock()
	r.p = p
	srcs := append([]nodeSource(nil), r.sources...)
	r.mu.Unlock()
	for _, s := range srcs {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RunBudget(0, cfg))
		err := r.Define(dctx, s.def)
		cancel()
		if err != nil {
			r.e.log.WarnContext(ctx, "a registration source failed to replay after its isolate restarted", "namespace", r.namespace)
			r.mu.Lock()
			r.broken[s.def.FunctionID] = strings.TrimPrefix(err.Error(), "code-runner::invalid_request: ")
			r.mu.Unlock()
			if r.host().dead() {
				return nil // died again while replaying; the next use tries again
			}
		}
	}
	return nil
}
