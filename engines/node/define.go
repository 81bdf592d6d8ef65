package node

import (
	"context"
	"encoding/json"
	"regexp"
	"time"

	"github.com/code-runner-go/code-runner/core"
)

// leadingExport matches an `export` keyword that is the first token,
// followed by whitespace, and not `export default` (contract §13.5).
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
// publishes its handler (contract §13.5).
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
	optsJSON, _ := json.Marshal(opts)
	d, err := r.exec(ctx, &msg{T: "define", Code: stripExport(def.Source), FunctionID: def.FunctionID, Payload: optsJSON})
	if err != nil {
		return err
	}
	switch d.Status {
	case statusOK:
		return nil
	case "parse":
		return core.Errorf(core.CodeInvalidRequest, `handler for %s does not parse: %s. Source must define handler(payload) — write, for example, "export function handler(p) { ... }" or "const handler = (p) => { ... }".`, def.FunctionID, d.Error)
	case "threw", statusError:
		return core.Errorf(core.CodeInvalidRequest, "handler for %s threw while being defined: %s", def.FunctionID, d.Error)
	case statusQuota:
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
