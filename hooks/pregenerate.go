package hooks

import (
	"context"
	"encoding/json"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/guidance"
)

// PreGenerate is the pre_generate hook (code-runner::inject-guidance,
// docs/behaviour.md#harness-pre-generate-hook): with inject_guidance on, the
// Guidance stage appends the usage guidance to the agent's system prompt;
// with it off the hook has no stage and its terminal answers "no change".
// A reload swaps between the two with the rest of the configuration.
func PreGenerate() Hook {
	return Hook{Name: "pre_generate", IDs: []string{core.FnInjectGuidance}, Route: core.Route{
		Terminal: unchanged,
		StagesFor: func(snap *configsvc.Snapshot) []core.Stage {
			if !snap.Config.InjectGuidance {
				return nil
			}
			return []core.Stage{Guidance}
		},
	}}
}

// Guidance appends the usage guidance to the system prompt of a
// pre_generate event (guidance.Apply: once, however often it runs).
// Decoding is lenient: anything undecodable is an empty prompt, which
// passes on unchanged.
func Guidance(next core.Handler) core.Handler {
	return func(ctx context.Context, call *core.Call) (any, error) {
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

// unchanged is the pre_generate terminal: the turn goes on unchanged.
func unchanged(context.Context, *core.Call) (any, error) { return guidance.Response{}, nil }
