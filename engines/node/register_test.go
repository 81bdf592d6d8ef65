package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/enginetest"
)

func newBusRig(t *testing.T, mut func(*configsvc.Config)) (*rig, *enginetest.Bus) {
	bus := enginetest.NewBus()
	lb := &enginetest.Loopback{}
	r := newRig(t, mut, lb, bus)
	lb.Router = r.router
	return r, bus
}

func TestRegisterFunctionNode(t *testing.T) {
	r, bus := newBusRig(t, nil)
	out, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-node::greet", "lang": "node",
		"source": "function handler(p) { return `hello ${p.who}` }"})
	if err != nil || string(out) != `{"function_id":"e2e-node::greet","registered":true}` {
		t.Fatalf("%s %v", out, err)
	}
	res, ierr := bus.Invoke(t, "e2e-node::greet", `{"who":"world","_caller_worker_id":"w"}`)
	if ierr != nil || string(res) != `"hello world"` {
		t.Fatalf("%s %v", res, ierr)
	}
	if d := bus.Registration("e2e-node::greet").Description; d != "Registered through code-runner::register_function; implemented in JavaScript." {
		t.Fatalf("default description %q", d)
	}
	// Every accepted source shape.
	for i, src := range []string{
		"export function handler(p) { return p.n * 2 }",
		"  export const handler = (p) => p.n * 2",
		"export default function handler(p) { return p.n * 2 }",
		"export default (p) => p.n * 2",
		"module.exports.handler = (p) => p.n * 2",
		"exports.handler = (p) => p.n * 2",
		"import _ from 'lodash'\nexport function handler(p: {n: number}): number { return _.multiply(p.n, 2) }",
		"let handler = async (p) => p.n * 2",
		"handler = (p) => p.n * 2",
	} {
		id := "shapes::f" + string(rune('0'+i))
		if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": id, "lang": "node", "source": src, "description": "doubles",
			"request_format": map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}}, "response_format": map[string]any{"type": "number"}}); err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		res, _ := bus.Invoke(t, id, `{"n":21}`)
		if string(res) != "42" {
			t.Fatalf("%q → %s", src, res)
		}
		if reg := bus.Registration(id); reg.Description != "doubles" || !strings.Contains(string(reg.RequestFormat), `"n"`) || string(reg.ResponseFormat) != `{"type":"number"}` {
			t.Fatalf("%+v", reg)
		}
	}
	// A bare expression and its diagnostic (D6), a throwing source, a
	// parse error; the handler of an earlier registration is not visible.
	tests := []struct{ src, want string }{
		{"(p) => p.n * 2", "code-runner::invalid_request: handler for shapes::bad threw while being defined: TypeError: source must define handler(payload)"},
		{"throw new Error('nope')", "code-runner::invalid_request: handler for shapes::bad threw while being defined: Error: nope"},
		{"function handler(p) {", "code-runner::invalid_request: handler for shapes::bad does not parse: SyntaxError: "},
		{"export default function handler(p) {", "code-runner::invalid_request: handler for shapes::bad does not parse: SyntaxError"},
		{"exports.other = (p) => 1", "code-runner::invalid_request: handler for shapes::bad threw while being defined: TypeError: source must define handler(payload)"},
	}
	for _, tc := range tests {
		_, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "shapes::bad", "lang": "node", "source": tc.src})
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Fatalf("%q: %v", tc.src, err)
		}
	}
	if bus.Has("shapes::bad") || r.reg.FunctionOwner("shapes::bad") != "" {
		t.Fatal("a failed definition left its id claimed")
	}
	// D4: a throwing handler → handler_error with the guest's text.
	_, _ = r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-node::boom", "lang": "node", "source": "function handler() { throw new Error('kaput') }"})
	_, ierr = bus.Invoke(t, "e2e-node::boom", `{}`)
	if ierr == nil || !strings.HasPrefix(ierr.Error(), "code-runner::handler_error: Error: kaput") {
		t.Fatalf("%v", ierr)
	}
}

func TestRegisterFunctionValidation(t *testing.T) {
	r, _ := newBusRig(t, nil)
	long := strings.Repeat("x", 600)
	tests := []struct {
		req  map[string]any
		want string
	}{
		{map[string]any{"function_id": "noseparator", "lang": "node", "source": "x"}, `function id "noseparator" has no namespace; pass something like "my-app::greet"`},
		{map[string]any{"function_id": "::x", "lang": "node", "source": "x"}, `function id "::x" has no namespace`},
		{map[string]any{"function_id": "My-App::x", "lang": "node", "source": "x"}, `namespace "My-App::" is not one worker name: worker name "My-App" contains 'M'; use lowercase letters, digits, ".", "_" or "-". A namespace's first segment IS the worker name on the bus`},
		{map[string]any{"function_id": ".hidden::x", "lang": "node", "source": "x"}, `worker name ".hidden" starts with "."`},
		{map[string]any{"function_id": "a..b::x", "lang": "node", "source": "x"}, `worker name "a..b" contains ".."`},
		{map[string]any{"function_id": strings.Repeat("a", 65) + "::x", "lang": "node", "source": "x"}, `is 65 bytes; max 64`},
		{map[string]any{"function_id": "code-runner::mine", "lang": "node", "source": "x"}, `namespace "code-runner::" is reserved for the worker itself; pick your own namespace`},
		{map[string]any{"function_id": "app::" + long, "lang": "node", "source": "x"}, `function id "app::xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"… is 605 bytes; the limit is 512`},
		{map[string]any{"function_id": "app::x", "lang": "node", "source": "x", "request_format": []int{1}}, `request_format must be a JSON Schema OBJECT, e.g. {"type": "object"} — got an array`},
		{map[string]any{"function_id": "app::x", "lang": "node", "source": "x", "response_format": map[string]any{}}, `response_format constrains nothing`},
	}
	for _, tc := range tests {
		_, err := r.call(t, core.FnRegisterFunction, tc.req)
		if err == nil || err.Code != core.CodeInvalidRequest || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%v: %v", tc.req["function_id"], err)
		}
	}
	// The worker's own ids cannot be claimed.
	_, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "code-runner::run", "lang": "node", "source": "function handler(){}"})
	if err == nil || err.Code != core.CodeInvalidRequest {
		t.Fatalf("%v", err)
	}
}

func TestTeardownByNamespaceAndGuestRegistrations(t *testing.T) {
	r, bus := newBusRig(t, nil)
	for _, id := range []string{"e2e-down::a", "e2e-down::b"} {
		if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": id, "lang": "node", "source": "function handler(p){ return 1 }"}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := r.call(t, core.FnTeardown, map[string]any{"namespace": "e2e-down:"})
	if err != nil || string(out) != `{"namespace":"e2e-down::","torn_down":true,"unregistered":["e2e-down::a","e2e-down::b"]}` {
		t.Fatalf("%s %v", out, err)
	}
	if bus.Has("e2e-down::a") {
		t.Fatal("still on the bus")
	}
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "e2e-down::a", "lang": "node", "source": "function handler(p){ return 2 }"}); err != nil {
		t.Fatalf("id not free after teardown: %v", err)
	}
	_, err = r.call(t, core.FnTeardown, map[string]any{"namespace": "nothing-here"})
	if err == nil || err.Error() != `code-runner::runtime_not_found: no runtime is registered for namespace "nothing-here::"; register a function in it first, or pass a runtime_id instead` {
		t.Fatalf("%v", err)
	}
	for _, req := range []map[string]any{{"namespace": "a", "runtime_id": "rt-x"}, {}} {
		if _, err := r.call(t, core.FnTeardown, req); err == nil || err.Code != core.CodeInvalidRequest {
			t.Fatalf("%v", err)
		}
	}

	// A kept run registers a function, a trigger and a trigger type in its
	// own namespace; teardown lists only function ids and the id never leaks.
	res := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `
		const ns = iii.namespace;
		iii.registerFunction(ns + "double", (p) => p.n * 2, { description: "d" });
		await iii.registerTrigger({ type: "cron", function_id: ns + "double", config: { every: 1 } });
		iii.registerTriggerType({ id: ns + "tt" }, { registerTrigger(b) { globalThis.bound = b.config }, unregisterTrigger() {} });
		let refused; try { iii.registerFunction("other::x", () => 1) } catch (e) { refused = e.message }
		return [ns, refused]`})
	var got []string
	_ = json.Unmarshal(res.Result, &got)
	ns := got[0]
	if got[1] != `id "other::x" must start with this runtime's namespace "`+ns+`" — a runtime can only register or unregister ids inside its own namespace` {
		t.Fatalf("%q", got[1])
	}
	if v, err := bus.Invoke(t, ns+"double", `{"n":4}`); err != nil || string(v) != "8" {
		t.Fatalf("%s %v", v, err)
	}
	prov := bus.Provider(ns + "tt")
	if err := prov.RegisterTrigger(context.Background(), core.Binding{ID: "b1", FunctionID: "x::y", Config: json.RawMessage(`{"k":1}`)}); err != nil {
		t.Fatal(err)
	}
	if v := mustRun(t, r, map[string]any{"runtime_id": res.RuntimeID, "code": "return bound"}); string(v.Result) != `{"k":1}` {
		t.Fatalf("%s", v.Result)
	}
	out, err = r.call(t, core.FnTeardown, map[string]any{"runtime_id": res.RuntimeID})
	if err != nil || string(out) != `{"runtime_id":"`+res.RuntimeID+`","torn_down":true,"unregistered":["`+ns+`double"]}` {
		t.Fatalf("%s %v", out, err)
	}
	if strings.Contains(ns, res.RuntimeID[3:]) {
		t.Fatal("namespace derived from the runtime id")
	}
	left := bus.Count()
	if left != 1 { // e2e-down::a re-registered above
		t.Fatalf("%d registrations left on the bus", left)
	}
}

func TestOneShotRegistrationsEndWithTheRun(t *testing.T) {
	r, bus := newBusRig(t, nil)
	res := mustRun(t, r, node(`iii.registerFunction(iii.namespace + "f", () => 1); return iii.namespace`))
	var ns string
	_ = json.Unmarshal(res.Result, &ns)
	if bus.Has(ns + "f") {
		t.Fatal("a one-shot run's registration outlived the run")
	}
}

func TestIdleReapingTombstonesKeptAndReapsNodeNamespaces(t *testing.T) {
	r, bus := newBusRig(t, nil)
	kept := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": "return 1"})
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "idle::f", "lang": "node", "source": "function handler(){ return 1 }"}); err != nil {
		t.Fatal(err)
	}
	// Any idle time at all passes a 1 ns TTL: no need to wait for one.
	if n := r.reg.ReapIdleKept(time.Nanosecond); n != 1 {
		t.Fatalf("reaped %d kept", n)
	}
	if n := r.ns.ReapIdle(time.Nanosecond); n != 1 {
		t.Fatalf("reaped %d namespaces", n)
	}
	if _, err := r.run(t, map[string]any{"runtime_id": kept.RuntimeID, "code": "return 1"}); err == nil || err.Code != core.CodeExpired {
		t.Fatalf("%v", err)
	}
	if bus.Has("idle::f") {
		t.Fatal("reaped namespace still resolves")
	}
}

// TestNodeNamespaceRestartsWithReplay: a handler that overruns kills its
// isolate; the next invocation gets a fresh isolate with the namespace's
// sources replayed (module state restarted), so the ids keep resolving.
func TestNodeNamespaceRestartsWithReplay(t *testing.T) {
	r, bus := newBusRig(t, func(c *configsvc.Config) { c.DefaultTimeoutMS = 500 })
	for _, req := range []map[string]any{
		{"function_id": "rs::count", "lang": "node", "source": "let n = 0; function handler(p) { return ++n }"},
		{"function_id": "rs::spin", "lang": "node", "source": "function handler(p) { for(;;){} }"},
	} {
		if _, err := r.call(t, core.FnRegisterFunction, req); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := bus.Invoke(t, "rs::count", `{}`); string(v) != "1" {
		t.Fatalf("%s", v)
	}
	if v, _ := bus.Invoke(t, "rs::count", `{}`); string(v) != "2" {
		t.Fatalf("%s", v)
	}
	if _, err := bus.Invoke(t, "rs::spin", `{}`); err == nil || !strings.Contains(err.Error(), "code-runner::timeout") {
		t.Fatalf("%v", err)
	}
	v, err := bus.Invoke(t, "rs::count", `{}`)
	if err != nil || string(v) != "1" {
		t.Fatalf("after the kill: %s %v (want 1: restored, state restarted)", v, err)
	}
	if !bus.Has("rs::count") || !bus.Has("rs::spin") {
		t.Fatal("ids stopped resolving")
	}
	out, terr := r.call(t, core.FnTeardown, map[string]any{"namespace": "rs"})
	if terr != nil || string(out) != `{"namespace":"rs::","torn_down":true,"unregistered":["rs::count","rs::spin"]}` {
		t.Fatalf("%s %v", out, terr)
	}
}
