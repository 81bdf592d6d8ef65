package worker

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/guidance"
	"github.com/code-runner-go/code-runner/hooks"
)

// ConfigChange is what flows through the config_changed hook point.
type ConfigChange struct {
	Old, New *configsvc.Snapshot
}

// Turn is what flows through the pre_generate hook point.
type Turn struct {
	Prompt   string
	Enabled  bool
	Response guidance.Response
}

// installHooks sets up the two hook points with their stages.
func (a *App) installHooks() {
	a.ConfigChanged = hooks.NewPoint[ConfigChange](hooks.ConfigChanged)
	a.ConfigChanged.Add(hooks.Stage[ConfigChange]{Name: "pipelines", Fn: func(ctx context.Context, c ConfigChange) (ConfigChange, error) {
		a.Router.Reconfigure(c.New)
		return c, nil
	}})
	a.ConfigChanged.Add(hooks.Stage[ConfigChange]{Name: "engines", Fn: func(ctx context.Context, c ConfigChange) (ConfigChange, error) {
		a.Node.Reconfigure()
		a.Python.Reconfigure()
		return c, nil
	}})
	a.ConfigChanged.Add(hooks.Stage[ConfigChange]{Name: "sweeper", Fn: func(ctx context.Context, c ConfigChange) (ConfigChange, error) {
		a.sweeper.Wake()
		return c, nil
	}})
	a.PreGenerate = hooks.NewPoint[*Turn](hooks.PreGenerate)
	a.PreGenerate.Add(hooks.Stage[*Turn]{Name: "guidance", Fn: func(ctx context.Context, t *Turn) (*Turn, error) {
		t.Response = guidance.Apply(t.Prompt, t.Enabled)
		return t, nil
	}})
}

// ApplyConfig makes cfg live: the store swaps whole, the config_changed
// hook point rebuilds the pipelines and adjusts the engines, and one INFO
// line names every changed key, old → new, and what it affects.
func (a *App) ApplyConfig(cfg configsvc.Config, source string) {
	a.applyMu.Lock()
	defer a.applyMu.Unlock()
	old, cur := a.Store.Swap(cfg, source)
	if _, err := a.ConfigChanged.Run(context.Background(), ConfigChange{Old: old, New: cur}); err != nil {
		a.Log.Error("applying configuration", "err", err)
	}
	a.Log.Info(configsvc.Describe(source, configsvc.Diff(old.Config, cur.Config), configsvc.LiveCounts{Node: a.liveNodeRuntimes()}))
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

// injectGuidance is the terminal of code-runner::inject-guidance: lenient
// decoding (anything undecodable is an empty prompt), then the pre_generate
// hook point.
func (a *App) injectGuidance(ctx context.Context, call *core.Call) (any, error) {
	var ev struct {
		Generate struct {
			SystemPrompt string `json:"system_prompt"`
		} `json:"generate"`
	}
	_ = json.Unmarshal(call.Payload, &ev)
	t, err := a.PreGenerate.Run(ctx, &Turn{Prompt: ev.Generate.SystemPrompt, Enabled: call.Config.InjectGuidance})
	if err != nil {
		a.Log.Error("pre_generate hook", "err", err)
		return guidance.Response{}, nil
	}
	return t.Response, nil
}

// Reloader serves code-runner::on-config-change: it ignores the payload,
// re-fetches inside a lock (a slow older fetch never overwrites a newer
// value), validates, applies, and always answers {"ok": true}; on any
// failure the previous configuration stays live.
type Reloader struct {
	App    *App
	Source *configsvc.EngineSource
	Label  string
	mu     sync.Mutex
}

// Refresh fetches and applies the current value.
func (r *Reloader) Refresh(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cfg, err := r.Source.Fetch(ctx)
	if err != nil {
		r.App.Log.Error("configuration reload failed; the previous configuration stays live", "err", err)
		return
	}
	r.App.ApplyConfig(cfg, r.Label)
}

func (r *Reloader) handle(ctx context.Context, call *core.Call) (any, error) {
	r.Refresh(ctx)
	return map[string]bool{"ok": true}, nil
}
