package worker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
)

// register registers one function through the shared id, failing the test
// on an error.
func register(t *testing.T, e *iiitest.Engine, req map[string]any) {
	t.Helper()
	out, eb, err := e.Invoke(ctxT(t), core.FnRegisterFunction, req, nil)
	if err != nil || eb != nil {
		t.Fatalf("register %v: %s %+v %v", req["function_id"], out, eb, err)
	}
}

// answersWith calls id with payload and answers its result, or the error's
// code.
func answersWith(t *testing.T, e *iiitest.Engine, id, payload string) string {
	t.Helper()
	out, eb, err := e.Invoke(ctxT(t), id, json.RawMessage(payload), nil)
	if err != nil {
		t.Fatal(err)
	}
	if eb != nil {
		return "error " + eb.Code
	}
	return string(out)
}

// eventually waits up to d for call to answer want.
func eventuallyAnswers(t *testing.T, d time.Duration, want string, call func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	got := call()
	for got != want && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		got = call()
	}
	if got != want {
		t.Fatalf("answered %s, want %s (waited %v)", got, want, d)
	}
}

// recordedKeys are the keys of the registration records in e's store.
func recordedKeys(e *iiitest.Engine) string { return strings.Join(e.State.Keys(core.RecordScope), ",") }

var squareFormat = map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}}

// A worker that stops and starts again publishes every function it had
// registered, in both languages, with their descriptions and formats,
// before it reports ready; the records are the state store's, one per id,
// each naming its own key.
func TestRegisteredFunctionsComeBackAfterARestart(t *testing.T) {
	e := newTestEngine(t)
	a := startServe(t, e, ServeOptions{WorkerName: "cr-keep"})
	register(t, e, map[string]any{"function_id": "keep-js::double", "lang": "node", "source": "export function handler(p) { return p.n * 2 }",
		"description": "doubles n", "request_format": squareFormat})
	register(t, e, map[string]any{"function_id": "keep-js::helper", "lang": "node", "source": "globalThis.base = 100; export function handler(p) { return base + p.n }"})
	register(t, e, map[string]any{"function_id": "keep-py::square", "lang": "python", "source": "def handler(p):\n    return p['n'] ** 2",
		"response_format": map[string]any{"type": "number"}})
	// Registered again: the record follows the last source.
	register(t, e, map[string]any{"function_id": "keep-js::double", "lang": "node", "source": "export function handler(p) { return p.n * 2 + 0.5 }",
		"description": "doubles n, plus a half", "request_format": squareFormat})
	for id, want := range map[string]string{"keep-js::double": "42.5", "keep-js::helper": "121", "keep-py::square": "441"} {
		if got := answersWith(t, e, id, `{"n":21}`); got != want {
			t.Fatalf("%s before the restart: %s", id, got)
		}
	}
	if got := recordedKeys(e); got != "keep-js::double,keep-js::helper,keep-py::square" {
		t.Fatalf("records %s", got)
	}
	raw, _ := e.State.Value(core.RecordScope, "keep-js::double")
	rec, err := core.ParseRecord(raw)
	if err != nil || rec.Namespace != "keep-js::" || rec.Lang != "node" || !strings.Contains(rec.Source, "+ 0.5") || rec.Worker != "cr-keep" ||
		*rec.Description != "doubles n, plus a half" || rec.Position != 3 {
		t.Fatalf("record %s: %v", raw, err)
	}

	a.stop()
	if got := answersWith(t, e, "keep-js::double", `{"n":21}`); got != "error function_not_found" {
		t.Fatalf("after the stop: %s", got)
	}
	b := startServe(t, e, ServeOptions{WorkerName: "cr-keep"})
	// Restored before ready: every id answers at once.
	for id, want := range map[string]string{"keep-js::double": "42.5", "keep-js::helper": "121", "keep-py::square": "441"} {
		if got := answersWith(t, e, id, `{"n":21}`); got != want {
			t.Fatalf("%s after the restart: %s\n%s", id, got, b.logs.String())
		}
	}
	info, eb, err := e.Invoke(ctxT(t), "engine::functions::info", map[string]any{"function_id": "keep-js::double"}, nil)
	if err != nil || eb != nil || !strings.Contains(string(info), "doubles n, plus a half") || !strings.Contains(string(info), `"n"`) {
		t.Fatalf("info after the restart: %s %+v %v", info, eb, err)
	}
	if !strings.Contains(b.logs.String(), "registered functions restored from the engine's state store") {
		t.Fatalf("no restore line:\n%s", b.logs.String())
	}
	// A later registration goes after the restored ones.
	register(t, e, map[string]any{"function_id": "keep-js::later", "lang": "node", "source": "export function handler() { return base }"})
	raw, _ = e.State.Value(core.RecordScope, "keep-js::later")
	if rec, _ := core.ParseRecord(raw); rec.Position != 4 {
		t.Fatalf("the next position: %s", raw)
	}
	if got := answersWith(t, e, "keep-js::later", `{}`); got != "100" {
		t.Fatalf("a registration after the restore: %s", got)
	}
}

// teardown and the idle reap of a node namespace delete its records:
// nothing of them comes back after a restart.
func TestEndedNamespacesDoNotComeBack(t *testing.T) {
	e := newTestEngine(t)
	a := startServe(t, e, ServeOptions{WorkerName: "cr-end"})
	register(t, e, map[string]any{"function_id": "gone-a::f", "lang": "node", "source": "export function handler() { return 1 }"})
	register(t, e, map[string]any{"function_id": "gone-a::g", "lang": "python", "source": "def handler(p):\n    return 2"})
	register(t, e, map[string]any{"function_id": "stays::f", "lang": "node", "source": "export function handler() { return 3 }"})
	out, eb, err := e.Invoke(ctxT(t), core.FnTeardown, map[string]any{"namespace": "gone-a"}, nil)
	if err != nil || eb != nil || !strings.Contains(string(out), `"torn_down":true`) {
		t.Fatalf("teardown: %s %+v %v", out, eb, err)
	}
	if got := recordedKeys(e); got != "stays::f" {
		t.Fatalf("records after the teardown: %s", got)
	}
	// The idle reap: a lowered idle_ttl_secs reaps the node namespace.
	setLive(t, e, a, func(c *configsvc.Config) { c.IdleTTLSecs = 1 })
	deadline := time.Now().Add(20 * time.Second)
	for recordedKeys(e) != "" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := recordedKeys(e); got != "" {
		t.Fatalf("records after the idle reap: %s", got)
	}
	a.stop()
	startServe(t, e, ServeOptions{WorkerName: "cr-end"})
	for _, id := range []string{"gone-a::f", "gone-a::g", "stays::f"} {
		if got := answersWith(t, e, id, `{}`); got != "error function_not_found" {
			t.Fatalf("%s came back: %s", id, got)
		}
	}
}

// setLive changes s's configuration through the configuration worker and
// waits until s runs under it.
func setLive(t *testing.T, e *iiitest.Engine, s *served, mut func(*configsvc.Config)) {
	t.Helper()
	c := s.app.Router.Live().Config
	mut(&c)
	if eb := e.Config.SetValue(ctxT(t), "code-runner", json.RawMessage(c.JSON())); eb != nil {
		t.Fatal(eb)
	}
	deadline := time.Now().Add(10 * time.Second)
	for string(s.app.Router.Live().Config.JSON()) != string(c.JSON()) {
		if time.Now().After(deadline) {
			t.Fatalf("the change never applied\n%s", s.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Records that cannot come back — not a record, cut short, of a language
// this build lacks, a source that no longer defines its handler — are
// logged at WARN with their namespace, id and reason (never their source)
// and left in the store; the rest come back and the worker serves.
func TestBadRecordsAreSkippedAndKept(t *testing.T) {
	e := newTestEngine(t)
	good := func(id, src string, pos int64) json.RawMessage {
		b, _ := json.Marshal(core.Record{Version: 1, Key: id, Namespace: strings.SplitN(id, "::", 2)[0] + "::", FunctionID: id,
			Lang: "node", Source: src, Position: pos, Worker: "elsewhere"})
		return b
	}
	e.State.Put(core.RecordScope, "bad::text", json.RawMessage(`"not a record"`))
	// (A store holds JSON values: a record cut short is one that lacks
	// its end, as text or as fields.)
	e.State.Put(core.RecordScope, "bad::cut", json.RawMessage(`"{\"v\":1,\"key\":\"bad::cut\",\"namespace\":\"bad::\",\"function_id\":\"bad::cut\",\"lang\":\"node\",\"source\":\"export fun"`))
	e.State.Put(core.RecordScope, "bad::fields", json.RawMessage(`{"v":1,"key":"bad::fields","namespace":"bad::"}`))
	e.State.Put(core.RecordScope, "mixed::ruby", json.RawMessage(`{"v":1,"key":"mixed::ruby","namespace":"mixed::","function_id":"mixed::ruby","lang":"ruby","source":"SECRET-RUBY","position":1}`))
	e.State.Put(core.RecordScope, "mixed::broken", good("mixed::broken", "const SECRET_SOURCE = 1; /* no handler */", 2))
	e.State.Put(core.RecordScope, "mixed::ok", good("mixed::ok", "export function handler() { return 'ok' }", 3))
	e.State.Put(core.RecordScope, "other::ok", good("other::ok", "export function handler() { return 'other' }", 1))
	e.State.Put(core.RecordScope, "huge::f", good("huge::f", "export function handler() { return 1 }"+strings.Repeat(" ", 2<<20), 1))
	s := startServe(t, e, ServeOptions{WorkerName: "cr-bad"})
	if got := answersWith(t, e, "mixed::ok", `{}`); got != `"ok"` {
		t.Fatalf("mixed::ok: %s\n%s", got, s.logs.String())
	}
	if got := answersWith(t, e, "other::ok", `{}`); got != `"other"` {
		t.Fatalf("other::ok: %s", got)
	}
	logs := s.logs.String()
	for _, want := range []string{"function_id=mixed::ruby", "function_id=mixed::broken", "function_id=huge::f", "does not run \\\"ruby\\\""} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(logs, "SECRET") {
		t.Error("a record's source reached the log")
	}
	if n := strings.Count(logs, "a registration record was skipped"); n < 6 {
		t.Errorf("%d skipped records logged, want 6 or more:\n%s", n, logs)
	}
	for _, key := range []string{"bad::text", "bad::cut", "bad::fields", "mixed::ruby", "mixed::broken", "huge::f"} {
		if _, ok := e.State.Value(core.RecordScope, key); !ok {
			t.Errorf("the unreadable record %s was deleted", key)
		}
	}
	if got := runNodeResult(t, e, "return 6 * 7"); got != "42" {
		t.Fatalf("the worker does not serve: %s", got)
	}
}

// runNodeResult runs code in a node one-shot and answers its result.
func runNodeResult(t *testing.T, e *iiitest.Engine, code string) string {
	t.Helper()
	out, eb := runNode(t, e, map[string]any{"code": code})
	if eb != nil {
		return "error " + eb.Code
	}
	b, _ := json.Marshal(out["result"])
	return string(b)
}

// A record the store refuses fails the registration with
// code-runner::engine naming the cause, and nothing of it is published;
// an engine without a state store serves registrations from memory, with
// one WARN at start.
func TestTheStoreDecidesWhatIsPublished(t *testing.T) {
	e := newTestEngine(t)
	startServe(t, e, ServeOptions{WorkerName: "cr-refused"})
	e.State.FailWith("state::set", &iii.ErrorBody{Code: "STATE_ERROR", Message: "value too large"})
	out, eb, err := e.Invoke(ctxT(t), core.FnRegisterFunction, map[string]any{"function_id": "refused::f", "lang": "node",
		"source": "export function handler() { return 1 }"}, nil)
	if err != nil || eb == nil || eb.Code != string(core.CodeEngine) || !strings.Contains(eb.Message, "value too large") || !strings.Contains(eb.Message, "state store") {
		t.Fatalf("a refused record: %s %+v %v", out, eb, err)
	}
	if got := answersWith(t, e, "refused::f", `{}`); got != "error function_not_found" {
		t.Fatalf("the refused function was published: %s", got)
	}
	e.State.FailWith("state::set", nil)
	register(t, e, map[string]any{"function_id": "refused::f", "lang": "node", "source": "export function handler() { return 1 }"})
	if got := answersWith(t, e, "refused::f", `{}`); got != "1" {
		t.Fatalf("once the store takes it: %s", got)
	}

	bare, err := iiitest.New(iiitest.Options{Logger: quiet(), NoState: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bare.Close)
	s := startServe(t, bare, ServeOptions{WorkerName: "cr-bare"})
	register(t, bare, map[string]any{"function_id": "mem::f", "lang": "node", "source": "export function handler() { return 'memory' }"})
	register(t, bare, map[string]any{"function_id": "mem::g", "lang": "python", "source": "def handler(p):\n    return 'memory too'"})
	if got := answersWith(t, bare, "mem::f", `{}`); got != `"memory"` {
		t.Fatalf("memory-only: %s", got)
	}
	if n := strings.Count(s.logs.String(), "the engine has no state store"); n != 1 {
		t.Fatalf("%d WARNs about the state store, want 1:\n%s", n, s.logs.String())
	}
}

// Two workers: the one serving a namespace leaves; the survivor serves it
// within 10 s, on a last-writer (0.22) and a refusing (0.23) engine; each
// namespace stays on one worker.
func TestASurvivorServesADepartedWorkersNamespaces(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		t.Run(map[bool]string{false: "0.22", true: "0.23"}[refusing], func(t *testing.T) {
			e := engineMode(t, refusing)
			a, b := startPair(t, e)
			// Each worker creates one namespace (the claim makes the
			// first registrar its server); the call reaches whichever
			// holds the shared ids, and is forwarded when needed.
			regOn := func(s *served, id, src string) {
				t.Helper()
				out, eb, err := e.Invoke(ctxT(t), core.WorkerID(core.FnRegisterFunction, Tag(s.app.Namespaces.WorkerName)),
					map[string]any{"function_id": id, "lang": "node", "source": src}, nil)
				if err != nil || eb != nil {
					t.Fatalf("%s: %s %+v %v", id, out, eb, err)
				}
			}
			regOn(a, "on-a::f", "export function handler() { return 'a' }")
			regOn(a, "on-a::g", "export function handler() { return 'a2' }")
			regOn(b, "on-b::f", "export function handler() { return 'b' }")
			servers := listedFunctions(t, e, "on-")
			if servers["on-a::f"] != "cr-a" || servers["on-a::g"] != "cr-a" || servers["on-b::f"] != "cr-b" {
				t.Fatalf("servers %v", servers)
			}
			a.stop()
			start := time.Now()
			eventuallyAnswers(t, 10*time.Second, `"a2"`, func() string { return answersWith(t, e, "on-a::g", `{}`) })
			t.Logf("restored %v after the loss", time.Since(start))
			if got := answersWith(t, e, "on-a::f", `{}`); got != `"a"` {
				t.Fatalf("on-a::f: %s", got)
			}
			servers = listedFunctions(t, e, "on-")
			if servers["on-a::f"] != "cr-b" || servers["on-a::g"] != "cr-b" || servers["on-b::f"] != "cr-b" {
				t.Fatalf("servers after the loss %v", servers)
			}
		})
	}
}

// Guests never see or change the records (contract §12.1, §26.3): every
// state::* call on a code-runner:: scope and every state trigger on one is
// refused with the text, from node and python, plain and void, directly
// and through engine::register_trigger; another scope still works.
func TestGuestsCannotReachTheRecords(t *testing.T) {
	e := newTestEngine(t)
	startServe(t, e, ServeOptions{WorkerName: "cr-guard"})
	register(t, e, map[string]any{"function_id": "guarded::f", "lang": "node", "source": "export function handler() { return 1 }"})
	before, _ := e.State.Value(core.RecordScope, "guarded::f")
	refusal := "scope `code-runner::registrations` is reserved for code-runner's own records and is not available through code-runner"
	calls := len(e.State.Calls())
	var nodeCalls []string
	for _, fn := range []string{"state::get", "state::set", "state::list", "state::delete", "state::update"} {
		for _, action := range []string{"undefined", `"void"`} {
			nodeCalls = append(nodeCalls, `try { await iii.trigger({ function_id: "`+fn+`", action: `+action+`, payload: { scope: "code-runner::registrations", key: "guarded::f", value: {}, ops: [] } }); out.push("allowed") } catch (e) { out.push(e.message) }`)
		}
	}
	nodeCalls = append(nodeCalls,
		`try { await iii.trigger({ function_id: "engine::register_trigger", payload: { trigger_type: "state", function_id: "guarded::f", config: { scope: "code-runner::registrations" } } }); out.push("allowed") } catch (e) { out.push(e.message) }`,
		`try { await iii.registerTrigger({ type: "state", function_id: "guarded::f", config: { scope: "code-runner::registrations" } }); out.push("allowed") } catch (e) { out.push(e.message) }`)
	out, eb := runNode(t, e, map[string]any{"code": "const out = [];\n" + strings.Join(nodeCalls, "\n") + "\nreturn out"})
	if eb != nil {
		t.Fatalf("%+v", eb)
	}
	results, _ := out["result"].([]any)
	if len(results) != len(nodeCalls) {
		t.Fatalf("node: %v", out)
	}
	for i, r := range results {
		if !strings.Contains(r.(string), refusal) {
			t.Errorf("node call %d answered %q, want the refusal", i, r)
		}
	}
	pyOut, pyEb, err := e.Invoke(ctxT(t), core.FnRun, map[string]any{"lang": "python", "code": `out = []
for fn in ['state::get', 'state::set', 'state::list', 'state::delete', 'state::update']:
    for action in [None, 'void']:
        req = {'function_id': fn, 'payload': {'scope': 'code-runner::registrations', 'key': 'guarded::f', 'value': {}}}
        if action:
            req['action'] = action
        try:
            iii.trigger(req)
            out.append('allowed')
        except RuntimeError as e:
            out.append(str(e))
try:
    iii.trigger({'function_id': 'engine::register_trigger', 'payload': {'trigger_type': 'state', 'function_id': 'guarded::f', 'config': {'scope': 'code-runner::registrations'}}})
    out.append('allowed')
except RuntimeError as e:
    out.append(str(e))
result = out`}, nil)
	if err != nil || pyEb != nil || strings.Count(string(pyOut), refusal) != 11 {
		t.Fatalf("python: %s %+v %v", pyOut, pyEb, err)
	}
	// (The worker's own calls go on meanwhile: its restore passes list
	// the scope; a guest's payloads carry the key.)
	for _, c := range e.State.Calls()[calls:] {
		if strings.Contains(string(c.Data), `"key":"guarded::f"`) || strings.Contains(string(c.Data), `"ops":`) {
			t.Fatalf("a guest's %s reached the engine: %s", c.Function, c.Data)
		}
	}
	if after, _ := e.State.Value(core.RecordScope, "guarded::f"); string(after) != string(before) {
		t.Fatal("the record changed")
	}
	// Another scope is the guest's to use.
	if got := runNodeResult(t, e, `await iii.trigger({ function_id: "state::set", payload: { scope: "guest-app", key: "k", value: 5 } });
return await iii.trigger({ function_id: "state::get", payload: { scope: "guest-app", key: "k" } })`); got != "5" {
		t.Fatalf("another scope: %s", got)
	}
}
