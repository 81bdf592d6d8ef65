package node

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/internal/enginetest"
	"github.com/code-runner-go/code-runner/internal/jsonx"
)

func newLoopRig(t testing.TB, mut func(*configsvc.Config)) (*rig, *enginetest.Loopback) {
	lb := &enginetest.Loopback{}
	r := newRig(t, mut, lb, nil)
	lb.Router = r.router
	return r, lb
}

func mustRun(t *testing.T, r *rig, req map[string]any) *core.RunResponse {
	t.Helper()
	res, err := r.run(t, req)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return res
}

func trivialStillAnswers(t *testing.T, r *rig, pid int) {
	t.Helper()
	if os.Getpid() != pid {
		t.Fatal("worker pid changed")
	}
	res := mustRun(t, r, node("return 1"))
	if string(res.Result) != "1" {
		t.Fatalf("trivial run after attack: %+v", res)
	}
}

func TestConsoleAndOutcomes(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	tests := []struct {
		name              string
		code              string
		stdout, stderrHas string
		result            string
		exit              int64
	}{
		{"log/info/debug to stdout, warn/trace/error to stderr", `console.log("a", 1, {x:[2]}); console.info("b"); console.debug("c"); console.warn("w"); console.error("e"); console.trace("t")`, "a 1 { x: [ 2 ] }\nb\nc\n", "w\ne\nTrace: t\n    at code.js:1:", "null", 0},
		{"non-ASCII round-trips", `const s = "olá — 日本語 ±3°"; console.log(s); return s`, "olá — 日本語 ±3°\n", "", `"olá — 日本語 ±3°"`, 0},
		{"undefined is null", `return undefined`, "", "", "null", 0},
		{"function is null", `return () => 1`, "", "", "null", 0},
		{"cycle is null", `const a = {}; a.a = a; return a`, "", "", "null", 0},
		{"BigInt is null", `return 10n`, "", "", "null", 0},
		{"NaN/Infinity/Date/Map per JSON", `return [NaN, Infinity, new Date(0), new Map([[1,2]])]`, "", "", `[null,null,"1970-01-01T00:00:00.000Z",{}]`, 0},
		{"key order and number spelling kept", `return {b: 1, a: 1e21, c: 0.1}`, "", "", `{"b":1,"a":1e+21,"c":0.1}`, 0},
		{"await works", `const v = await Promise.resolve(41); return v + 1`, "", "", "42", 0},
		{"throw keeps earlier output", `console.log("before"); console.error("err-before"); throw new Error("boom-n")`, "before\n", "err-before\nError: boom-n\n    at", "null", 1},
		{"reject", `await Promise.reject(new TypeError("nope"))`, "", "TypeError: nope", "null", 1},
		{"throw a string", `throw "plain"`, "", "plain\n", "null", 1},
		{"throw an object with name/message", `throw {name: "Custom", message: "m"}`, "", "Custom: m\n", "null", 1},
		{"unstringifiable thrown value", `throw Object.create(null)`, "", "unstringifiable thrown value\n", "null", 1},
		{"syntax error", `let x = ;`, "", "SyntaxError", "null", 1},
		{"a top-level import is transformed", `import fs from "fs"; return typeof fs.readFileSync`, "", "", `"function"`, 0},
		{"a syntax error in a module keeps the tenant's line", "import fs from 'fs';\n\nconst = 1", "", "SyntaxError: Unexpected token (3:", "null", 1},
		{"a TypeScript error after the transform keeps its line", "const x: number = 1;\n\nthrow new Error('ts3')", "", "code.js:3:", "null", 1},
		{"tenant line N is reported as line N", "\n\nthrow new Error('line3')", "", "code.js:3:", "null", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := mustRun(t, r, node(tc.code))
			if res.Result == nil {
				res.Result = json.RawMessage("null")
			}
			if res.Stdout != tc.stdout || !strings.Contains(res.Stderr, tc.stderrHas) || string(res.Result) != tc.result || res.ExitCode != tc.exit || res.Success != (tc.exit == 0) {
				t.Fatalf("got stdout=%q stderr=%q result=%s exit=%d", res.Stdout, res.Stderr, res.Result, res.ExitCode)
			}
		})
	}
}

func TestEnvironmentIsNodeLikeWithoutWebAssembly(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, node(`return [typeof WebAssembly, typeof Deno, typeof require, typeof process, typeof global, typeof module, typeof Buffer, typeof fetch, typeof setTimeout, typeof globalThis, typeof console, typeof iii]`))
	want := `["undefined","undefined","function","object","object","object","function","function","function","object","object","object"]`
	if string(res.Result) != want {
		t.Fatalf("%s", res.Result)
	}
}

func TestGuestSurfaceGolden(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, node(`return {
		keys: Object.keys(iii),
		files: Object.keys(iii.files).sort().map(k => k + "/" + iii.files[k].length),
		fns: ["registerFunction","registerTrigger","registerTriggerType","shutdown","trigger","unregisterTriggerType"].map(k => k + "/" + iii[k].length),
		types: Object.keys(iii).map(k => typeof iii[k]),
		frozen: Object.isFrozen(iii) && Object.isFrozen(iii.files),
		hint: String(iii),
		ns: iii.namespace,
	}`))
	var got struct {
		Keys, Files, Fns, Types []string
		Frozen                  bool
		Hint, NS                string
	}
	if err := json.Unmarshal(res.Result, &got); err != nil {
		t.Fatalf("%s", res.Result)
	}
	if strings.Join(got.Keys, ",") != "files,namespace,registerFunction,registerTrigger,registerTriggerType,shutdown,trigger,unregisterTriggerType" {
		t.Fatalf("keys %v", got.Keys)
	}
	if strings.Join(got.Files, ",") != "list/0,read/1,readText/1,remove/1,write/2" {
		t.Fatalf("files %v", got.Files)
	}
	if strings.Join(got.Fns, ",") != "registerFunction/3,registerTrigger/1,registerTriggerType/2,shutdown/0,trigger/1,unregisterTriggerType/1" {
		t.Fatalf("fns %v", got.Fns)
	}
	if strings.Join(got.Types, ",") != "object,string,function,function,function,function,function,function" || !got.Frozen {
		t.Fatalf("types %v frozen %v", got.Types, got.Frozen)
	}
	if !strings.HasPrefix(got.Hint, "[iii: code-runner host client. e.g. await iii.trigger({ function_id: 'worker::fn', payload: {} }); ") || !strings.HasSuffix(got.Hint, "]") {
		t.Fatalf("hint %q", got.Hint)
	}
	if !strings.HasPrefix(got.NS, "code-runner::") || len(got.NS) != len("code-runner::")+32+2 {
		t.Fatalf("namespace %q", got.NS)
	}
	res = mustRun(t, r, node(`try { iii.shutdown() } catch (e) { return e.message }`))
	if string(res.Result) != `"iii.shutdown() is not available in a code-runner runtime — the engine connection belongs to the worker and is shared by every runtime. Use code-runner::teardown to dispose this runtime."` {
		t.Fatalf("%s", res.Result)
	}

	r2, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchMB = 0 })
	res = mustRun(t, r2, node(`return [Object.keys(iii).join(","), "files" in iii]`))
	if string(res.Result) != `["namespace,registerFunction,registerTrigger,registerTriggerType,shutdown,trigger,unregisterTriggerType",false]` {
		t.Fatalf("scratch_mb 0: %s", res.Result)
	}
}

func TestKeepLifecycle(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	first := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `globalThis.n = 41; iii.files.write("f.txt", "kept"); var local = 1; return iii.namespace`})
	id := first.RuntimeID
	if id == "" || strings.Contains(string(first.Result), id) || strings.Contains(string(first.Result), id[3:]) {
		t.Fatalf("%+v", first)
	}
	again := mustRun(t, r, map[string]any{"runtime_id": id, "code": `return [n + 1, iii.files.readText("f.txt"), typeof local, iii.files.list()]`})
	if string(again.Result) != `[42,"kept","undefined",[{"name":"f.txt","bytes":4}]]` || again.RuntimeID != id {
		t.Fatalf("%+v", again)
	}
	svc := &core.RunService{Registry: r.reg}
	if _, err := svc.TeardownRuntime(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := r.run(t, map[string]any{"runtime_id": id, "code": "return 1"}); err == nil || err.Code != core.CodeRuntimeNotFound {
		t.Fatalf("after teardown: %v", err)
	}
}

func TestTimeoutsAndTombstones(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	pid := os.Getpid()
	for _, code := range []string{`for(;;){}`, `await null; for(;;){}`, `await new Promise(() => {})`, `Promise.resolve().then(() => { for(;;){} }); await new Promise(() => {})`} {
		t.Run(code, func(t *testing.T) {
			_, err := r.run(t, map[string]any{"lang": "node", "code": code, "timeout_ms": 300})
			if err == nil || err.Error() != "code-runner::timeout: execution exceeded its deadline" {
				t.Fatalf("%v", err)
			}
			trivialStillAnswers(t, r, pid)
		})
	}
	// D3: a kept runtime killed by a timeout is tombstoned.
	kept := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": "return 1"})
	if _, err := r.run(t, map[string]any{"runtime_id": kept.RuntimeID, "code": "for(;;){}", "timeout_ms": 200}); err == nil || err.Code != core.CodeTimeout {
		t.Fatalf("%v", err)
	}
	if _, err := r.run(t, map[string]any{"runtime_id": kept.RuntimeID, "code": "return 1"}); err == nil || err.Code != core.CodeExpired {
		t.Fatalf("reuse after kill: %v", err)
	}
	// D9: timeout_ms 0 is the default (5000 here), not 0/1 ms.
	res := mustRun(t, r, map[string]any{"lang": "node", "code": "await null; return 'ok'", "timeout_ms": 0})
	if string(res.Result) != `"ok"` {
		t.Fatalf("%+v", res)
	}
}

func TestMemoryAttacksKillOnlyTheirRuntime(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.HeapMB = 64; c.ExternalMB = 64 })
	pid := os.Getpid()
	const heap = "the runtime exceeded its memory cap of 64 MiB and was killed (a run that creates a runtime may ask for up to 512 MiB with memory_mb)"
	const offHeap = "the runtime exceeded its off-heap memory cap of 64 MiB (external_mb) and was killed"
	// Every way to fill memory ends in the text of the cap it crossed
	// (contract §16.3), never in a V8 fatal error's generic answer.
	attacks := []struct{ code, want string }{
		{`let a=[];for(;;)a.push(new Array(1e6))`, heap},
		{`new Array(1.3e8).fill(1.5); return 1`, heap},
		{`const keep = []; for (let i = 0;; i++) keep.push('x'.repeat(1 << 20) + i)`, heap},
		{`const m = new Map(); for (let i = 0;; i++) m.set(i, { i })`, heap},
		{`const s = new Set(); for (let i = 0;; i++) s.add('k' + i)`, heap},
		{`const o = {}; for (let i = 0;; i++) o['k' + i] = i`, heap},
		{`const keep=[]; for (let i=0;i<5;i++) keep.push(new Uint8Array(2**30).fill(1)); return keep.length`, offHeap},
		{`const keep = []; for (;;) keep.push(Buffer.alloc(16 << 20, 1))`, offHeap},
		// V8 commits a resizable ArrayBuffer's pages itself: the allocator
		// never sees them, the process's memory does, and the heap is
		// within its own cap. (Grown in steps, so the stop lands between
		// them: one 1 GiB fill can outlast the guard's grace, and a hard
		// stop from outside V8 cannot tell whose memory it was.)
		{`const ab = new ArrayBuffer(0, { maxByteLength: 2 ** 31 }); for (let n = 16 << 20;; n += 16 << 20) { ab.resize(n); new Uint8Array(ab, n - (16 << 20)).fill(1) }`, offHeap},
	}
	for _, a := range attacks {
		t.Run(a.code, func(t *testing.T) {
			_, err := r.run(t, map[string]any{"lang": "node", "code": a.code, "timeout_ms": 20000})
			if err == nil || err.Code != core.CodeResourceExhausted || err.Text != a.want {
				t.Fatalf("got %v\nwant %s", err, a.want)
			}
			trivialStillAnswers(t, r, pid)
		})
	}
	t.Run("a kept runtime beside the attack is untouched", func(t *testing.T) {
		kept := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": "globalThis.v = 7; return 1"})
		_, _ = r.run(t, map[string]any{"lang": "node", "code": attacks[1].code, "timeout_ms": 20000})
		res := mustRun(t, r, map[string]any{"runtime_id": kept.RuntimeID, "code": "return v"})
		if string(res.Result) != "7" {
			t.Fatalf("%+v", res)
		}
	})
}

func TestRecursionAndConsoleFloods(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	pid := os.Getpid()
	res := mustRun(t, r, node(`function f(){ return f() } f()`))
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "RangeError: Maximum call stack size exceeded") {
		t.Fatalf("%+v", res.Stderr[:min(200, len(res.Stderr))])
	}
	trivialStillAnswers(t, r, pid)
	// 50 MB of console output: the engine keeps 1000 lines / 256 KiB and says so.
	res, err := r.run(t, map[string]any{"lang": "node", "code": `const line = "y".repeat(1000); for (let i = 0; i < 50000; i++) console.log(line); return "done"`, "timeout_ms": 25000})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Result) != `"done"` || len(res.Stdout) > 16384 || !strings.Contains(res.Stderr, "[code-runner] log output truncated at 1000 lines / 262144 bytes; further console output is dropped") {
		t.Fatalf("stdout %d bytes, stderr %q", len(res.Stdout), res.Stderr)
	}
	trivialStillAnswers(t, r, pid)
	// 200000 prints (the e2e catalogue's errors case 4): returns, stdout capped.
	res = mustRun(t, r, map[string]any{"lang": "node", "code": `for (let i = 0; i < 200000; i++) console.log(i); return 1`, "timeout_ms": 25000})
	if len(res.Stdout) > 2<<20 || string(res.Result) != "1" {
		t.Fatalf("%d", len(res.Stdout))
	}
}

func TestTamperingCannotEscape(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `
		JSON.stringify = () => '"forged"';
		JSON.parse = () => ({forged: true});
		Promise.prototype.then = function () { throw new Error("patched") };
		try { iii.trigger = () => 1 } catch (e) {}
		try { delete globalThis.iii } catch (e) {}
		try { globalThis.iii = {} } catch (e) {}
		Object.defineProperty = () => { throw new Error("x") };
		return {a: 1}`})
	if string(res.Result) != `{"a":1}` {
		t.Fatalf("completion serialized by the tenant's JSON: %s", res.Result)
	}
	again := mustRun(t, r, map[string]any{"runtime_id": res.RuntimeID, "code": `return [typeof iii.trigger, Object.isFrozen(iii), iii.namespace.startsWith("code-runner::")]`})
	if string(again.Result) != `["function",true,true]` {
		t.Fatalf("%s", again.Result)
	}
}

func TestGuestTrigger(t *testing.T) {
	r, lb := newLoopRig(t, nil)
	res := mustRun(t, r, node(`
		const echo = await iii.trigger({ function_id: "test::echo", payload: { x: 1 } });
		const none = await iii.trigger({ function_id: "test::echo" });
		const v = await iii.trigger({ function_id: "test::echo", payload: {}, action: "void" });
		const q = await iii.trigger({ function_id: "test::echo", payload: {}, action: '{"type":"enqueue","queue":"payments"}' });
		let missing; try { await iii.trigger({ function_id: "nope::x" }) } catch (e) { missing = e.message }
		const nested = await iii.trigger({ function_id: "code-runner::run", payload: { lang: "node", code: "return 40 + 2" } });
		return [echo, none, v, q, missing, nested.result]`))
	if string(res.Result) != `[{"x":1},{},null,{"messageReceiptId":"00000000-0000-4000-8000-000000000000"},"function_not_found: Function nope::x not found",42]` {
		t.Fatalf("%+v", res)
	}
	calls := lb.Seen()
	if string(calls[2].Action) != `{"type":"void"}` || string(calls[3].Action) != `{"type":"enqueue","queue":"payments"}` {
		t.Fatalf("actions %s %s", calls[2].Action, calls[3].Action)
	}
	// Validation messages.
	res = mustRun(t, r, node(`
		const out = [];
		for (const req of [null, {}, {function_id: ""}, {function_id: "a::b", action: 1}, {function_id: "a::b", timeout: "1"}, {function_id: "a::b", timeout_ms: {}},
		                   {function_id: "x".repeat(513)}, {function_id: "a::b", payload: "p".repeat(1048577)}, {function_id: "a::b", action: "a".repeat(513)}, {function_id: "a::b", action: "{nope"}]) {
			try { await iii.trigger(req); out.push("ok") } catch (e) { out.push(e.constructor.name + ": " + e.message) }
		}
		return out`))
	var msgs []string
	_ = json.Unmarshal(res.Result, &msgs)
	want := []string{
		"TypeError: trigger(request): request must be an object",
		"TypeError: trigger(request): function_id must be a non-empty string",
		"TypeError: trigger(request): function_id must be a non-empty string",
		"TypeError: trigger(request): action must be a string when given",
		"TypeError: trigger(request): timeout must be a number when given",
		"TypeError: trigger(request): timeout_ms must be a number when given",
		"Error: function id is 513 bytes; the limit is 512",
		"Error: payload is 1048579 bytes; the limit is 1048576",
		"Error: action is 513 bytes; the limit is 512",
	}
	for i, w := range want {
		if i >= len(msgs) || msgs[i] != w {
			t.Fatalf("message %d: got %v\nwant %q", i, msgs, w)
		}
	}
	if !strings.HasPrefix(msgs[9], `Error: invalid action "{nope": `) {
		t.Fatalf("%q", msgs[9])
	}
	// More than 32 in flight.
	res = mustRun(t, r, node(`
		const ps = []; for (let i = 0; i < 32; i++) ps.push(iii.trigger({ function_id: "test::never", timeout_ms: 300 }).catch(e => e.message));
		let refused; try { await iii.trigger({ function_id: "test::echo" }) } catch (e) { refused = e.message }
		const first = await ps[0];
		return [refused, first]`))
	if string(res.Result) != `["too many concurrent iii.trigger calls (limit 32); await earlier calls before making more","TIMEOUT: invocation timed out after 300ms"]` {
		t.Fatalf("%s", res.Result)
	}
}

func TestGuestTriggerTimeoutClampedToRun(t *testing.T) {
	r, lb := newLoopRig(t, nil)
	res := mustRun(t, r, map[string]any{"lang": "node", "timeout_ms": 1000, "code": `
		try { await iii.trigger({ function_id: "test::never", timeout: 30000 }) } catch (e) { return e.message }`})
	var msg string
	_ = json.Unmarshal(res.Result, &msg)
	if !strings.HasPrefix(msg, "TIMEOUT: invocation timed out after ") {
		t.Fatalf("%+v", res)
	}
	calls := lb.Seen()
	if got := calls[len(calls)-1].Timeout; got > 800*time.Millisecond || got <= 0 {
		t.Fatalf("guest timeout %v not clamped to the run's remaining budget − 200 ms", got)
	}
}

func TestDenyListRefusesBeforeAnyTraffic(t *testing.T) {
	r, lb := newLoopRig(t, nil)
	refused := []string{"state::claim-namespace", "harness::state::get", "provider::openai-codex::login::start", "provider::openai-codex::auth::status", "provider-openai-codex::state::get"}
	for _, id := range refused {
		for _, action := range []string{"undefined", `"void"`, `'{"type":"enqueue","queue":"q"}'`} {
			t.Run(id+" "+action, func(t *testing.T) {
				res := mustRun(t, r, node(fmt.Sprintf(`try { await iii.trigger({ function_id: %q, payload: {}, action: %s }); return "reached" } catch (e) { return e.message }`, id, action)))
				want := fmt.Sprintf("\"operator-only function `%s` is not available through code-runner\"", id)
				if string(res.Result) != want {
					t.Fatalf("%s", res.Result)
				}
			})
		}
	}
	res := mustRun(t, r, node(`
		const out = [];
		for (const target of ["engine::register_trigger", "engine::unregister_trigger", "harness::state::x"]) {
			try { await iii.registerTrigger({ type: "cron", function_id: target, config: {} }); out.push("bound") } catch (e) { out.push(e.message) }
		}
		try { await iii.trigger({ function_id: "engine::register_trigger", payload: { trigger_type: "cron", function_id: "engine::unregister_trigger" } }) } catch (e) { out.push(e.message) }
		try { await iii.trigger({ function_id: "engine::register_trigger", payload: { trigger_type: "cron" } }) } catch (e) { out.push(e.message) }
		return out`))
	var msgs []string
	_ = json.Unmarshal(res.Result, &msgs)
	for i, target := range []string{"engine::register_trigger", "engine::unregister_trigger", "harness::state::x", "engine::unregister_trigger"} {
		want := "operator-only trigger target `" + target + "` cannot be bound through code-runner; invoke trigger controls directly so their targets can be checked"
		if msgs[i] != want {
			t.Fatalf("%d: %q", i, msgs[i])
		}
	}
	if msgs[4] != "invalid trigger registration: `function_id` must name a target" {
		t.Fatalf("%q", msgs[4])
	}
	for _, c := range lb.Seen() {
		for _, id := range append(refused, "engine::register_trigger") {
			if c.FunctionID == id {
				t.Fatalf("a refused call reached the transport: %s", id)
			}
		}
	}
	// Allowed look-alikes reach the transport.
	mustRun(t, r, node(`for (const id of ["provider::openai-codex::stream", "state::get", "provider-openai-codex::state-info"]) { try { await iii.trigger({ function_id: id }) } catch (e) {} }`))
	reached := map[string]bool{}
	for _, c := range lb.Seen() {
		reached[c.FunctionID] = true
	}
	if !reached["provider::openai-codex::stream"] || !reached["state::get"] || !reached["provider-openai-codex::state-info"] {
		t.Fatalf("look-alikes did not reach the transport: %v", reached)
	}
}

func TestFilesRulesAndQuota(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchMB = 1; c.ScratchFiles = 3 })
	res := mustRun(t, r, node(`
		const out = [];
		const tryIt = (f) => { try { f(); out.push("ok") } catch (e) { out.push(e.constructor.name + ": " + e.message) } };
		tryIt(() => iii.files.write(5, "x"));
		tryIt(() => iii.files.write("", "x"));
		tryIt(() => iii.files.write("a".repeat(256), "x"));
		tryIt(() => iii.files.write("../etc/passwd", "x"));
		tryIt(() => iii.files.write("CON.txt", "x"));
		tryIt(() => iii.files.write("..", "x"));
		tryIt(() => iii.files.write("trail.", "x"));
		tryIt(() => iii.files.write("ok.bin", 42));
		tryIt(() => iii.files.read("missing"));
		tryIt(() => iii.files.write("bin", new Uint8Array([0, 1, 255, 128])));
		out.push(Array.from(iii.files.read("bin")).join(","));
		tryIt(() => iii.files.readText(7));
		return out`))
	var msgs []string
	_ = json.Unmarshal(res.Result, &msgs)
	want := []string{
		"TypeError: iii.files.write: name must be a string",
		"Error: file name must not be empty",
		"Error: file name is 256 bytes; max 255",
		`Error: file name "../etc/passwd" may only contain letters, digits, '.', '_' and '-' — it names one file in this runtime's private directory, not a path`,
		`Error: file name "CON.txt" is reserved`,
		`Error: file name ".." is reserved`,
		`Error: file name "trail." must not end in '.'`,
		"TypeError: iii.files.write: contents must be a string or Uint8Array",
		"Error: no such file in this runtime's scratch directory",
		"ok",
		"0,1,255,128",
		"TypeError: iii.files.readText: name must be a string",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	// R6: an uncaught quota refusal is resource_exhausted naming the file; caught, the run continues.
	_, err := r.run(t, node(`iii.files.write("big.bin", "z".repeat(2 * 1048576))`))
	if err == nil || err.Error() != `code-runner::resource_exhausted: writing "big.bin" would exceed this runtime's scratch quota (1048576 bytes across at most 3 files); remove a file first` {
		t.Fatalf("%v", err)
	}
	res = mustRun(t, r, node(`try { iii.files.write("big.bin", "z".repeat(2 * 1048576)) } catch (e) { iii.files.write("small", "s"); return iii.files.list() }`))
	if string(res.Result) != `[{"name":"small","bytes":1}]` {
		t.Fatalf("%s", res.Result)
	}
	res = mustRun(t, r, node(`iii.files.write("a","1"); iii.files.write("b","1"); iii.files.write("c","1"); iii.files.write("c","22"); try { iii.files.write("d","1") } catch (e) { return e.message }`))
	if !strings.Contains(string(res.Result), `writing \"d\" would exceed`) {
		t.Fatalf("file-count quota: %s", res.Result)
	}
}

func TestConcurrentOneShotsUnderCapacity(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.MaxRuntimes = 8 })
	var wg sync.WaitGroup
	var ok, capacity, other atomic.Int64
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.run(t, node("await null; return 1"))
			switch {
			case err == nil && string(res.Result) == "1":
				ok.Add(1)
			case err != nil && err.Code == core.CodeCapacity:
				capacity.Add(1)
			default:
				other.Add(1)
				t.Errorf("unexpected: %+v %v", res, err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() == 0 || other.Load() != 0 {
		t.Fatalf("ok %d capacity %d other %d", ok.Load(), capacity.Load(), other.Load())
	}
	if r.reg.SlotsInUse() != 0 {
		t.Fatal("slots leaked")
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(r.eng.HostPIDs()) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if pids := r.eng.HostPIDs(); len(pids) != 0 {
		t.Fatalf("leaked host processes: %v", pids)
	}
	for _, pid := range r.eng.HostPIDs() {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Fatalf("host %d still running", pid)
		}
	}
}

func TestMemoryMBIsClamped(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, map[string]any{"lang": "node", "code": "return 1", "memory_mb": 4096})
	if string(res.Result) != "1" {
		t.Fatalf("%+v", res)
	}
	if clampHeap(4096, &r.cfg) != 1024 || clampHeap(1, &r.cfg) != 16 || clampHeap(0, &r.cfg) != 128 {
		t.Fatal("clamp")
	}
}

// TestScratchDirectoryLifecycle: docs/behaviour.md#guest-iii-files — a private directory under
// scratch_root (created if missing), mode 0700, a random name unrelated to
// the runtime id, deleted when the runtime ends; and a run that never
// writes a file leaves nothing on disk.
func TestScratchDirectoryLifecycle(t *testing.T) {
	root := filepath.Join(t.TempDir(), "missing", "root")
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchRoot = &root })
	entries := func() []os.DirEntry {
		es, _ := os.ReadDir(root)
		return es
	}
	// A one-shot that does not touch iii.files creates nothing.
	mustRun(t, r, node(`return iii.files.list().length`))
	if es := entries(); len(es) != 0 {
		t.Fatalf("a run without writes left %d entries under scratch_root", len(es))
	}
	kept := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `iii.files.write("a.txt", "hello"); return 1`})
	es := entries()
	if len(es) != 1 {
		t.Fatalf("want one scratch directory under the (created) root, got %d", len(es))
	}
	dir := filepath.Join(root, es[0].Name())
	info, err := os.Lstat(dir)
	if err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("scratch directory %s: %v %v", dir, info.Mode(), err)
	}
	uuidPart := strings.TrimPrefix(kept.RuntimeID, "rt-")
	if strings.Contains(es[0].Name(), uuidPart) {
		t.Fatalf("scratch directory %q is named after the runtime id", es[0].Name())
	}
	if b, err := os.ReadFile(filepath.Join(dir, "a.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("file in scratch: %q %v", b, err)
	}
	// The same runtime sees its file on the next call.
	res := mustRun(t, r, map[string]any{"runtime_id": kept.RuntimeID, "code": `return iii.files.readText("a.txt")`})
	if string(res.Result) != `"hello"` {
		t.Fatalf("%s", res.Result)
	}
	// A one-shot that writes gets its own directory, gone when it ends.
	mustRun(t, r, node(`iii.files.write("b.txt", "x"); return 1`))
	if !eventually(func() bool { return len(entries()) == 1 }) {
		t.Fatalf("one-shot scratch directory not deleted: %d entries", len(entries()))
	}
	if n := r.reg.ReapIdleKept(0); n != 1 {
		t.Fatalf("reaped %d runtimes, want 1", n)
	}
	if !eventually(func() bool { return len(entries()) == 0 }) {
		t.Fatalf("kept runtime's scratch directory not deleted after it was destroyed")
	}
}

// TestScratchRootUnusable: a scratch_root the worker cannot create makes
// the write fail with a message naming the setting and no host path; the
// run itself still starts and other runs are unaffected.
func TestScratchRootUnusable(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(blocker, "root") // a path under a regular file
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchRoot = &root })
	res := mustRun(t, r, node(`try { iii.files.write("a", "1") } catch (e) { return e.message }`))
	if string(res.Result) != `"could not create this runtime's scratch directory; the operator should check scratch_root"` {
		t.Fatalf("%s", res.Result)
	}
	if res := mustRun(t, r, node(`return 2+2`)); string(res.Result) != "4" {
		t.Fatalf("%s", res.Result)
	}
}

// eventually polls cond for up to 10 s (background cleanup runs after the
// response).
func eventually(cond func() bool) bool {
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestCloseRemovesScratchOfRuntimesDestroyedJustBefore: the worker's
// shutdown destroys every runtime and then closes the engine; the scratch
// directories must be gone when Close returns (the process exits next).
func TestCloseRemovesScratchOfRuntimesDestroyedJustBefore(t *testing.T) {
	root := t.TempDir()
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchRoot = &root })
	for i := 0; i < 3; i++ {
		mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `iii.files.write("f", "x".repeat(1000)); return 1`})
	}
	if es, _ := os.ReadDir(root); len(es) != 3 {
		t.Fatalf("want 3 scratch directories, got %d", len(es))
	}
	if n := r.reg.ReapIdleKept(0); n != 3 {
		t.Fatalf("reaped %d", n)
	}
	r.eng.Close()
	if es, _ := os.ReadDir(root); len(es) != 0 {
		t.Fatalf("%d scratch directories left after Close", len(es))
	}
}

// The result cap measures compact JSON with raw UTF-8 and no HTML escaping,
// and nothing on the way to the wire escapes <, >, &, U+2028 or U+2029.
// A result over the cap is measured in the isolate (a string without being
// encoded, an array's text without leaving it) and answered with the very
// marker the pipeline makes from the whole JSON node would print.
func TestAResultOverTheCapIsMeasuredNotShipped(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	limit := int(r.cfg.MaxResultBytes)
	for _, code := range []string{
		`return "\u0001".repeat(2e6)`,
		`return "😀é\"\\\n".repeat(40000)`,
		`return "\ud800x".repeat(50000)`,
		`return Array.from({ length: 200000 }, (_, i) => i % 3 ? "a\tb" : i)`,
		`return Array.from({ length: 100000 }, (_, i) => ({ i }))`,
		`return { big: "x".repeat(300000) }`,
		`return "x".repeat(` + strconv.Itoa(limit-2) + `)`,
	} {
		t.Run(code, func(t *testing.T) {
			_, whole := nativeNode(t, code)
			want := capsfilter.ResultCap(json.RawMessage(whole), limit)
			res, err := r.run(t, node(code))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Result) != string(want) {
				t.Fatalf("result %.300s\nwant   %.300s", res.Result, want)
			}
		})
	}
}

func TestResultCapMeasuresUnescapedJSON(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	for _, tc := range enginetest.CapCases {
		t.Run(tc.Name, func(t *testing.T) {
			code := fmt.Sprintf(`console.log("<&>\u2028"); return %q.repeat(%d)`, tc.Unit, tc.N)
			res, err := r.run(t, node(code))
			if err != nil {
				t.Fatal(err)
			}
			wire, _ := jsonx.Marshal(res)
			if !strings.Contains(string(wire), `"stdout":"<&>`+"\u2028"+`\n"`) {
				t.Fatalf("stdout escaped on the wire: %.200s", wire)
			}
			if tc.Capped == "" {
				if want := `"` + strings.Repeat(tc.Unit, tc.N) + `"`; string(res.Result) != want {
					t.Fatalf("result changed: %d bytes, want %d: %.80s", len(res.Result), len(want), res.Result)
				}
				if !strings.Contains(string(wire), `"result":"`+tc.Unit) {
					t.Fatalf("result escaped on the wire: %.200s", wire)
				}
				return
			}
			if !strings.Contains(string(res.Result), "<omitted: result was "+tc.Capped+";") {
				t.Fatalf("marker %s", res.Result)
			}
		})
	}
}

// TestRecycledHostGivesTheNextTenantAFreshIsolate: a one-shot's host is
// recycled — a new isolate built in the same process, and only then the old
// one disposed of (the read-only heap stays shared) — and the next tenant
// on that process sees nothing the last one did: not its globals, not the
// builtins it rewrote, not the prototypes it polluted.
func TestRecycledHostGivesTheNextTenantAFreshIsolate(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolNode = 1 }, nil, nil)
	parked := func() { waitParked(t, r) }
	parked()
	before := r.eng.HostPIDs()
	if len(before) != 1 {
		t.Fatalf("host processes %v, want the pool's one", before)
	}
	polluter := mustRun(t, r, node(`globalThis.leak = "tenant A"; Object.prototype.polluted = 1;
		Array.prototype.map = () => "hijacked"; Math.random = () => 4; return typeof leak`))
	if string(polluter.Result) != `"string"` {
		t.Fatalf("the polluting run answered %s", polluter.Result)
	}
	for i := 0; i < 3; i++ {
		parked()
		res := mustRun(t, r, node(`return [typeof leak, ({}).polluted === undefined, [1, 2].map(x => x * 2), Math.random() < 1]`))
		if string(res.Result) != `["undefined",true,[2,4],true]` {
			t.Fatalf("tenant %d after the polluter saw %s", i+2, res.Result)
		}
	}
	if after := r.eng.HostPIDs(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("host processes went %v → %v: the runs were not served by the recycled host", before, after)
	}
}

// waitParked waits until the pool of one host has it parked again, so the
// next run takes that very host (a run that found it still being rebuilt
// would wait, and the pool would grow to follow that peak).
func waitParked(t *testing.T, r *rig) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for r.eng.Parked() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the pool's host never came back")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHostsGetNoneOfTheWorkersEnvironment: an isolate host started the way
// the worker starts it (HostArg, no environment of its own given) holds
// nothing of the worker's environment — no token, no credential — only the
// one setting the supervisor gives every host; and guests see V8's own
// locale and time zone whatever the worker's LANG and TZ
// (docs/behaviour.md#node-environment).
func TestHostsGetNoneOfTheWorkersEnvironment(t *testing.T) {
	t.Setenv("CODE_RUNNER_TEST_SECRET", "hunter2")
	t.Setenv("LANG", "de_DE.UTF-8")
	t.Setenv("TZ", "Europe/Berlin")
	cfg := configsvc.Defaults()
	cfg.WarmPoolNode = 1
	snap := &configsvc.Snapshot{Config: cfg}
	eng, err := New(Options{HostArgv: []string{os.Args[0], HostArg}, Registry: core.NewRegistry(nil),
		Live: func() *configsvc.Snapshot { return snap }, Log: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	deadline := time.Now().Add(30 * time.Second)
	for len(eng.HostPIDs()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the pool never started a host")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, pid := range eng.HostPIDs() {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		// GOMAXPROCS=1, and the startup snapshots' paths the engine sets.
		if len(got) != 3 || got[0] != "GOMAXPROCS=1" || !strings.HasPrefix(got[1], hostproto.SnapshotEnv+"=") ||
			!strings.HasPrefix(got[2], hostproto.RichSnapshotEnv+"=") {
			t.Fatalf("host %d environment %q, want only GOMAXPROCS=1 and the snapshots' paths", pid, got)
		}
	}
	rt, err := eng.NewRuntime(context.Background(), core.RuntimeOptions{Config: &cfg, OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Destroy()
	out, err := rt.Run(context.Background(), core.Exec{Code: `return [(1234.5).toLocaleString(), Intl.DateTimeFormat().resolvedOptions().locale, new Date(0).getTimezoneOffset()]`})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Result) != `["1,234.5","en-US",0]` {
		t.Fatalf("guest locale and time zone %s, want [\"1,234.5\",\"en-US\",0] whatever the worker's LANG and TZ", out.Result)
	}
}

// A one-shot's host counts as on its way back to the pool from the moment
// the runtime is destroyed — not from when the background recycle gets to
// run, which on a busy worker is later, while the caller borrows for its
// next call: the pool sizes itself by its borrowers and grew for both.
// GOMAXPROCS(1) keeps the background goroutine from running before the
// check.
func TestADestroyedOneShotIsNoLongerABorrower(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolNode = 1 }, nil, nil)
	for deadline := time.Now().Add(30 * time.Second); r.eng.Parked() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool never held a host")
		}
	}
	cfg := r.cfg
	rt, err := r.eng.NewRuntime(context.Background(), core.RuntimeOptions{Config: &cfg, OneShot: true, Namespace: core.NewRunNamespace()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(context.Background(), core.Exec{Code: "return 1"}); err != nil {
		t.Fatal(err)
	}
	if n := r.eng.pool.Borrowers(); n != 1 {
		t.Fatalf("a running one-shot: %d borrowers, want 1", n)
	}
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	rt.Destroy()
	if n := r.eng.pool.Borrowers(); n != 0 {
		t.Fatalf("a destroyed one-shot still counts: %d borrowers, want 0", n)
	}
}
