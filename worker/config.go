package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/configsvc/sources"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/guidance"
)

// preGenerate is the pre_generate hook: the stage list of the
// code-runner::inject-guidance pipeline, rebuilt with every other chain on
// a reload. A stage either answers the turn or passes it on; the terminal,
// noGuidance, answers "no change".
func preGenerate() []core.Stage { return []core.Stage{guidanceStage} }

// guidanceStage appends the usage guidance to the agent's system prompt
// when the call's configuration enables it. Decoding is lenient: anything
// undecodable is an empty prompt, which passes on.
func guidanceStage(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		if !call.Config.InjectGuidance {
			return next(ctx, call)
		}
		var ev struct {
			Generate struct {
				SystemPrompt string `json:"system_prompt"`
			} `json:"generate"`
		}
		_ = json.Unmarshal(call.Payload, &ev)
		if ev.Generate.SystemPrompt == "" {
			return next(ctx, call)
		}
		return guidance.Apply(ev.Generate.SystemPrompt), nil
	}
}

// noGuidance is the inject-guidance terminal: the turn goes on unchanged.
func noGuidance(context.Context, *core.Call) (any, error) { return guidance.Response{}, nil }

// ApplyConfig makes cfg live in Caddy's order: every route's chain is
// built for the new snapshot and swapped in with one pointer, then the
// engines' live view is published, then each component is reconfigured.
// When a component fails, all of it goes back to the previous
// configuration (a bad edit never half-applies) and the error is returned.
// On success one INFO line names every changed key, old → new, and what it
// affects. The lines are written under ctx: inside an on-config-change
// call they carry its trace.
func (a *App) ApplyConfig(ctx context.Context, cfg configsvc.Config, source string) (err error) {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	defer func() { a.reloaded(err == nil) }()
	next := a.Store.Next(cfg, source)
	a.Router.Reconfigure(next)
	old, ok := a.Store.Publish(next)
	if !ok {
		a.Router.Reconfigure(old)
		err := errors.New("another configuration was published while this one was being applied")
		a.Log.ErrorContext(ctx, "configuration not applied; the previous configuration stays live", "err", err)
		return err
	}
	if err := a.reconfigure(next); err != nil {
		back := a.Store.Next(old.Config, old.Source)
		a.Router.Reconfigure(back)
		a.Store.Publish(back)
		if rerr := a.reconfigure(back); rerr != nil {
			a.Log.ErrorContext(ctx, "restoring the previous configuration", "err", rerr)
		}
		a.Log.ErrorContext(ctx, "configuration not applied; the previous configuration stays live", "source", source, "err", err)
		return err
	}
	a.Log.InfoContext(ctx, configsvc.Describe(source, configsvc.Diff(old.Config, next.Config), configsvc.LiveCounts{Node: a.liveNodeRuntimes()}))
	return nil
}

// reconfigure runs every component's Reconfigure in order, stopping at the
// first error.
func (a *App) reconfigure(snap *configsvc.Snapshot) error {
	for _, c := range a.components {
		if err := c.Reconfigure(snap); err != nil {
			return fmt.Errorf("reconfigure %T: %w", c, err)
		}
	}
	return nil
}

func (a *App) liveNodeRuntimes() int {
	n := 0
	for _, k := range a.Registry.Kept() {
		if k.Lang == core.LangNode {
			n++
		}
	}
	return n + a.Namespaces.CountLang(core.LangNode)
}

// Reloader serves code-runner::on-config-change: it ignores the payload,
// re-fetches inside a lock (a slow older fetch never overwrites a newer
// value), validates, applies, and always answers {"ok": true}; on any
// failure the previous configuration stays live.
type Reloader struct {
	App    *App
	Source *sources.EngineSource
	Label  string
	mu     sync.Mutex
}

// Refresh fetches and applies the current value.
func (r *Reloader) Refresh(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, err := r.Source.Fetch(ctx)
	if err != nil {
		r.App.Log.ErrorContext(ctx, "configuration reload failed; the previous configuration stays live", "err", err)
		r.App.reloaded(false)
		return
	}
	_ = r.App.ApplyConfig(ctx, cfg, r.Label) // a refusal is logged; the previous configuration stays
}

func (r *Reloader) handle(ctx context.Context, call *core.Call) (any, error) {
	r.Refresh(ctx)
	return map[string]bool{"ok": true}, nil
}

// reloaded tells OnReload about one configuration change.
func (a *App) reloaded(accepted bool) {
	if a.OnReload != nil {
		a.OnReload(accepted)
	}
}
