// Package worker connects code-runner's core to the iii bus: the six
// function definitions of docs/behaviour.md#functions-list (ids, descriptions, metadata and
// request/response schemas), publishing routed functions through the wire
// client in the order of docs/behaviour.md#functions-list, turning core errors into wire errors, and
// the core.Transport that guest calls travel through.
package worker

import (
	"embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/code-runner-go/code-runner/core"
)

//go:embed schemas/*.json
var schemaFS embed.FS

// Def is one of the worker's own function registrations.
type Def struct {
	ID             string
	Description    string
	Metadata       json.RawMessage // nil for the public functions
	RequestFormat  json.RawMessage
	ResponseFormat json.RawMessage
}

var descriptions = map[string]string{
	core.FnRun:              "Run code in a sandbox (no network, host filesystem or packages). One-shot by default: nothing persists and no runtime_id is returned. keep: true keeps the runtime and returns its runtime_id to reuse until code-runner::teardown or the idle TTL reaps it. A failing script is a response, not an error.",
	core.FnTeardown:         `Destroy a runtime: unregister its bus functions, kill it and free its slot. Pass exactly one of runtime_id (from a keep: true run) or namespace (a register_function namespace, e.g. "app" for app::greet).`,
	core.FnRegisterFunction: "Publish a bus function whose handler runs in a sandbox; no runtime_id needed. source must define handler(payload) in lang; each call runs it and returns its JSON result. The namespace (function_id before `::`) shares one runtime per lang; its functions stop resolving once torn down or idle-reaped.",
	core.FnInjectGuidance:   "Internal pre_generate hook: appends code-runner usage guidance to the agent system prompt. Bound to harness::hook::pre-generate at worker startup; not called directly. Silenced by inject_guidance: false in the code-runner configuration.",
	core.FnUIContent:        "Serve the code-runner worker's injected console UI assets (content function for its console:script / console:style triggers).",
	core.FnOnConfigChange:   "Internal: reload code-runner settings from the authoritative configuration on change. Every setting applies without a restart: output caps, timeouts and guidance on the next call; memory and scratch limits to runtimes created afterwards; runtime count, idle TTL and warm pools immediately.",
}

var schemaFiles = map[string]string{
	core.FnRun:              "run",
	core.FnTeardown:         "teardown",
	core.FnRegisterFunction: "register_function",
	core.FnInjectGuidance:   "inject-guidance",
	core.FnUIContent:        "ui-content",
	core.FnOnConfigChange:   "on-config-change",
}

// FnWorkersChanged is the base of each worker's own hook for the engine's
// engine::workers-available events (only its per-worker form,
// FnWorkersChanged + "@" + tag, is registered).
const FnWorkersChanged = "code-runner::workers-changed"

var internal = map[string]bool{core.FnInjectGuidance: true, core.FnUIContent: true, core.FnOnConfigChange: true}

// DefOf returns the definition of one of the six ids, of a per-worker id
// of one of them (core.WorkerID: internal, the same schemas), or of a
// worker's FnWorkersChanged hook; it panics for any other id (a
// programming error).
func DefOf(id string) Def {
	if base, tag, ok := strings.Cut(id, "@"); ok && base == FnWorkersChanged {
		return Def{ID: id, Description: "Internal: told by the engine (engine::workers-available) when a worker connects, leaves or reports itself, so the code-runner worker tagged " + tag + " checks at once who holds the shared ids (contract §24.3).",
			Metadata: json.RawMessage(`{"internal":true}`)}
	}
	if shared, tag, ok := strings.Cut(id, "@"); ok {
		d := DefOf(shared)
		d.ID = id
		d.Description = "Internal: " + shared + " served by the code-runner worker tagged " + tag + " alone (contract §24: the workers of a group forward to it what it holds, and its configuration trigger targets it)."
		d.Metadata = json.RawMessage(`{"internal":true}`)
		return d
	}
	base, ok := schemaFiles[id]
	if !ok {
		panic(fmt.Sprintf("worker: %s is not one of the worker's functions", id))
	}
	d := Def{ID: id, Description: descriptions[id], RequestFormat: mustSchema(base + ".request.json"), ResponseFormat: mustSchema(base + ".response.json")}
	if internal[id] {
		d.Metadata = json.RawMessage(`{"internal":true}`)
	}
	return d
}

func mustSchema(name string) json.RawMessage {
	b, err := schemaFS.ReadFile("schemas/" + name)
	if err != nil {
		panic(fmt.Sprintf("worker: schema %s: %v", name, err))
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		panic(fmt.Sprintf("worker: schema %s is not JSON: %v", name, err))
	}
	compact, _ := json.Marshal(v) // stable, key-sorted form
	return compact
}
