package node

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// Node's rules (contract §25.8–§25.11), each against the machine's node 20
// running the same code: unhandled rejections, the order of ticks and
// microtasks, import() in any code, ES module files, structured clone,
// and how code is compiled.

// nodeProcess runs code under node as the oracle harness does (the body
// of an async function in a CommonJS main module) and answers what the
// process printed and its exit status, whatever it was.
func nodeProcess(t *testing.T, code string) (stdout, stderr string, exit int) {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the differential tests need the machine's node (20) on PATH: %v", err)
	}
	dir := oracleDir(t)
	script := "(async (exports, require, module, __filename, __dirname) => {" + code + "\n})(exports, require, module, __filename, __dirname).then(() => {}, (e) => { console.error(e && e.stack || String(e)); process.exitCode = 1; });\n"
	file := filepath.Join(dir, "main.js")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, file)
	cmd.Dir = dir
	modules, _ := filepath.Abs("../../deps/jsenv/node_modules")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TZ=UTC", "LANG=C.UTF-8", "NODE_PATH=" + modules}
	var out, errBuf strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errBuf
	err = cmd.Run()
	if xe, ok := err.(*exec.ExitError); ok {
		exit = xe.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errBuf.String(), exit
}

var frameLine = regexp.MustCompile(`^\s+at `)

// errorShape is an uncaught error's text without its stack frames (whose
// file names and lines differ between the harnesses): the lines before the
// first frame and those after the last (an error's own properties).
func errorShape(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	first, last := -1, -1
	for i, l := range lines {
		if frameLine.MatchString(l) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:first], "\n") + "\n    at …\n" + strings.Join(lines[last+1:], "\n")
}

// nodeErrorText is the error node printed for an uncaught error or
// rejection: between the process banner (file:line, the source line, the
// caret, a blank line) and the "Node.js v…" trailer.
func nodeErrorText(stderr string) string {
	text := strings.TrimLeft(stderr, "\n")
	if i := strings.Index(text, "\n\nNode.js v"); i >= 0 {
		text = text[:i]
	}
	// The banner: where it was thrown, the source line, the caret — then a
	// blank line before an error, none before another value.
	if lines := strings.SplitN(text, "\n", 4); len(lines) == 4 && caretLine.MatchString(lines[2]) {
		text = strings.TrimPrefix(lines[3], "\n")
	}
	return text
}

var caretLine = regexp.MustCompile(`^\s*\^+\s*$`)

// sameFailureAsNode runs code in the sandbox and under node and compares
// stdout, whether it failed, and the shape of the error it failed with.
func sameFailureAsNode(t *testing.T, r *rig, code string) {
	t.Helper()
	wantOut, wantErr, wantExit := nodeProcess(t, code)
	res, err := r.run(t, map[string]any{"lang": "node", "code": code, "timeout_ms": 20000})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	if res.Stdout != wantOut {
		t.Errorf("stdout differs\n--- sandbox\n%s\n--- node\n%s", res.Stdout, wantOut)
	}
	// A response's exit_code is 0 or 1 (contract §3): node's other statuses
	// of a failed process (7: an uncaughtException handler threw) are 1.
	if wantExit != 0 {
		wantExit = 1
	}
	if int(res.ExitCode) != wantExit {
		t.Fatalf("exit code %d, node's %d\nsandbox stderr:\n%s\nnode stderr:\n%s", res.ExitCode, wantExit, res.Stderr, wantErr)
	}
	if wantExit != 0 {
		if got, want := errorShape(res.Stderr), errorShape(nodeErrorText(wantErr)); got != want {
			t.Errorf("the error differs from node's\n--- sandbox\n%s\n--- node\n%s", got, want)
		}
	}
}

func TestUnhandledRejectionsAsNode(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	for _, code := range []string{
		`async function main() { throw new Error("boom") } main(); console.log("after")`,
		`Promise.reject(42)`,
		`Promise.reject({ a: 1, b: [1, 2] }); console.log("printed first")`,
		`Promise.reject(Object.assign(new TypeError("with props"), { code: "E_X", extra: [1] }))`,
		`const p = Promise.reject(new Error("late")); setTimeout(() => p.catch(() => {}), 10); await new Promise((r) => setTimeout(r, 50)); console.log("not reached")`,
		`const p = Promise.reject(new Error("in time")); p.catch(() => console.log("handled")); console.log("same tick")`,
		`process.on("unhandledRejection", (r, p) => console.log("listener", r, p instanceof Promise)); Promise.reject(7); await new Promise((r) => setTimeout(r, 10)); console.log("still running")`,
		`process.on("unhandledRejection", () => { throw new Error("from the listener") }); Promise.reject(1)`,
		`new Promise((_, rej) => setTimeout(() => rej(new Error("in a timer")), 5)); await new Promise((r) => setTimeout(r, 50)); console.log("not reached")`,
		`Promise.resolve().then(() => { throw new RangeError("in a job") }); await null; console.log("after the job")`,
		`await Promise.reject(new Error("awaited"))`,
		`queueMicrotask(() => Promise.reject(undefined))`,
		// A reason whose own stack cannot be read: node's test of it throws,
		// and that throw is the uncaught error (nothing of the batch is lost).
		`const { proxy, revoke } = Proxy.revocable({}, {}); revoke(); Promise.reject(proxy); Promise.reject(new Error("real"))`,
		`const e = { message: "own stack, not an Error" }; e.stack = "Custom: own stack"; Promise.reject(e)`,
		// process's uncaughtException listeners hear both kinds, with their origin.
		`process.on("uncaughtException", (e, o) => console.log("UE", e.message, o)); setTimeout(() => { throw new Error("t") }, 1);
Promise.reject(new Error("rej")); await new Promise((r) => setTimeout(r, 20)); console.log("still running")`,
		`process.once("uncaughtException", (e) => console.log("once", e.message)); process.nextTick(() => { throw new Error("a") });
await new Promise((r) => setTimeout(r, 5)); process.nextTick(() => { throw new Error("b") }); await new Promise((r) => setTimeout(r, 5)); console.log("not reached")`,
		`process.on("uncaughtException", () => { throw new Error("from the handler") }); setTimeout(() => { throw new Error("t") }, 1); await new Promise((r) => setTimeout(r, 20))`,
	} {
		t.Run(code, func(t *testing.T) { sameFailureAsNode(t, r, code) })
	}
	// An error whose stack cannot be formatted still fails the call (node
	// prints its message and a hint about its own command line).
	res, err := r.run(t, map[string]any{"lang": "node", "code": `Error.prepareStackTrace = () => { throw new Error("pst") }; Promise.reject(new Error("x"))`})
	if err != nil || res.ExitCode != 1 || !strings.Contains(res.Stderr, "Error: x") {
		t.Fatalf("a rejection whose stack cannot be formatted: %v %+v", err, res)
	}
	// Many rejections in one macrotask cost each its own share, not the
	// square of their number (200,000 took 24 s when each left a queue by
	// shifting; node takes well under one).
	res, err = r.run(t, map[string]any{"lang": "node", "timeout_ms": 20000,
		"code": `const r = await Promise.allSettled(Array.from({ length: 200000 }, (_, i) => Promise.reject(i))); return r.length`})
	if err != nil || string(res.Result) != "200000" {
		t.Fatalf("200,000 rejections: %v %+v", err, res)
	}
}

// A rejection no one handles fails the call its code belongs to, wherever
// that code runs: a kept runtime lives on, a registered handler's call
// fails as a handler error, detached work's goes to the log.
func TestUnhandledRejectionsInEveryKindOfCall(t *testing.T) {
	r, bus := newBusRig(t, nil)
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": "globalThis.n = 1; return 1"})
	res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": `Promise.reject(new Error("kept")); return 2`})
	if err != nil || res.ExitCode != 1 || !strings.Contains(res.Stderr, "Error: kept") {
		t.Fatalf("a kept run: %v %+v", err, res)
	}
	if res := mustRun(t, r, map[string]any{"runtime_id": k.RuntimeID, "code": "return n"}); string(res.Result) != "1" {
		t.Fatalf("the kept runtime did not live on: %+v", res)
	}
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "rj::f", "lang": "node",
		"source": `async function handler(p) { if (p.fail) Promise.reject(new Error("from the handler")); return 5 }`}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Invoke(t, "rj::f", `{"fail":true}`); err == nil || !strings.Contains(err.Error(), "from the handler") {
		t.Fatalf("a handler's unhandled rejection: %v", err)
	}
	if v, err := bus.Invoke(t, "rj::f", `{}`); err != nil || string(v) != "5" {
		t.Fatalf("the handler afterwards: %s %v", v, err)
	}
	// Detached: the call answers first; the rejection later fails nothing.
	res = mustRun(t, r, map[string]any{"runtime_id": k.RuntimeID, "code": `setTimeout(() => Promise.reject(new Error("detached")), 20).unref(); return 3`})
	if string(res.Result) != "3" {
		t.Fatalf("%+v", res)
	}
	if res := mustRun(t, r, map[string]any{"runtime_id": k.RuntimeID, "code": "await new Promise((r) => setTimeout(r, 50)); return n"}); string(res.Result) != "1" {
		t.Fatalf("after the detached rejection: %+v", res)
	}
}

func TestJobOrderAsNode(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	for _, code := range []string{
		`const out = []; Promise.resolve().then(() => out.push("a")); process.nextTick(() => out.push("b")); await null; return out`,
		`const out = [];
Promise.resolve().then(() => { out.push("p1"); process.nextTick(() => out.push("t-in-p1")); Promise.resolve().then(() => out.push("p-in-p1")); });
process.nextTick(() => { out.push("t1"); Promise.resolve().then(() => out.push("p-in-t1")); process.nextTick(() => out.push("t-in-t1")); });
process.nextTick((a, b) => out.push("t2 " + a + b), 1, 2);
queueMicrotask(() => out.push("qm"));
await new Promise((r) => setTimeout(r, 20));
return out`,
		`const out = [];
setTimeout(() => { Promise.resolve().then(() => out.push("p")); process.nextTick(() => out.push("t")); out.push("timer1"); }, 1);
setTimeout(() => out.push("timer2"), 1);
await new Promise((r) => setTimeout(r, 30));
return out`,
		`const out = []; const ee = new (require("events"))();
ee.on("x", () => { process.nextTick(() => out.push("tick")); out.push("listener"); });
ee.emit("x"); out.push("after emit"); await null; return out`,
	} {
		t.Run(code, func(t *testing.T) { sameAsNode(t, r, code) })
	}
	// A tick that queues a tick forever runs into the deadline, in constant
	// memory (it ran into the memory cap first when the queue kept every
	// tick it had run).
	if _, err := r.run(t, map[string]any{"lang": "node", "timeout_ms": 6000, "code": `function again() { process.nextTick(again) } again()`}); err == nil || err.Code != core.CodeTimeout {
		t.Fatalf("endless ticks: %v", err)
	}
	sameFailureAsNode(t, r, `process.nextTick(() => { throw new Error("in a tick") }); console.log("before")`)
}

func TestImportWorksEverywhereAsNode(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchMB = 8 })
	for _, code := range []string{
		`return await new Function("return import('lodash')")().then((m) => [typeof m.default.chunk, typeof m.chunk])`,
		`return (await eval("import('node:path')")).join("a", "b")`,
		`const m = await import("dayjs"); return typeof m.default`,
		`const fs = require("fs");
fs.writeFileSync("counter.mjs", "export let count = 0; export function inc() { count++ }");
fs.writeFileSync("tla.mjs", "import { count, inc } from './counter.mjs'; inc(); export const seen = count; export const v = await Promise.resolve(41) + 1;");
const a = await import("./tla.mjs"); const c = await import("./counter.mjs");
c.inc();
return [a.seen, a.v, c.count, a === (await import("./tla.mjs"))]`,
		`const fs = require("fs");
fs.writeFileSync("meta.mjs", "export const u = import.meta.url.endsWith('/meta.mjs'); export const f = import.meta.filename.endsWith('/meta.mjs'); export const d = typeof import.meta.dirname;");
const m = await import("./meta.mjs"); return [m.u, m.f, m.d]`,
		`const fs = require("fs"); fs.writeFileSync("c.cjs", "module.exports = { x: 1, f() { return 2 } }");
const m = await import("./c.cjs"); return [m.default.x, m.default.f()]`,
		`try { await import("./missing.mjs"); } catch (e) { return e.code }`,
		`const fs = require("fs"); fs.writeFileSync("bad.mjs", "export const = 1");
try { await import("./bad.mjs"); } catch (e) { return e.name }`,
		`const fs = require("fs"); fs.writeFileSync("throws.mjs", "throw new Error('at load')");
try { await import("./throws.mjs"); } catch (e) { return e.message }`,
		// import() of a module from inside its own graph while the graph
		// links or evaluates: node loads it on a later job (these aborted
		// or faulted V8 when import() ran inside the expression).
		`const fs = require("fs"); fs.writeFileSync("self.mjs", "globalThis.inner = import('./self.mjs'); export const x = 1;");
const m = await import("./self.mjs"); return [m.x, (await globalThis.inner).x]`,
		`const fs = require("fs"); fs.writeFileSync("live.mjs", "export let x = 1; globalThis.p = import('./reader.mjs'); x = 2;");
fs.writeFileSync("reader.mjs", "import { x } from './live.mjs'; export const y = x;");
const m = await import("./live.mjs"); return [m.x, (await globalThis.p).y]`,
		`const fs = require("fs"); fs.writeFileSync("a.mjs", "import './b.mjs'; export const x = 1;");
fs.writeFileSync("b.mjs", "import './c.cjs'; export const y = 2;");
fs.writeFileSync("c.cjs", "globalThis.p = import('./d.mjs');");
fs.writeFileSync("d.mjs", "import { y } from './b.mjs'; export const z = y;");
const m = await import("./a.mjs"); return [m.x, (await globalThis.p).z]`,
		`const fs = require("fs"); fs.writeFileSync("ca.mjs", "import './cb.mjs'; export let x = 1;");
fs.writeFileSync("cb.mjs", "globalThis.q = import('./ca.mjs'); export const y = 1;");
const m = await import("./ca.mjs"); return [m.x, await globalThis.q.then(n => n.x)]`,
	} {
		t.Run(code, func(t *testing.T) { sameAsNode(t, r, code) })
	}
	// A name that is no built-in fails as contract §25.4 says, by import()
	// as by require (node's own loader says ERR_MODULE_NOT_FOUND).
	res := mustRun(t, r, node(`try { await import("no-such-package"); } catch (e) { return [e.code, e.message.startsWith("Cannot find module 'no-such-package': code-runner has no network")] }`))
	if string(res.Result) != `["MODULE_NOT_FOUND",true]` {
		t.Fatalf("%s", res.Result)
	}
}

func TestStructuredCloneAsNode(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	for _, code := range []string{
		`let m = new Map(); for (let i = 0; i < 3000; i++) m = new Map([["k", m]]); let d = 0; for (let c = structuredClone(m); c.size; c = c.get("k")) d++; return d`,
		`let l = null; for (let i = 0; i < 500000; i++) l = { next: l }; try { structuredClone(l); return "cloned" } catch (e) { return [e.name, e.message] }`,
		`const o = { d: new Date(0), r: /x/gi, m: new Map([[1, { s: new Set([2]) }]]), t: new Uint16Array([1, 2]), b: 10n, n: new Number(3), e: new RangeError("x") };
o.self = o; const c = structuredClone(o);
return [c.self === c, c.d.getTime(), c.r.flags, c.m.get(1).s.has(2), c.t[1], typeof c.b, c.n instanceof Number, c.e instanceof RangeError, c.e.message]`,
		`const ab = new ArrayBuffer(4); const c = structuredClone(ab, { transfer: [ab] }); return [ab.byteLength, c.byteLength]`,
		`const out = []; for (const v of [() => 1, Symbol("s"), new WeakMap(), Promise.resolve()]) { try { structuredClone(v); out.push("cloned") } catch (e) { out.push(e.name + ": " + e.message) } } return out`,
		`try { structuredClone() } catch (e) { return [e.name, e.code, e.message] }`,
		`try { structuredClone(1, { transfer: 5 }) } catch (e) { return [e.name, e.code, e.message] }`,
		`return [1, , 3].length === structuredClone([1, , 3]).length && !(1 in structuredClone([1, , 3]))`,
	} {
		t.Run(code, func(t *testing.T) { sameAsNode(t, r, code) })
	}
}

// nodeFile runs code as a file of its own (no harness: its first line is
// the file's first line) and answers stderr.
func nodeFile(t *testing.T, code string) string {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "x.js")
	if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command("node", file).CombinedOutput()
	return string(out)
}

var firstLineCol = regexp.MustCompile(`:1:(\d+)\)?\n`)

// Code is compiled as node compiles it: with its own length (a NUL is a
// character), its own columns on line 1, and V8's own message for code
// that ends too soon.
func TestSourceIsCompiledAsNodeCompilesIt(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	sameAsNode(t, r, "console.log(\"a\x00b\".length); // a comment with a \x00 in it\nreturn 'after the NUL'")
	for _, code := range []string{"null.x", "  const o = {}; o.f()", "throw new Error('col')"} {
		res := mustRun(t, r, node(code))
		got := firstLineCol.FindStringSubmatch(res.Stderr)
		want := firstLineCol.FindStringSubmatch(nodeFile(t, code))
		if got == nil || want == nil || got[1] != want[1] {
			t.Errorf("%s: column %v, node's %v\n%s", code, got, want, res.Stderr)
		}
	}
	for _, code := range []string{"function f() {", "foo(1, 2", "const a = [1, 2", "`unterminated", "if (x) {} else"} {
		res := mustRun(t, r, node(code))
		out := nodeFile(t, code)
		i := strings.Index(out, "SyntaxError: ")
		if i < 0 {
			t.Fatalf("node: %s", out)
		}
		want, _, _ := strings.Cut(out[i:], "\n")
		if got, _, _ := strings.Cut(res.Stderr, "\n"); got != want {
			t.Errorf("%s: %q, node's %q", code, got, want)
		}
	}
}

// When calls of one runtime overlap, the output, timers and uncaught
// errors of a continuation belong to the call whose code started it
// (contract §25.11), never to the call that happens to be running.
func TestOverlappingCallsKeepTheirOwnWork(t *testing.T) {
	r, bus := newBusRig(t, nil)
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "ov::f", "lang": "node",
		"source": `async function handler(p) {
  if (p.fail) {
    await new Promise((r) => setTimeout(r, 10));
    Promise.reject(new Error("rejected in call " + p.n));
  }
  if (p.throwLater) setTimeout(() => { throw new Error("thrown in call " + p.n) }, 15);
  await new Promise((r) => setTimeout(r, 60));
  return p.n;
}`}); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		v   string
		err error
	}
	payloads := []string{`{"n":1,"fail":true}`, `{"n":2}`, `{"n":3,"throwLater":true}`, `{"n":4}`}
	answers := make([]chan answer, len(payloads))
	for i, p := range payloads {
		answers[i] = make(chan answer, 1)
		go func(i int, p string) {
			v, err := bus.Invoke(t, "ov::f", p)
			answers[i] <- answer{string(v), err}
		}(i, p)
		time.Sleep(3 * time.Millisecond) // all four overlap: each waits 60 ms
	}
	for i, want := range []string{"rejected in call 1", "2", "thrown in call 3", "4"} {
		a := <-answers[i]
		if strings.HasPrefix(want, "rejected") || strings.HasPrefix(want, "thrown") {
			if a.err == nil || !strings.Contains(a.err.Error(), want) {
				t.Errorf("call %d: %q %v, want a failure naming %q", i+1, a.v, a.err, want)
			}
		} else if a.err != nil || a.v != want {
			t.Errorf("call %d: %q %v, want %s", i+1, a.v, a.err, want)
		}
	}
	// A handler called while a run of the same runtime is in flight: the
	// handler's output is the handler's, not the run's.
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `iii.registerFunction(iii.namespace + "echo", async (p) => { console.log("from the handler"); await null; console.log("still the handler"); return p.v * 2 }); return iii.namespace`})
	var ns string
	if err := json.Unmarshal(k.Result, &ns); err != nil {
		t.Fatal(err)
	}
	done := make(chan *core.RunResponse, 1)
	go func() {
		done <- mustRun(t, r, map[string]any{"runtime_id": k.RuntimeID, "code": `console.log("from the run"); await new Promise((r) => setTimeout(r, 200)); console.log("the run again"); return 1`})
	}()
	time.Sleep(50 * time.Millisecond)
	if v, err := bus.Invoke(t, ns+"echo", `{"v":21}`); err != nil || string(v) != "42" {
		t.Fatalf("the handler: %s %v", v, err)
	}
	if res := <-done; string(res.Result) != "1" || res.Stdout != "from the run\nthe run again\n" {
		t.Fatalf("%+v", res)
	}
}

// The environment's own code uses the intrinsics it captured before any
// tenant code ran (node's primordials): a tenant that replaces the
// methods the transform, require and the console use still gets its next
// module transformed and required, and its values printed as node prints
// them after the same replacements (node's own inspect is not primordial
// everywhere: a replaced Array.prototype.includes breaks it too).
func TestTheEnvironmentKeepsItsOwnIntrinsics(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchMB = 8 })
	replace := func(list string) string {
		return `for (const [C, names] of ` + list + `) {
  for (const name of names) C[name] = function () { throw new Error("replaced " + name) };
}
`
	}
	broad := replace(`[[Array.prototype, ["map", "join", "push", "slice", "indexOf", "forEach", "filter", "concat"]],
  [String.prototype, ["split", "replace", "slice", "indexOf", "startsWith", "endsWith", "trim", "match"]],
  [RegExp.prototype, ["exec", "test"]], [Object, ["keys", "assign", "entries"]], [JSON, ["parse", "stringify"]]]`)
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `iii.files.write("m.mjs", "export const v: number = 2"); ` + broad + `return 1`})
	res := mustRun(t, r, map[string]any{"runtime_id": k.RuntimeID, "code": `import m from "./m.mjs"; const x: number = 1; console.log("text", 1); return [m === undefined, require("./m.mjs").v + x]`})
	if res.ExitCode != 0 || string(res.Result) != "[true,3]" || res.Stdout != "text 1\n" {
		t.Fatalf("%+v", res)
	}
	// The console prints objects as node's does after the replacements
	// node's own survives.
	sameAsNode(t, r, replace(`[[Array.prototype, ["map", "join"]], [String.prototype, ["split", "replace"]], [RegExp.prototype, ["exec", "test"]]]`)+
		`console.log({ a: [1, 2] }, "text", new Map([[1, 2]]), [new Set(["s"])])`)
}

// An import whose binding the code never uses still loads its module, as
// node loads it: a name that is no module fails a run and a registration
// with node's "Cannot find module". TypeScript drops the imports nothing
// uses (as tsc does for type-only ones), in a run as in a module file.
func TestUnusedImportsLoadAsNodeLoadsThem(t *testing.T) {
	r, _ := newBusRig(t, func(c *configsvc.Config) { c.ScratchMB = 8 })
	res := mustRun(t, r, node(`import x from "no-such-pkg"; return 1`))
	if res.ExitCode != 1 || !strings.HasPrefix(res.Stderr, "Error: Cannot find module 'no-such-pkg'") {
		t.Fatalf("an unused import of no module: %+v", res)
	}
	res = mustRun(t, r, node(`import "lodash"; import { sum } from "lodash"; globalThis.seen = typeof require("lodash").chunk; return seen`))
	if res.ExitCode != 0 || string(res.Result) != `"function"` {
		t.Fatalf("unused imports of a package: %+v", res)
	}
	_, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "unused::f", "lang": "node",
		"source": "import x from 'no-such-pkg'\nexport function handler(p) { return 1 }"})
	if err == nil || !strings.Contains(err.Error(), "Cannot find module 'no-such-pkg'") {
		t.Fatalf("a registration with an unused import of no module: %v", err)
	}
	res = mustRun(t, r, node(`import x from "no-such-pkg"; const n: number = 1; return n`))
	if res.ExitCode != 0 || string(res.Result) != "1" {
		t.Fatalf("TypeScript's unused import: %+v", res)
	}
	res = mustRun(t, r, node(`const fs = require("fs");
fs.writeFileSync("types.mjs", "export const unit = 'cm';");
fs.writeFileSync("shape.mjs", "import { Shape, unit } from './types.mjs'; const s: Shape = { r: 2 }; export const text = s.r + unit;");
return (await import("./shape.mjs")).text`))
	if res.ExitCode != 0 || string(res.Result) != `"2cm"` {
		t.Fatalf("a type-only import in a TypeScript module file: %+v", res)
	}
}
