package worker

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/code-runner-go/code-runner/iii"
)

// bindingProvider hands every binding the engine delivers to a channel.
type bindingProvider chan iii.Binding

func (p bindingProvider) RegisterTrigger(ctx context.Context, b iii.Binding) error {
	p <- b
	return nil
}
func (bindingProvider) UnregisterTrigger(ctx context.Context, b iii.Binding) error { return nil }

// Nobody publishes under an operator's id or over another worker's: ids
// under engine:: and configuration::, deny-listed ids, and ids another
// live worker serves are refused — to bus callers of register_function, to
// guests calling it through iii.trigger, and to guest registerFunction,
// registerTriggerType and registerTrigger targets — while the worker's own
// ids can be registered again.
func TestNobodyPublishesUnderAnotherOwnersID(t *testing.T) {
	e := newTestEngine(t)
	startServe(t, e, ServeOptions{})
	ctx := ctxT(t)
	other := iii.New(iii.Options{URL: e.URL(), Name: "other-worker", Logger: quiet()})
	t.Cleanup(func() { _ = other.Close() })
	other.RegisterFunction(iii.FunctionDef{ID: "other::fn"}, func(ctx context.Context, req iii.Request) (any, error) { return "the real one", nil })
	other.RegisterFunction(iii.FunctionDef{ID: "hij::taken"}, func(ctx context.Context, req iii.Request) (any, error) { return "the real one", nil })
	bindings := make(bindingProvider, 4)
	other.RegisterTriggerType(iii.TriggerTypeDef{ID: "hij::tt", Description: "theirs"}, bindings)
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("other::fn") && e.HasFunction("hij::taken") }); err != nil {
		t.Fatal(err)
	}
	register := func(id, source string) (json.RawMessage, *iii.ErrorBody) {
		t.Helper()
		res, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": id, "lang": "node", "source": source}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res, eb
	}
	for _, tc := range []struct{ id, rule string }{
		{"engine::functions::list", `is under "engine::", which belongs to the engine`},
		{"configuration::get", `is under "configuration::", which belongs to the configuration worker`},
		{"harness::state::get", "is an operator-only id (the bridge deny-list)"},
		{"state::claim-namespace", "is an operator-only id (the bridge deny-list)"},
		{"other::fn", `is already served by another worker ("other-worker")`},
	} {
		_, eb := register(tc.id, "function handler() { return 'hijacked' }")
		if eb == nil || eb.Code != "code-runner::invalid_request" || !strings.Contains(eb.Message, tc.id) || !strings.Contains(eb.Message, tc.rule) {
			t.Fatalf("%s: %+v", tc.id, eb)
		}
	}
	// A guest calling register_function through iii.trigger is refused alike.
	out, eb := runNode(t, e, map[string]any{"code": `try { await iii.trigger({ function_id: 'code-runner::register_function', payload: { function_id: 'other::fn', lang: 'node', source: 'function handler() { return 1 }' } }); return 'published' } catch (e) { return e.message }`})
	if eb != nil || !strings.Contains(out["result"].(string), "is already served by another worker") {
		t.Fatalf("%v %+v", out, eb)
	}
	// Guest registrations inside a namespace of its own.
	src := `globalThis.r = [];
		for (const f of [
			() => iii.registerFunction('hij::taken', () => 'hijacked'),
			() => iii.registerTriggerType({ id: 'hij::tt' }, { registerTrigger() {}, unregisterTrigger() {} }),
			() => iii.registerFunction('hij::mine', () => 'mine'),
		]) { try { f(); r.push('ok') } catch (e) { r.push(e.message) } }
		function handler() { return globalThis.r }`
	if _, eb := register("hij::a", src); eb != nil {
		t.Fatalf("%+v", eb)
	}
	res, eb, _ := e.Invoke(ctx, "hij::a", map[string]any{}, nil)
	var msgs []string
	_ = json.Unmarshal(res, &msgs)
	if eb != nil || len(msgs) != 3 || !strings.Contains(msgs[0], `function id "hij::taken" is already served by another worker`) ||
		!strings.Contains(msgs[1], `trigger type id "hij::tt" is already served by another worker`) || msgs[2] != "ok" {
		t.Fatalf("%s %+v", res, eb)
	}
	targets := `const out = [];
		for (const target of ['other::fn', 'configuration::set', 'state::claim-namespace', 'hij::a']) {
			try { await iii.registerTrigger({ type: 'hij::tt', function_id: target, config: {} }); out.push('bound') } catch (e) { out.push(e.message) }
		}
		return out`
	out, eb = runNode(t, e, map[string]any{"code": targets})
	got, _ := json.Marshal(out["result"])
	var results []string
	_ = json.Unmarshal(got, &results)
	if eb != nil || len(results) != 4 || results[0] != "bound" ||
		!strings.Contains(results[1], `trigger target "configuration::set" is under`) ||
		!strings.Contains(results[2], "state::claim-namespace") || results[3] != "bound" {
		t.Fatalf("%s %+v", got, eb)
	}
	// The binding to the other worker's function reached the provider, and
	// firing it reaches that function.
	var fired []string
	for len(fired) < 2 {
		select {
		case b := <-bindings:
			res, err := other.Invoke(ctx, iii.Call{FunctionID: b.FunctionID, Data: json.RawMessage(`{}`)})
			if err != nil {
				t.Fatalf("firing %s: %v", b.FunctionID, err)
			}
			fired = append(fired, b.FunctionID+"="+string(res))
		case <-ctx.Done():
			t.Fatalf("the provider got %v only", fired)
		}
	}
	// The provider serves each binding on a goroutine of its own, so the
	// two arrive in either order.
	sort.Strings(fired)
	if !strings.HasPrefix(fired[0], "hij::a=") || fired[1] != `other::fn="the real one"` {
		t.Fatalf("fired %v", fired)
	}
	// The worker's own ids stay its own: registering again replaces.
	if _, eb := register("hij::a", "function handler() { return 'v2' }"); eb != nil {
		t.Fatalf("re-registering an own id: %+v", eb)
	}
	// Nothing was taken over: the other worker still answers its ids.
	for _, id := range []string{"other::fn", "hij::taken"} {
		res, eb, _ := e.Invoke(ctx, id, map[string]any{}, nil)
		if eb != nil || string(res) != `"the real one"` {
			t.Fatalf("%s: %s %+v", id, res, eb)
		}
	}
}
