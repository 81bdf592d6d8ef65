package hooks

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// ConfigChanged is the config_changed hook: a configuration change made
// live in Caddy's order, one stage each —
//
//	serialize → validate → provision → swap → clean up
//
// serialize lets one change through at a time (a slow older read never
// overwrites a newer value); validate reads the new value and refuses it
// with every problem named; provision compiles every route's chain for it
// (core.Router.Provision); swap makes it live with one store; clean up
// tells the components (engines, sweeper) and says what changed. Nothing
// after validate can fail, so there is nothing to roll back: a refused
// value leaves the previous configuration live and untouched.
type ConfigChanged struct {
	Router *core.Router
	// Components act on the configuration once it is live, in order.
	Components []core.Committer
	// Read reads and validates the authoritative value (the engine
	// source's Fetch) for a change announced on the bus; nil: the hook is
	// not served on the bus (local mode, a config file).
	Read func(ctx context.Context) (configsvc.Config, error)
	// Source names where Read's values come from in the log lines.
	Source string
	// IDs are the function ids the hook is served under.
	IDs []string
	// Live counts what a change leaves running, for the log line.
	Live func() configsvc.LiveCounts
	// Applied, when set, learns whether each change was applied.
	Applied func(accepted bool)
	Log     *slog.Logger

	mu sync.Mutex
}

// Change is one configuration change on its way through the stages.
type Change struct {
	// Source names where the value came from ("config file", …).
	Source string
	// Read returns the new value, validated; the validate stage calls it.
	Read func(ctx context.Context) (configsvc.Config, error)

	cfg       configsvc.Config // validated
	table     *core.Table      // provisioned
	old, live *configsvc.Snapshot
}

// Stages is the hook's stage list, outermost first.
func (h *ConfigChanged) Stages() []core.Stage {
	return []core.Stage{h.serialize, h.validate, h.provision, h.swap, h.cleanUp}
}

// Hook is config_changed as a route: a bus call (its payload ignored)
// reads the value through Read and always answers {"ok": true}; a refused
// or unreadable value is logged and the previous configuration stays.
func (h *ConfigChanged) Hook() Hook {
	return Hook{Name: "config_changed", IDs: h.IDs, Route: core.Route{
		Decode: func(call *core.Call) error {
			call.Request = &Change{Source: h.Source, Read: h.Read}
			return nil
		},
		Terminal: done,
		Stages:   append([]core.Stage{alwaysOK}, h.Stages()...),
	}}
}

// Apply runs one change with an already read value (a config file that
// changed) through the stages and returns their error.
func (h *ConfigChanged) Apply(ctx context.Context, cfg configsvc.Config, source string) error {
	return h.run(ctx, &Change{Source: source, Read: func(context.Context) (configsvc.Config, error) { return cfg, nil }})
}

// Refresh reads the value through Read and applies it, as a bus call of
// the hook does (at start, so a change made while the worker was booting
// is not missed).
func (h *ConfigChanged) Refresh(ctx context.Context) error {
	return h.run(ctx, &Change{Source: h.Source, Read: h.Read})
}

func (h *ConfigChanged) run(ctx context.Context, c *Change) error {
	_, err := core.Chain(done, h.Stages()...)(ctx, &core.Call{FunctionID: "config_changed", Request: c})
	return err
}

func done(context.Context, *core.Call) (any, error) { return okAnswer, nil }

var okAnswer = map[string]bool{"ok": true}

// alwaysOK answers a bus call {"ok": true} whatever happened: the stages
// have logged a refusal, and the caller (the configuration trigger) has
// nothing to do about it.
func alwaysOK(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		_, _ = next(ctx, call)
		return okAnswer, nil
	}
}

func (h *ConfigChanged) serialize(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return next(ctx, call)
	}
}

func (h *ConfigChanged) validate(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		c := call.Request.(*Change)
		if c.Read == nil {
			err := fmt.Errorf("no configuration source to read")
			h.Log.ErrorContext(ctx, "configuration reload failed; the previous configuration stays live", "source", c.Source, "err", err)
			h.applied(false)
			return nil, err
		}
		cfg, err := c.Read(ctx)
		if err != nil {
			h.Log.ErrorContext(ctx, "configuration reload failed; the previous configuration stays live", "source", c.Source, "err", err)
			h.applied(false)
			return nil, err
		}
		c.cfg = cfg
		return next(ctx, call)
	}
}

// provision compiles every route's chain for the validated value, hooks
// included, without making it live.
func (h *ConfigChanged) provision(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		c := call.Request.(*Change)
		c.table = h.Router.Provision(c.cfg, c.Source)
		return next(ctx, call)
	}
}

func (h *ConfigChanged) swap(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		c := call.Request.(*Change)
		c.old, c.live = h.Router.Swap(c.table)
		c.table = nil
		return next(ctx, call)
	}
}

// cleanUp tells every component the new value is live and writes one INFO
// line naming every changed key, old → new, and what it affects (under
// ctx: inside a bus call it carries its trace).
func (h *ConfigChanged) cleanUp(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
		c := call.Request.(*Change)
		for _, comp := range h.Components {
			comp.Commit(c.live)
		}
		var live configsvc.LiveCounts
		if h.Live != nil {
			live = h.Live()
		}
		h.Log.InfoContext(ctx, configsvc.Describe(c.Source, configsvc.Diff(c.old.Config, c.live.Config), live))
		h.applied(true)
		return next(ctx, call)
	}
}

func (h *ConfigChanged) applied(accepted bool) {
	if h.Applied != nil {
		h.Applied(accepted)
	}
}
