package capsfilter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// deniedExact and deniedPrefixes are the operator-only function ids of
// docs/behaviour.md#bridge-deny-list. Matching is a plain string comparison / prefix test.
var (
	deniedExact    = []string{"state::claim-namespace"}
	deniedPrefixes = []string{
		"harness::state::",
		"provider::openai-codex::login::",
		"provider::openai-codex::auth::",
		"provider-openai-codex::state::",
	}
	// triggerControls may never be a binding's target (docs/behaviour.md#bridge-trigger-targets).
	triggerControls = []string{"engine::register_trigger", "engine::unregister_trigger"}
)

// ErrDenied is wrapped by every refusal of this file, so callers can tell a
// policy refusal from other failures with errors.Is.
var ErrDenied = errors.New("refused by the code-runner bridge policy")

// Refusal is a deny-list refusal. Its Error text is the exact guest-visible
// message of docs/behaviour.md#bridge-deny-list.
type Refusal struct {
	msg string
}

// Error returns the refusal text.
func (r *Refusal) Error() string { return r.msg }

// Unwrap makes errors.Is(err, ErrDenied) true.
func (r *Refusal) Unwrap() error { return ErrDenied }

// isOperatorOnly reports whether id is on the deny-list (docs/behaviour.md#bridge-deny-list).
func isOperatorOnly(id string) bool {
	for _, e := range deniedExact {
		if id == e {
			return true
		}
	}
	for _, p := range deniedPrefixes {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// CheckFunction refuses a guest bus call to an operator-only function id
// (docs/behaviour.md#bridge-deny-list). It returns nil for every other id.
func CheckFunction(functionID string) error {
	if isOperatorOnly(functionID) {
		return &Refusal{msg: fmt.Sprintf("operator-only function `%s` is not available through code-runner", functionID)}
	}
	return nil
}

// CheckTriggerTarget refuses a trigger binding whose target function is
// operator-only or is itself a trigger control (docs/behaviour.md#bridge-trigger-targets).
func CheckTriggerTarget(functionID string) error {
	denied := isOperatorOnly(functionID)
	for _, c := range triggerControls {
		if functionID == c {
			denied = true
		}
	}
	if denied {
		return &Refusal{msg: fmt.Sprintf("operator-only trigger target `%s` cannot be bound through code-runner; invoke trigger controls directly so their targets can be checked", functionID)}
	}
	return nil
}

// ReservedScopePrefix begins the state scopes that hold code-runner's own
// records (contract §12.1, §26.3): no guest reads, writes or watches them.
const ReservedScopePrefix = "code-runner::"

// CheckGuestTrigger applies every check of docs/behaviour.md#bridge-checks to a guest
// iii.trigger call: the function check on functionID; for a state::*
// call, the reserved-scope check on the payload's scope; for a call of
// engine::register_trigger, the target check on the payload's function_id
// (a payload without a string function_id is refused) and the binding
// check on its trigger_type and config.
func CheckGuestTrigger(functionID string, payload json.RawMessage) error {
	if err := CheckFunction(functionID); err != nil {
		return err
	}
	if strings.HasPrefix(functionID, "state::") {
		return checkScopes(topLevel(payload, "scope"))
	}
	if functionID != "engine::register_trigger" {
		return nil
	}
	var p struct {
		FunctionID *string `json:"function_id"`
	}
	if err := json.Unmarshal(payload, &p); err != nil || p.FunctionID == nil {
		return &Refusal{msg: "invalid trigger registration: `function_id` must name a target"}
	}
	if err := CheckTriggerTarget(*p.FunctionID); err != nil {
		return err
	}
	for _, typ := range topLevel(payload, "trigger_type") {
		for _, config := range topLevel(payload, "config") {
			if err := CheckTriggerBinding(jsonString(typ), config); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckTriggerBinding refuses a binding of trigger type state whose
// config.scope is one of code-runner's reserved scopes (contract §12.1),
// for iii.registerTrigger and engine::register_trigger payloads alike.
func CheckTriggerBinding(triggerType string, config json.RawMessage) error {
	if triggerType != "state" {
		return nil
	}
	return checkScopes(topLevel(config, "scope"))
}

func checkScopes(scopes []json.RawMessage) error {
	for _, raw := range scopes {
		if scope := jsonString(raw); strings.HasPrefix(scope, ReservedScopePrefix) {
			return &Refusal{msg: fmt.Sprintf("scope `%s` is reserved for code-runner's own records and is not available through code-runner", scope)}
		}
	}
	return nil
}

// topLevel answers every value of key at the top level of an object —
// each one, should the object repeat the key (a decoder downstream might
// take any of them).
func topLevel(obj json.RawMessage, key string) []json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []json.RawMessage
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return out
		}
		if name == key {
			out = append(out, v)
		}
	}
	return out
}

// jsonString is raw's string, or "" when it is not one.
func jsonString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}
