package capsfilter

import (
	"errors"
	"testing"
)

func TestCheckFunction(t *testing.T) {
	refused := []string{
		"state::claim-namespace",
		"harness::state::get",
		"provider::openai-codex::login::start",
		"provider::openai-codex::auth::status",
		"provider-openai-codex::state::get",
	}
	allowed := []string{
		"provider::openai-codex::stream",
		"provider::openai-codex::authenticate",
		"provider-openai-codex::state-info",
		"state::get",
		"state::set",
		"state::claim-namespace-x", // exact match only
		"code-runner::run",
		"engine::register_trigger", // only refused as a trigger *target*
	}
	for _, id := range refused {
		t.Run("refuses "+id, func(t *testing.T) {
			err := CheckFunction(id)
			if err == nil {
				t.Fatal("allowed")
			}
			want := "operator-only function `" + id + "` is not available through code-runner"
			if err.Error() != want {
				t.Fatalf("got %q want %q", err, want)
			}
			if !errors.Is(err, ErrDenied) {
				t.Fatal("not ErrDenied")
			}
		})
	}
	for _, id := range allowed {
		t.Run("allows "+id, func(t *testing.T) {
			if err := CheckFunction(id); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestCheckTriggerTarget(t *testing.T) {
	tests := []struct {
		target  string
		refused bool
	}{
		{"engine::register_trigger", true},
		{"engine::unregister_trigger", true},
		{"harness::state::put", true},
		{"state::claim-namespace", true},
		{"engine::functions::list", false},
		{"my-app::greet", false},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			err := CheckTriggerTarget(tc.target)
			if (err != nil) != tc.refused {
				t.Fatalf("refused=%v want %v", err != nil, tc.refused)
			}
			if err != nil {
				want := "operator-only trigger target `" + tc.target + "` cannot be bound through code-runner; invoke trigger controls directly so their targets can be checked"
				if err.Error() != want {
					t.Fatalf("got %q", err)
				}
			}
		})
	}
}

func reservedText(scope string) string {
	return "scope `" + scope + "` is reserved for code-runner's own records and is not available through code-runner"
}

func TestCheckGuestTrigger(t *testing.T) {
	tests := []struct {
		name    string
		fn      string
		payload string
		want    string // "" = allowed
	}{
		{"plain call allowed", "my-app::x", `{}`, ""},
		{"denied function", "harness::state::list", `{}`, "operator-only function `harness::state::list` is not available through code-runner"},
		{"register_trigger to a normal target", "engine::register_trigger", `{"trigger_type":"cron","function_id":"my-app::tick"}`, ""},
		{"register_trigger to a denied target", "engine::register_trigger", `{"function_id":"provider::openai-codex::auth::x"}`, "operator-only trigger target `provider::openai-codex::auth::x` cannot be bound through code-runner; invoke trigger controls directly so their targets can be checked"},
		{"register_trigger targeting itself", "engine::register_trigger", `{"function_id":"engine::register_trigger"}`, "operator-only trigger target `engine::register_trigger` cannot be bound through code-runner; invoke trigger controls directly so their targets can be checked"},
		{"register_trigger without target", "engine::register_trigger", `{"trigger_type":"cron"}`, "invalid trigger registration: `function_id` must name a target"},
		{"register_trigger with non-string target", "engine::register_trigger", `{"function_id":7}`, "invalid trigger registration: `function_id` must name a target"},
		{"register_trigger with null payload", "engine::register_trigger", `null`, "invalid trigger registration: `function_id` must name a target"},
		{"unregister_trigger is callable directly", "engine::unregister_trigger", `{"id":"x"}`, ""},
		// code-runner's own state scopes (contract §12.1, §26.3).
		{"state::get of the records", "state::get", `{"scope":"code-runner::registrations","key":"a::b"}`, reservedText("code-runner::registrations")},
		{"state::set of the records", "state::set", `{"scope":"code-runner::registrations","key":"a::b","value":{}}`, reservedText("code-runner::registrations")},
		{"state::list of another reserved scope", "state::list", `{"scope":"code-runner::x"}`, reservedText("code-runner::x")},
		{"state::delete", "state::delete", `{"key":"k","scope":"code-runner::registrations"}`, reservedText("code-runner::registrations")},
		{"state::update", "state::update", `{"scope":"code-runner::registrations","key":"k","ops":[]}`, reservedText("code-runner::registrations")},
		{"any other state function", "state::whatever", `{"scope":"code-runner::registrations"}`, reservedText("code-runner::registrations")},
		{"an escaped scope", "state::get", `{"scope":"code\u002drunner::registrations","key":"k"}`, reservedText("code-runner::registrations")},
		{"a repeated scope key", "state::get", `{"scope":"mine","scope":"code-runner::registrations","key":"k"}`, reservedText("code-runner::registrations")},
		{"another scope", "state::get", `{"scope":"my-app","key":"k"}`, ""},
		{"a scope that only contains the prefix", "state::get", `{"scope":"x-code-runner::registrations","key":"k"}`, ""},
		{"a nested scope is not the scope", "state::get", `{"scope":"mine","value":{"scope":"code-runner::registrations"}}`, ""},
		{"a state binding on the records", "engine::register_trigger", `{"trigger_type":"state","function_id":"my-app::w","config":{"scope":"code-runner::registrations"}}`, reservedText("code-runner::registrations")},
		{"a state binding on another scope", "engine::register_trigger", `{"trigger_type":"state","function_id":"my-app::w","config":{"scope":"my-app"}}`, ""},
		{"another trigger type with such a scope", "engine::register_trigger", `{"trigger_type":"cron","function_id":"my-app::w","config":{"scope":"code-runner::registrations"}}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckGuestTrigger(tc.fn, []byte(tc.payload))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Fatalf("got %q want %q", got, tc.want)
			}
		})
	}
}
