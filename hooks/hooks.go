// Package hooks holds code-runner's hooks: the stage lists through which
// the agent harness (pre_generate) and the configuration (config_changed)
// reach the worker. Each hook is a named core.Route — a terminal and the
// stages in front of it — served under one or more function ids; the
// Router compiles its stages for each configuration snapshot, so a reload
// swaps a hook's stages live with everything else.
//
// A new hook is one file here (a function returning a Hook) and one line in
// the list of hooks in worker.NewApp.
package hooks

import "github.com/code-runner-go/code-runner/core"

// Hook is one named stage list and the function ids it is served under.
type Hook struct {
	// Name is the hook's name as the design card and the logs say it
	// (pre_generate, config_changed).
	Name string
	// IDs are the function ids the hook is routed under (none: the hook is
	// not served on this worker, as config_changed in local mode).
	IDs []string
	// Route is the hook's decoder, terminal and stages.
	Route core.Route
}

// Install routes h under each of its ids.
func (h Hook) Install(r *core.Router) {
	for _, id := range h.IDs {
		r.Handle(id, h.Route)
	}
}
