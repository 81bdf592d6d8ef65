package guidance

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTextHasEveryRequiredFact(t *testing.T) {
	required := []string{"code-runner::run", "code-runner::register_function", "code-runner::teardown",
		"no npm install", "no network", "engine::functions::info", "treat `runtime_id` as a secret", "keep: true",
		"iii.namespace", "stops resolving the moment it is torn down", "must DEFINE `handler(payload)`",
		"iii.shutdown()", "throws by design", "goes on `globalThis`", "code-runner::invalid_request",
		"request_format", "not call-time validation", "assign `result = x`", "iii.trigger", "keep",
		"stdout", "stderr"}
	for _, s := range required {
		if !strings.Contains(Text, s) {
			t.Errorf("guidance lacks %q", s)
		}
	}
	forbidden := []string{"register_worker", "eject", "code-runner::eval", "callFunction", "id_taken"}
	for _, s := range forbidden {
		if strings.Contains(Text, s) {
			t.Errorf("guidance contains forbidden %q", s)
		}
	}
	if strings.Contains(Text, "\n") {
		t.Error("guidance must be one paragraph")
	}
}

func TestApply(t *testing.T) {
	once := "You are helpful.\n\n" + Text
	tests := []struct {
		name string
		base string
		want string
	}{
		{"empty base is a no-op", "", `{"mutations":{}}`},
		{"a prompt that already ends with the guidance is a no-op", once, `{"mutations":{}}`},
		{"trailing white space after the guidance is still the guidance", once + "\n ", `{"mutations":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(Apply(tc.base))
			if string(b) != tc.want {
				t.Fatalf("got %s", b)
			}
		})
	}
	t.Run("appends after a blank line", func(t *testing.T) {
		r := Apply("You are helpful.")
		if r.Mutations.SystemPrompt == nil || *r.Mutations.SystemPrompt != once {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("applied twice, the guidance is there once", func(t *testing.T) {
		first := Apply("You are helpful.")
		if second := Apply(*first.Mutations.SystemPrompt); second.Mutations.SystemPrompt != nil {
			t.Fatalf("the second pass changed the prompt: %q", *second.Mutations.SystemPrompt)
		}
	})
	t.Run("guidance quoted mid-prompt is appended again", func(t *testing.T) {
		r := Apply(once + "\n\nMore instructions.")
		if r.Mutations.SystemPrompt == nil || strings.Count(*r.Mutations.SystemPrompt, Text) != 2 {
			t.Fatalf("%+v", r)
		}
	})
}
