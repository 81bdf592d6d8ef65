package node

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// The JavaScript environment's new surfaces — timers, require, fs, the
// transform, process.exit — attacked as a hostile tenant would (contract
// §25, issue 47's containment list).

func TestTimersAreBoundedPerRuntime(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, node(`const ts = [];
for (let i = 0; i < 10000; i++) ts.push(setTimeout(() => {}, 1e6));
let refused;
try { setTimeout(() => {}, 1); } catch (e) { refused = e.name + ": " + e.message; }
for (const t of ts) clearTimeout(t);
const again = setTimeout(() => {}, 1); clearTimeout(again);
return refused;`))
	if !strings.HasPrefix(string(res.Result), `"RangeError: too many pending timers (limit 10000)`) {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
}

// A busy interval runs into its deadline; the worker stays responsive.
func TestASpinningIntervalRunsIntoItsDeadline(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	for _, code := range []string{
		`setInterval(() => {}, 0)`,
		`let n = 0; setInterval(() => { n++; }, 1); return "returned"`,
		`const f = () => setImmediate(f); f()`,
		`setTimeout(function again() { setTimeout(again, 0); }, 0)`,
	} {
		_, err := r.run(t, map[string]any{"lang": "node", "code": code, "timeout_ms": 300})
		if err == nil || err.Code != core.CodeTimeout {
			t.Fatalf("%q: %v", code, err)
		}
	}
	trivialStillAnswers(t, r, os.Getpid())
}

// A call answers once its promise settled and its ref'd timers ran; an
// unref'd timer does not hold it.
func TestACallWaitsForItsRefdTimersOnly(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, node(`setTimeout(() => console.log("late"), 30); const t = setTimeout(() => console.log("never"), 5000); t.unref(); return 1`))
	if res.Stdout != "late\n" || string(res.Result) != "1" {
		t.Fatalf("%q %s", res.Stdout, res.Result)
	}
	// An uncaught error in a timer fails its call, as it ends node's process.
	res = mustRun(t, r, node(`setTimeout(() => { throw new Error("in timer") }, 5); return 1`))
	if res.ExitCode != 1 || !strings.Contains(res.Stderr, "Error: in timer") {
		t.Fatalf("%+v", res)
	}
}

// A one-shot's timers go with it: the next tenant of the recycled host
// never sees them fire.
func TestATenantsTimersNeverReachTheNextTenant(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolNode = 1 }, nil, nil)
	parked := func() { waitParked(t, r) }
	parked()
	before := r.eng.HostPIDs()
	a := mustRun(t, r, node(`const t = setTimeout(() => { globalThis.leak = "A"; console.log("A's timer"); }, 20); t.unref();
setInterval(() => console.log("A's interval"), 10).unref();
require("lodash").sum = () => 666; require("lodash").evil = 1;
return 1`))
	if string(a.Result) != "1" {
		t.Fatalf("%+v", a)
	}
	for i := 0; i < 2; i++ {
		parked()
		b := mustRun(t, r, node(`await new Promise((r) => setTimeout(r, 80)); const _ = require("lodash");
return [typeof leak, _.sum([1, 2]), _.evil === undefined, crypto.getRandomValues(new Uint32Array(4)).join(","), Math.random()]`))
		if strings.Contains(b.Stdout, "A's") || !strings.HasPrefix(string(b.Result), `["undefined",3,true,`) {
			t.Fatalf("tenant B saw %s / %q", b.Result, b.Stdout)
		}
	}
	if after := r.eng.HostPIDs(); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("host processes went %v → %v: the runs were not served by the recycled host", before, after)
	}
}

// Randomness differs across tenants of one recycled host.
func TestRandomnessDiffersAcrossRecycledHosts(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolNode = 1 }, nil, nil)
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		waitParked(t, r)
		res := mustRun(t, r, node(`return [crypto.getRandomValues(new Uint8Array(16)).join(","), Math.random(), require("crypto").randomBytes(8).toString("hex"), crypto.randomUUID()]`))
		for _, part := range strings.Split(strings.Trim(string(res.Result), "[]"), ",\"") {
			if seen[part] {
				t.Fatalf("tenant %d repeated %s", i, part)
			}
			seen[part] = true
		}
	}
}

// Timers of a torn-down kept runtime never run; an unref'd timer of a kept
// runtime runs later as detached work, and one that overruns destroys it
// (expired, §22a).
func TestKeptRuntimeTimers(t *testing.T) {
	r, lb := newLoopRig(t, nil)
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `setTimeout(() => iii.trigger({ function_id: "probe::after-teardown" }), 300).unref(); return 1`})
	if _, err := r.call(t, core.FnTeardown, map[string]any{"runtime_id": k.RuntimeID}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	for _, inv := range lb.Seen() {
		if inv.FunctionID == "probe::after-teardown" {
			t.Fatal("a torn-down runtime's timer ran")
		}
	}
	k2 := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": 500, "code": `globalThis.n = 0; setInterval(() => n++, 5).unref(); return 1`})
	time.Sleep(100 * time.Millisecond)
	res, err := r.run(t, map[string]any{"runtime_id": k2.RuntimeID, "code": "return n > 3"})
	if err != nil || string(res.Result) != "true" {
		t.Fatalf("the unref'd interval did not run as detached work: %s %v", res.Result, err)
	}
	k3 := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "timeout_ms": 500, "code": `setTimeout(() => { for (;;) {} }, 20).unref(); return 1`})
	waitExpired(t, r, k3.RuntimeID, 10*time.Second)
}

// process.exit ends the call, never the runtime; exitCode fails the call.
func TestProcessExitEndsTheCallNotTheRuntime(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `globalThis.x = 5; return 1`})
	ex, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": `console.log("before"); process.exit(3); console.log("after")`})
	if err != nil || ex.ExitCode != 1 || ex.Success || ex.Stdout != "before\n" || ex.Stderr != "" {
		t.Fatalf("%+v %v", ex, err)
	}
	for _, tc := range []struct{ code, result string }{
		{`return x`, "5"},
		{`try { process.exit(0) } finally { console.log("finally ran") }`, "null"},
		{`process.exitCode = 2; return 7`, ""},
		{`return x + 1`, "6"},
	} {
		res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": tc.code})
		if err != nil {
			t.Fatalf("%q: %v", tc.code, err)
		}
		if tc.result == "" {
			if res.ExitCode != 1 {
				t.Fatalf("%q: %+v", tc.code, res)
			}
			continue
		}
		if res.ExitCode != 0 || string(res.Result) != tc.result || strings.Contains(res.Stdout, "finally") {
			t.Fatalf("%q: %+v", tc.code, res)
		}
	}
	// In a registered handler: a handler failure; the namespace lives on.
	rb, bus := newBusRig(t, nil)
	if _, err := rb.call(t, core.FnRegisterFunction, map[string]any{"function_id": "exits::f", "lang": "node",
		"source": "let calls = 0; function handler(p) { calls++; if (p.exit) process.exit(4); return calls }"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Invoke(t, "exits::f", `{"exit":true}`); err == nil || !strings.Contains(err.Error(), "process.exit(4)") {
		t.Fatalf("%v", err)
	}
	if v, err := bus.Invoke(t, "exits::f", `{}`); err != nil || string(v) != "2" {
		t.Fatalf("%s %v", v, err)
	}
}

// require, import and fs reach only the built-ins, the packages and the
// runtime's own scratch files.
func TestModulePathsStayInsideTheRuntime(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, node(`iii.files.write("ok.js", "module.exports = 1");
const out = [];
for (const p of ["../ok.js", "/etc/passwd", "/proc/self/environ", "./sub/ok.js", "/scratch/../ok.js", "..", "../../../../etc/hosts",
  "./.", "node:fs/../child_process", "lodash/../../etc/passwd", "lodash/internal/x", "@evil/pkg", "fs/promises/../../x", "./ok.js/", "file:///etc/passwd"]) {
  try { require(p); out.push("loaded " + p); } catch (e) { out.push(e.code); }
}
for (const p of ["../ok.js", "/etc/passwd"]) { try { await import(p); out.push("imported " + p); } catch (e) { out.push(e.code); } }
out.push(require("./ok.js"), require("/scratch/ok.js"));
return out;`))
	want := `["MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND",` +
		`"MODULE_NOT_FOUND","ERR_CODE_RUNNER_UNAVAILABLE","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND","MODULE_NOT_FOUND",` +
		`"ERR_MODULE_NOT_FOUND","ERR_MODULE_NOT_FOUND",1,1]`
	if string(res.Result) != want {
		t.Fatalf("got  %s\nwant %s\n%s", res.Result, want, res.Stderr)
	}
}

// The transform runs under its tenant's deadline, in an isolate whose heap
// is capped: a huge or pathological module ends the call on time — out of
// time, or too large to transform — and the worker answers on.
func TestTheTransformBurnsOnlyItsTenantsDeadline(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchMB = 8 })
	start := time.Now()
	res, err := r.run(t, map[string]any{"lang": "node", "timeout_ms": 1000, "code": `const line = "export const v%d: number = %d as number;\n";
let src = ""; for (let i = 0; src.length < 5 << 20; i++) src += line.replace("%d", i).replace("%d", i);
iii.files.write("big.mjs", src);
const m = await import("./big.mjs"); for (;;) {}`})
	tooLarge := err == nil && res.ExitCode == 1 && strings.Contains(res.Stderr, "too large to transform")
	if !tooLarge && (err == nil || err.Code != core.CodeTimeout) {
		t.Fatalf("%v %+v", err, res)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("a 1 s call took %v", took)
	}
	trivialStillAnswers(t, r, os.Getpid())
}

// What a hostile tenant tried against the environment's plumbing (a
// review of this round): none of it reaches the host facade, forges the
// worker's own answers, or leaks into the next call.
func TestTheEnvironmentsPlumbingIsOutOfReach(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	for name, tc := range map[string]struct{ code, result string }{
		"no unit hands its facade to a tenant function through caller.arguments": {`let cr = null; const o = JSON.parse;
JSON.parse = function f(s) { try { const c = f.caller; if (c && c.arguments) cr = c.arguments[3] || c.arguments[0]; } catch (_) {} return o(s); };
process; require("fs"); new URL("https://x.y"); JSON.parse = o;
return [cr === null || cr === undefined || typeof cr.native !== "function"]`, `[true]`},
		"a replaced JSON.parse does not forge fs's answers": {`const fs = require("fs"); const o = JSON.parse;
JSON.parse = () => ({ e: "forged worker text", q: true });
let code; try { fs.readFileSync("nope.txt"); } catch (e) { code = e.code; } JSON.parse = o; return code`, `"ENOENT"`},
		"a getter on Object.prototype does not forge a quota refusal": {`Object.defineProperty(Object.prototype, "q", { get() { return true; }, configurable: true });
Object.defineProperty(Object.prototype, "e", { get() { return "forged"; }, configurable: true });
let out; try { iii.files.write("a.txt", "x"); out = iii.files.readText("a.txt"); } finally { delete Object.prototype.q; delete Object.prototype.e; } return out`, `"x"`},
		"a throwing setter on Object.prototype cannot make a timer that cannot be cleared": {`Object.defineProperty(Object.prototype, "_idleTimeout", { set() { throw new Error("no"); }, configurable: true });
const t = setInterval(() => {}, 1000); delete Object.prototype._idleTimeout; clearInterval(t); return 1`, `1`},
	} {
		res, err := r.run(t, map[string]any{"lang": "node", "code": tc.code, "timeout_ms": 5000})
		if err != nil || string(res.Result) != tc.result {
			t.Errorf("%s: %v %+v", name, err, res)
		}
	}
	// A setter on Array.prototype's first index cannot swallow or forge the
	// record a call's answer is made from.
	res, err := r.run(t, map[string]any{"lang": "node", "timeout_ms": 3000, "code": `Object.defineProperty(Array.prototype, "0", { set(v) {}, get() { return 999; }, configurable: true });
return "real"`})
	if err != nil || string(res.Result) != `"real"` {
		t.Fatalf("%v %+v", err, res)
	}
	trivialStillAnswers(t, r, os.Getpid())
}

// process.exitCode belongs to the call that set it.
func TestExitCodeDoesNotOutliveItsCall(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": `return 1`})
	for i, tc := range []struct {
		code string
		exit int64
	}{
		{`setTimeout(() => { process.exitCode = 7 }, 20).unref(); return 1`, 0},
		{`await new Promise((r) => setTimeout(r, 60)); return 2`, 0},
		{`process.exitCode = 5; throw new Error("x")`, 1},
		{`return process.exitCode === undefined`, 0},
		{`process.exitCode = 3; return 1`, 1},
		{`return 4`, 0},
	} {
		res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": tc.code})
		if err != nil || res.ExitCode != tc.exit {
			t.Fatalf("call %d %q: %v %+v", i, tc.code, err, res)
		}
	}
}

// Timers: refresh() starts a timeout again (it never fires early), and a
// loop of arming and clearing holds no memory for what is gone.
func TestTimerRefreshAndChurn(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.HeapMB = 32; c.ExternalMB = 16 })
	res := mustRun(t, r, node(`const start = performance.now(); let fired;
const t = setTimeout(() => { fired = performance.now() - start; }, 200);
await new Promise((r) => setTimeout(r, 150)); t.refresh();
await new Promise((r) => setTimeout(r, 300));
return fired >= 340`))
	if string(res.Result) != "true" {
		t.Fatalf("%s", res.Result)
	}
	// 500,000 kept callbacks outgrow a 32 MiB heap; the host's schedule
	// is held to its size by TestTheScheduleForgetsWhatIsGone.
	res2, err := r.run(t, map[string]any{"lang": "node", "timeout_ms": 30000, "code": `for (let i = 0; i < 500000; i++) clearTimeout(setTimeout(() => {}, 1e9)); return 1`})
	if err != nil || string(res2.Result) != "1" {
		t.Fatalf("%v %+v", err, res2)
	}
}

// Hashing a large buffer costs about its size, not a multiple of it (it
// reaches the host in pieces).
func TestHashingALargeBufferFitsItsCaps(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res, err := r.run(t, map[string]any{"lang": "node", "timeout_ms": 30000, "code": `const c = require("crypto");
const big = Buffer.alloc(24 << 20, 0xff);
const d = await crypto.subtle.digest("SHA-256", big);
return [c.createHash("sha256").update(big).digest("hex"), Buffer.from(d).toString("hex"), c.createHmac("sha1", "k").update(big).digest("hex").length]`})
	sum := sha256.Sum256(bytes.Repeat([]byte{0xff}, 24<<20))
	want := fmt.Sprintf(`["%x","%x",40]`, sum, sum)
	if err != nil || string(res.Result) != want {
		t.Fatalf("%v %s", err, res.Result)
	}
}

// A definition answers when its code has run: timers it arms at the top
// level run later (a periodic refresh is a common pattern), and a
// definition that exits registers nothing.
func TestADefinitionDoesNotWaitForItsTimers(t *testing.T) {
	r, bus := newBusRig(t, nil)
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "tick::f", "lang": "node",
		"source": "let n = 0; setInterval(() => n++, 5); function handler() { return n }"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if v, err := bus.Invoke(t, "tick::f", `{}`); err != nil || string(v) == "0" {
		t.Fatalf("%s %v: the definition's interval did not run", v, err)
	}
	if _, err := r.call(t, core.FnRegisterFunction, map[string]any{"function_id": "tick::exits", "lang": "node",
		"source": "process.exit(0); function handler() { return 1 }"}); err == nil || !strings.Contains(err.Error(), "process.exit(0)") {
		t.Fatalf("a definition that exits: %v", err)
	}
	if bus.Has("tick::exits") {
		t.Fatal("a definition that exited left its id registered")
	}
}

// A call that ends by an uncaught error takes the timers it armed with
// it, as node's process would.
func TestACallsTimersEndWithItsUncaughtError(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": "globalThis.n = 0; return 1"})
	res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "setInterval(() => { n++; if (n === 2) throw new Error('tick') }, 5)"})
	if err != nil || res.ExitCode != 1 || !strings.Contains(res.Stderr, "Error: tick") {
		t.Fatalf("%v %+v", err, res)
	}
	time.Sleep(100 * time.Millisecond)
	res, err = r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return n"})
	if err != nil || string(res.Result) != "2" {
		t.Fatalf("the interval outlived its call's error: %v %+v", err, res)
	}
}

// The console's line cap counts \n-separated lines, whichever call wrote
// them (contract §4.3): a multi-line message, process.stdout.write.
func TestTheLineCapCountsLinesNotCalls(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	for _, code := range []string{
		`for (let i = 0; i < 600; i++) console.log("a\nb")`,
		`for (let i = 0; i < 1200; i++) process.stdout.write("x\n")`,
	} {
		res := mustRun(t, r, node(code))
		if n := strings.Count(res.Stdout, "\n"); n != 1000 || !strings.Contains(res.Stderr, "log output truncated at 1000 lines") {
			t.Errorf("%q: %d lines, stderr %q", code, n, res.Stderr)
		}
	}
}
