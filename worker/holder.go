package worker

import (
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/ui"
)

// holderBindings are the trigger bindings a group of workers keeps once
// (contract §24.4): the harness pre_generate hook and one console trigger
// per UI asset. Only the worker holding the shared ids binds them; it
// drops them when another worker holds the ids, and the next holder binds
// them when it leaves (its bindings leave with its connection).
//
// For a moment around a change of holder both may be bound: the guidance
// stage is idempotent (guidance.Apply), and the console fetches an asset
// twice at worst.
type holderBindings struct {
	client *iii.Client
	log    *slog.Logger

	mu     sync.Mutex
	bound  bool
	hook   string
	assets map[string]string // asset path → trigger id
}

// hold binds (holding) or unbinds (!holding) the holder's triggers; a
// call that changes nothing does nothing.
func (h *holderBindings) hold(holding bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if holding == h.bound {
		return
	}
	h.bound = holding
	if !holding {
		h.client.UnregisterTrigger(h.hook)
		for _, id := range h.assets {
			h.client.UnregisterTrigger(id)
		}
		h.hook, h.assets = "", nil
		h.log.Info("another worker holds the shared ids: the pre_generate hook and console triggers are its to bind")
		return
	}
	h.hook = h.client.RegisterTrigger(iii.Trigger{TriggerType: preGenerateHook, FunctionID: core.FnInjectGuidance, Config: json.RawMessage(`{"on_error":"fail_open"}`)})
	h.assets = map[string]string{}
	for _, a := range ui.Assets {
		h.assets[a.Path] = h.bindAsset(a)
	}
}

// bindAsset registers one console trigger for a.
func (h *holderBindings) bindAsset(a ui.Asset) string {
	cfg, _ := json.Marshal(map[string]string{"path": a.Path})
	return h.client.RegisterTrigger(iii.Trigger{TriggerType: a.TriggerType, FunctionID: core.FnUIContent, Config: cfg})
}

// rebind registers a fresh console trigger for a, then unregisters the
// previous one, so the console fetches the new bytes (ui.Watch). A worker
// that does not hold the shared ids has nothing to rebind.
func (h *holderBindings) rebind(a ui.Asset) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.bound {
		return
	}
	old := h.assets[a.Path]
	h.assets[a.Path] = h.bindAsset(a)
	if old != "" {
		h.client.UnregisterTrigger(old)
	}
}
