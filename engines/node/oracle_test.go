package node

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

// The machine's node (20) is the oracle for the JavaScript environment
// (contract §25): each snippet runs in the sandbox and under node as the
// body of an async function in a CommonJS module, and stdout and the
// result must be the same.

// nativeNode runs code under the machine's node and returns its stdout
// and the completion value as JSON (null as the sandbox maps it).
func nativeNode(t *testing.T, code string) (stdout, result string) {
	t.Helper()
	stdout, _, result = nativeNodeStreams(t, code)
	return stdout, result
}

// nativeNodeStreams is nativeNode with the stderr node wrote.
func nativeNodeStreams(t *testing.T, code string) (stdout, stderr, result string) {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("the differential tests need the machine's node (20) on PATH: %v", err)
	}
	dir := oracleDir(t)
	resPath := filepath.Join(dir, "result.json")
	script := `const __fs = require("fs");
let __out = "null";
process.on("exit", () => __fs.writeFileSync(` + jsonString(resPath) + `, __out));
(async (exports, require, module, __filename, __dirname) => {` + code + `
})(exports, require, module, __filename, __dirname).then((v) => {
  try { const s = JSON.stringify(v); __out = s === undefined ? "null" : s; } catch (_) { __out = "null"; }
}, (e) => { console.error(e && e.stack || String(e)); process.exitCode = 1; });
`
	file := filepath.Join(dir, "main.js")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, file)
	cmd.Dir = dir
	// The built-in packages resolve to the very files the build bundled.
	modules, _ := filepath.Abs("../../deps/jsenv/node_modules")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TZ=UTC", "LANG=C.UTF-8", "NODE_PATH=" + modules}
	var errBuf strings.Builder
	cmd.Stderr = &errBuf
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node failed on the oracle snippet: %v\n%s", err, errBuf.String())
	}
	b, err := os.ReadFile(resPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(out), errBuf.String(), string(b)
}

// oracleDir is a directory for node to run a snippet in, with the very
// packages the build bundled in its node_modules (ES module resolution,
// which import() takes, does not read NODE_PATH).
func oracleDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	modules, err := filepath.Abs("../../deps/jsenv/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sameAsNode runs code in the sandbox and under node and compares.
func sameAsNode(t *testing.T, r *rig, code string) {
	t.Helper()
	wantOut, wantRes := nativeNode(t, code)
	res, err := r.run(t, map[string]any{"lang": "node", "code": code, "timeout_ms": 20000})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("sandbox failed: %s", res.Stderr)
	}
	got := string(res.Result)
	if got == "" {
		got = "null"
	}
	if res.Stdout != wantOut {
		t.Errorf("stdout differs from node's\n--- sandbox\n%s\n--- node\n%s", res.Stdout, wantOut)
		diffLines(t, res.Stdout, wantOut)
	}
	if got != wantRes {
		t.Errorf("result differs from node's\n--- sandbox\n%s\n--- node\n%s", got, wantRes)
	}
}

func diffLines(t *testing.T, got, want string) {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			t.Errorf("first difference at line %d:\n sandbox: %q\n    node: %q", i+1, a, b)
			return
		}
	}
}

// consoleValues are the values whose console.log output must match node's.
var consoleValues = []string{
	`1`, `-0`, `1.5e300`, `NaN`, `-Infinity`, `10n`, `true`, `null`, `undefined`, `"str"`, `Symbol("s")`,
	`[]`, `[1, 2, 3]`, `[1, [2, [3, [4, [5]]]]]`, `new Array(5)`, `[1, , 3]`, `Array.from({length: 120}, (_, i) => i)`,
	`{}`, `{ a: 1, b: "two", c: [3] }`, `{ "a-b": 1, 2: 3 }`, `{ a: { b: { c: { d: { e: 1 } } } } }`,
	`(() => { const o = { n: 1 }; o.self = o; return o; })()`, `new Map([[1, 2], ["a", { b: 3 }]])`, `new Set([1, "x", [2]])`,
	`new Map()`, `new WeakMap()`, `new Date(0)`, `new Date(NaN)`, `/re+/gi`, `function named() {}`, `() => 1`,
	`class K {}`, `new (class Point { constructor() { this.x = 1; this.y = 2; } })()`, `Object.create(null)`,
	`new Uint8Array([1, 2, 3])`, `new Float64Array(2)`, `new Promise(() => {})`,
	// What only V8's internals tell (the binding's intrinsics).
	`Promise.resolve(1)`, `(() => { const p = Promise.reject(2); p.catch(() => {}); return p })()`,
	`new Proxy({ a: 1 }, { get() { throw new Error("trap ran") }, ownKeys() { throw new Error("trap ran") } })`,
	`new Proxy([1, 2], {})`, `new ArrayBuffer(3)`, `new DataView(new ArrayBuffer(2))`, `{ [Symbol("s")]: 1, n: 2 }`,
	`new Map([[1, 2]]).entries()`, `new Set(["a"]).values()`, `[1, 2].values()`, `(function () { return arguments })(1, 2)`,
	`Object(1n)`, `new String("s")`, `async function af() {}`, `function* gf() {}`, `new (class X extends Map {})([[1, 2]])`,
	`new Error("boom").message`, `Object.assign(new Error("x"), { code: "E_X" }).code`, `[undefined, null]`,
	`{ f() {}, g: function () {}, h: async () => {} }`, `"a\nb"`, `["a\nb", "it's"]`, `{ s: "it's \"q\"" }`,
	`Symbol.iterator`, `new Number(3)`, `new String("s")`, `new Boolean(false)`,
	`Object.freeze({ a: 1 })`, `{ get g() { return 1; }, set s(v) {} }`, `[new Map([[{ a: 1 }, [1, 2]]])]`,
	`"x".repeat(200)`, `Array.from({ length: 30 }, (_, i) => "item" + i)`, `{ a: [{ b: [{ c: [1] }] }] }`,
	`new Set()`, `[[]]`, `[{}]`, `globalThis.Math`, `JSON`, `new Proxy({ a: 1 }, {})`,
}

func TestConsoleFormatsAsNodeDoes(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	var b strings.Builder
	for _, v := range consoleValues {
		b.WriteString("console.log(" + v + ");\n")
	}
	// Format strings, several arguments, and util.format's directives.
	b.WriteString(`console.log("%s is %d years and %i days, %f%%", "Bob", 42.5, 3.9, 1.25);
console.log("%o / %O / %j", { a: [1] }, { b: { c: {} } }, { d: 1 });
console.log("%c styled", "color: red", "extra", 1);
console.log("no directive", { a: 1 }, [2], "s");
console.log("%s", Symbol("q"), 10n, null);
console.log("%d", "x", "%i", 2n);
console.info("info"); console.debug("debug");
console.dir({ a: { b: { c: { d: 1 } } } }, { depth: 0 });
console.dir({ a: { b: { c: { d: 1 } } } }, { depth: 5 });
console.group("G1"); console.log("in 1"); console.group(); console.log("in 2\nsecond line"); console.groupEnd(); console.groupEnd(); console.log("out");
console.count(); console.count(); console.count("x"); console.countReset(); console.count();
console.table([{ a: 1, b: "y" }, { a: 2, c: true }]);
console.table([[1, 2], [3, 4]]);
console.table({ r1: { c: 1 }, r2: { c: 22 } });
console.table([1, "two", { three: 3 }]);
console.table(new Map([["k", 1]]));
console.table(new Set(["v"]));
console.table([{ a: 1, b: 2 }], ["b"]);
console.table("not tabular");
console.log(new Error("with stack").stack.split("\n")[0]);
`)
	sameAsNode(t, r, b.String())
}

// The console methods that write to stderr — assert, warn, error, and
// trace's first line — write what node writes.
func TestConsoleWarnsAsNodeDoes(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	code := `console.assert(1 === 2, "math is broken");
console.assert(false);
console.assert(true, "not shown");
console.assert(false, { a: 1 }, "x");
console.assert(false, "%s and %d", "fmt", 7, "rest");
console.assert(0, [1, 2]);
console.warn("w %o", { b: [1] });
console.error(new Map([[1, 2]]), "e");
try { console.assert(false, Symbol("s")); } catch (e) { console.error("threw", e.constructor.name); }`
	_, wantErr, _ := nativeNodeStreams(t, code)
	res, err := r.run(t, map[string]any{"lang": "node", "code": code})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	if res.Stderr != wantErr {
		t.Errorf("stderr differs from node's\n--- sandbox\n%s\n--- node\n%s", res.Stderr, wantErr)
		diffLines(t, res.Stderr, wantErr)
	}
}

func TestBuiltinsAndPackagesAnswerAsNodeDoes(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	cases := map[string]string{
		"text encoding": `const te = new TextEncoder(), td = new TextDecoder();
const out = [];
for (const s of ["", "a", "é", "日本語", "😀", "\uD800", "mixed é😀x"]) out.push([...te.encode(s)], td.decode(te.encode(s)));
out.push(new TextDecoder("utf-16le").decode(new Uint8Array([104, 0, 105, 0])));
out.push(new TextDecoder("latin1").decode(new Uint8Array([0x80, 0xe9, 0x41])));
out.push(td.decode(new Uint8Array([0xff, 0x41, 0xc3])));
try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { out.push(e.name, e.code); }
const sd = new TextDecoder(); out.push(sd.decode(new Uint8Array([0xe6, 0x97]), { stream: true }) + sd.decode(new Uint8Array([0xa5])));
out.push(new TextDecoder().decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])));
out.push(te.encodeInto("héllo", new Uint8Array(4)));
return out;`,
		"base64": `const out = [];
for (const s of ["", "f", "fo", "foo", "foob", "fooba", "foobar", "\u00ff\u00fe", "hello world"]) out.push(btoa(s), atob(btoa(s)));
out.push(atob(" Zm9v YmFy "), atob("Zm8"));
for (const bad of ["!!!!", "Zm9vY", "\u0100"]) { try { out.push(bad.length === 1 ? btoa(bad) : atob(bad)); } catch (e) { out.push(e.name); } }
return out;`,
		"buffer": `const b = Buffer.from("héllo wörld");
return [b.toString("hex"), b.toString("base64"), b.toString("base64url"), b.length, Buffer.byteLength("😀"),
  Buffer.from("aGVsbG8=", "base64").toString(), Buffer.concat([Buffer.from([1, 2]), Buffer.alloc(2, 9)]).toJSON(),
  Buffer.compare(Buffer.from("a"), Buffer.from("b")), b.slice(0, 3).toString("latin1"), b.readUInt16BE(0), Buffer.isBuffer(b),
  b.equals(Buffer.from("héllo wörld")), Buffer.from([250]).readInt8(0), b.indexOf("wö"), Buffer.from("abc").toString("utf16le").length,
  String(Buffer.from("hi")), JSON.stringify(Buffer.from("hi"))];`,
		"buffer inspect": `console.log(Buffer.from("hello")); console.log([Buffer.alloc(3)]);`,
		"util": `const util = require("util");
const out = [util.format("%s=%d %j", "a", 7, { k: [1] }), util.inspect({ a: [1, { b: 2 }] }, { depth: 0 }), util.inspect("s"),
  util.inspect(new Map([[1, new Set([2])]])), util.isDeepStrictEqual({ a: [1] }, { a: [1] }), util.isDeepStrictEqual([1], ["1"]),
  util.types.isPromise(Promise.resolve()), util.types.isRegExp(/x/), util.types.isDate(new Date()), typeof util.promisify,
  util.inspect({ a: 1 }, { compact: false }), util.inspect([1, 2, 3], { maxArrayLength: 1 })];
const p = util.promisify((x, cb) => cb(null, x * 2));
out.push(await p(21));
function Old() {} util.inherits(Old, require("events").EventEmitter); out.push(typeof new Old().on);
return out;`,
		"path": `const path = require("path");
return [path.join("/a", "b", "../c", "./d"), path.resolve("/x", "y", ".."), path.basename("/p/q/file.txt", ".txt"), path.extname("a.b.c"),
  path.dirname("/a/b/c"), path.normalize("/a//b/../c/."), path.relative("/a/b/c", "/a/d"), path.parse("/home/u/f.txt"),
  path.format({ dir: "/x", base: "y.z" }), path.isAbsolute("a/b"), path.sep, path.delimiter, path.posix === path];`,
		"querystring and url": `const qs = require("querystring"); const url = require("url");
return [qs.parse("a=1&b=2&b=3&c=%20x"), qs.stringify({ a: [1, 2], b: "x y", c: "é" }), qs.escape("a b&c"), qs.unescape("a%20b"),
  url.parse("http://user:pw@host.com:8080/p/a/t/h?query=string#hash").pathname, url.resolve("http://a.com/b/c", "../d"),
  url.format({ protocol: "https", hostname: "x.com", pathname: "/y" }), url.fileURLToPath("file:///tmp/a%20b"),
  new url.URL("https://x.y/z").host, url.parse("/p?q=1", true).query.q];`,
		"url parsing": urlSnippet(),
		"events": `const EventEmitter = require("events");
const e = new EventEmitter(); const got = [];
e.on("x", (a, b) => got.push(["on", a, b])); e.once("x", (a) => got.push(["once", a]));
e.emit("x", 1, 2); e.emit("x", 3); got.push(e.listenerCount("x"), e.eventNames());
const pending = EventEmitter.once(e, "y"); e.emit("y", 9, 10);
got.push(await pending);
return got;`,
		"crypto": `const c = require("crypto");
const out = [];
for (const alg of ["md5", "sha1", "sha256", "sha384", "sha512"]) {
  out.push(c.createHash(alg).update("abc").update(Buffer.from([1, 2, 3])).digest("hex"));
  out.push(c.createHmac(alg, "key").update("message").digest("base64"));
}
out.push(c.createHash("sha256").update("é", "utf8").digest().length, c.getHashes().includes("sha256"));
out.push(c.pbkdf2Sync("pw", "salt", 1000, 16, "sha256").toString("hex"));
out.push(c.timingSafeEqual(Buffer.from("ab"), Buffer.from("ab")), c.randomBytes(8).length, typeof c.randomUUID());
const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode("abc"));
out.push(Buffer.from(d).toString("hex"));
const k = await crypto.subtle.importKey("raw", new TextEncoder().encode("key"), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
const sig = await crypto.subtle.sign("HMAC", k, new TextEncoder().encode("message"));
out.push(Buffer.from(sig).toString("hex"), await crypto.subtle.verify("HMAC", k, sig, new TextEncoder().encode("message")));
const x = c.randomInt(10); out.push(x >= 0 && x < 10);
return out;`,
		"structuredClone": `const src = { d: new Date(5), m: new Map([[1, { s: new Set([2]) }]]), r: /x/g, t: new Uint8Array([1, 2]), n: null, u: undefined, big: 10n, arr: [1, , 3] };
src.self = src;
const c = structuredClone(src);
const out = [c !== src, c.self === c, c.d instanceof Date, c.d.getTime(), c.m.get(1).s.has(2), c.r.source + c.r.flags, [...c.t], "u" in c, typeof c.big, c.arr.length];
try { structuredClone({ f() {} }); } catch (e) { out.push(e.name, e.constructor.name); }
try { structuredClone(Symbol("s")); } catch (e) { out.push(e.name); }
const e2 = structuredClone(new RangeError("r")); out.push(e2 instanceof RangeError, e2.message);
return out;`,
		"zlib": `const z = require("zlib");
const input = Buffer.from("hello hello hello hello ".repeat(20));
const out = [];
for (const [a, b] of [["gzipSync", "gunzipSync"], ["deflateSync", "inflateSync"], ["deflateRawSync", "inflateRawSync"]]) {
  const packed = z[a](input); out.push(z[b](packed).equals(input), packed.length < input.length);
}
out.push(z.deflateSync(Buffer.from("hello world")).toString("hex"), z.deflateRawSync(Buffer.from("abcabcabc")).toString("base64"));
out.push(z.inflateSync(z.deflateSync(Buffer.from("é"), { level: 9 })).toString());
out.push(z.unzipSync(z.deflateSync(Buffer.from("auto"))).toString());
return out;`,
		"assert messages": `const assert = require("assert");
const out = [];
for (const f of [() => assert.strictEqual(1, 2), () => assert.equal(1, 2, "custom msg"),
  () => assert.notStrictEqual(1, 1), () => assert.throws(() => {}), () => assert.deepEqual({ a: 1 }, { a: 1 })]) {
  try { f(); out.push("no throw"); } catch (e) { out.push([e.name, e.code, e.message.split("\n")[0], e.actual, e.expected, e.operator]); }
}
try { assert.strict.deepEqual([1, 2], [1, 2]); out.push("deep ok"); } catch (e) { out.push(e.message); }
return out;`,
		"timers order": `const out = [];
setTimeout(() => out.push("t200"), 200); // well after the interval's third run, even under load
setTimeout(() => out.push("t0"), 0);
setImmediate(() => out.push("imm"));
process.nextTick(() => out.push("tick"));
queueMicrotask(() => out.push("micro"));
Promise.resolve().then(() => out.push("then"));
const iv = setInterval(() => { out.push("iv"); if (out.filter((x) => x === "iv").length === 3) clearInterval(iv); }, 5);
await new Promise((r) => setTimeout(r, 300));
const t = setTimeout(() => {}, 1000); out.push(typeof t.ref, t.hasRef()); t.unref(); out.push(t.hasRef()); clearTimeout(t);
let refired = 0; const once = setTimeout(() => { refired++; }, 5);
await new Promise((r) => setTimeout(r, 30)); once.refresh(); await new Promise((r) => setTimeout(r, 30));
out.push(refired);
const { setTimeout: sleep } = require("timers/promises");
out.push(await sleep(5, "slept"));
return out.filter((x) => x !== "t0" && x !== "imm").concat(out.includes("t0"), out.includes("imm"));`,
		"streams and promisify": `const { Readable } = require("stream"); const util = require("util"); const { once, EventEmitter } = require("events");
const out = [];
for await (const c of Readable.from(["a", "b", "c"])) out.push(c);
out.push(await util.promisify(setTimeout)(5, "slept"), await util.promisify(setImmediate)("imm"));
out.push(util.promisify(setTimeout) === require("timers/promises").setTimeout);
function legacy(cb) { cb(null, "plain"); }
legacy[util.promisify.custom] = () => Promise.resolve("custom");
out.push(await util.promisify(legacy)(), await util.promisify((x, cb) => cb(null, x * 2))(21));
const p = util.promisify(legacy); out.push(util.promisify(p) === p);
try { const bad = () => {}; bad[util.promisify.custom] = 1; util.promisify(bad); } catch (e) { out.push(e.code, e.constructor.name); }
const e = new EventEmitter(); setTimeout(() => e.emit("go", 42), 5); out.push((await once(e, "go"))[0]);
const collected = []; Readable.from([1, 2]).on("data", (d) => collected.push(d)).on("end", () => collected.push("end"));
await new Promise((r) => setTimeout(r, 20)); out.push(collected);
return out;`,
		"late timers print before the answer": `setTimeout(() => console.log("late"), 30); console.log("early"); return 1;`,
		"abort and events": `const ac = new AbortController(); const got = [];
ac.signal.addEventListener("abort", (e) => got.push(e.type, ac.signal.aborted));
ac.abort(); got.push(ac.signal.reason.name, ac.signal.reason instanceof DOMException);
const et = new EventTarget(); et.addEventListener("ping", (e) => got.push(e.detail)); et.dispatchEvent(new CustomEvent("ping", { detail: 7 }));
const ts = AbortSignal.timeout(10); const hold = setTimeout(() => {}, 5000); // the signal's own timer is unref'd, as in node
await new Promise((r) => ts.addEventListener("abort", r)); clearTimeout(hold); got.push(ts.reason.name);
got.push(AbortSignal.abort("why").reason, new DOMException("m", "NotFoundError").code);
const b = new Blob(["ab", new Uint8Array([99])], { type: "Text/Plain" }); got.push(b.size, b.type, await b.text(), await b.slice(1).text());
return got;`,
		"process": `return [process.platform, process.argv.length, typeof process.env, typeof process.cwd(), typeof process.hrtime.bigint(), typeof process.nextTick,
  Array.isArray(process.hrtime()), typeof process.memoryUsage().heapUsed, typeof performance.now(), performance.now() >= 0, typeof require("os").EOL];`,
		"packages": `const _ = require("lodash");
const { format, addDays } = require("date-fns");
const dayjs = require("dayjs");
const utc = require("dayjs/plugin/utc");
const { z } = require("zod");
const YAML = require("yaml");
const Papa = require("papaparse");
const { marked } = require("marked");
const Decimal = require("decimal.js");
const { validate: uuidValidate } = require("uuid");
const Ajv = require("ajv");
const { evaluate } = require("mathjs");
const { XMLParser } = require("fast-xml-parser");
const { diffLines } = require("diff");
const semver = require("semver");
dayjs.extend(utc);
const ajv = new Ajv();
const schema = z.object({ n: z.number().int(), s: z.string().min(2) });
return [
  _.chunk([1, 2, 3, 4, 5], 2), _.groupBy(["one", "two", "three"], "length"), _.camelCase("Foo Bar"), require("lodash/map")([1, 2], (x) => x * 3),
  format(addDays(new Date(Date.UTC(2024, 0, 30)), 3), "yyyy-MM-dd"), dayjs.utc("2024-02-28T12:00:00Z").add(1, "day").format("YYYY-MM-DD HH:mm"),
  schema.safeParse({ n: 1, s: "ab" }).success, schema.safeParse({ n: 1.5, s: "a" }).error.issues.length,
  YAML.parse("a: 1\nb: [x, y]\n"), YAML.stringify({ k: [1, 2] }), Papa.parse("a,b\n1,2", { header: true }).data, marked.parse("# T\n\n*x*"),
  new Decimal("0.1").plus("0.2").toString(), uuidValidate("9b1deb4d-3b7d-4bad-9bdd-2b0d7b3dcb6d"),
  ajv.validate({ type: "object", required: ["a"] }, { a: 1 }), evaluate("sqrt(16) + 2^3"), new XMLParser().parse("<r><a>1</a><a>2</a></r>"),
  diffLines("a\nb\n", "a\nc\n").map((p) => [!!p.added, !!p.removed, p.value]), semver.satisfies("1.2.3", "^1.0.0"), semver.inc("1.2.3", "minor"),
];`,
	}
	for name, code := range cases {
		t.Run(name, func(t *testing.T) { sameAsNode(t, r, code) })
	}
}

// urlSnippet parses a few hundred URLs (WHATWG) and returns their parts.
func urlSnippet() string {
	return `const bases = ["http://example.com", "https://user:pa ss@Example.COM:443/a/b?c#d", "file:///etc/x"];
const rels = ["", "/", "a", "../b", "./c/../d", "?q=1", "#f", "//other.org/p", "http://[::1]:80/x", "https://xn--nxasmq6b.com",
  "https://ünïcode.example/ä?ö=ü#ß", "mailto:a@b.c", "data:text/plain,hi", "javascript:alert(1)", "ws://h/p", "http://h:0/",
  "http://h:65536/", "http://1.2.3.4/", "http://0x7f.1/", "http://256.0.0.1/", "http://a b/", "http://%41.com/", "HTTP://H/%7e/%2F",
  "http://h/a/./b/../../c", "http://h/?a=1&b=%20&c=+", "blob:https://a.b/uuid", "http://h/\\\\back", "  http://trim.me/  ",
  "http://h/p?x=1#y#z", "https://h:8443", "foo://bar/baz", "http://user@/", "http://h/%zz", "http://h/😀", "urn:isbn:0451450523"];
const out = [];
for (const base of bases) for (const rel of rels) {
  try {
    const u = new URL(rel, base);
    out.push([u.href, u.protocol, u.username, u.password, u.host, u.hostname, u.port, u.pathname, u.search, u.hash, u.origin]);
  } catch (e) { out.push(["error", e.name, e.code]); }
}
const sp = new URLSearchParams("a=1&b=2&a=3&c=%20&d=é");
sp.append("e", "x y"); sp.sort();
out.push(sp.toString(), sp.getAll("a"), [...sp.keys()], sp.has("c"), URL.canParse ? URL.canParse("nope") : "n/a");
out.push(new URLSearchParams({ k: "v", w: "ü" }).toString(), Object.fromEntries(new URLSearchParams("x=1&y=2")));
return out;`
}

// fs reads and writes the runtime's scratch directory with node's shapes
// and error codes; everything outside it fails without touching the host.
// ES module idioms answer as node does: import.meta (url, filename,
// dirname) in module syntax, and code that declares the CommonJS wrapper's
// own names — const __dirname = path.dirname(fileURLToPath(import.meta.url))
// — as a run's code, a .mjs module file and a .js one. node runs the same
// text as real files; paths are compared by shape, as node's are its temp
// directory's.
func TestESModuleIdiomsAnswerAsNodeDoes(t *testing.T) {
	esm := `import { fileURLToPath } from "url";
import path from "path";
const __filename = fileURLToPath(import.meta.url);
const __dirname = path.dirname(__filename);
export const shapes = [typeof __filename, __dirname === path.dirname(__filename), import.meta.url.startsWith("file:///"),
  import.meta.filename === __filename, import.meta.dirname === __dirname, import.meta === import.meta, typeof import.meta,
  Object.keys(import.meta), Object.getPrototypeOf(import.meta), import.meta.resolve("./m.js") === new URL("./m.js", import.meta.url).href,
  import.meta.resolve("node:fs"), import.meta.resolve("path")];
const cfg = { import: { meta: "a property" } }; // property names are not import.meta
class K { constructor() { this.made = true; } }
const meta = import.meta; meta.K = K;
console.log(JSON.stringify(shapes), cfg.import.meta, cfg?.import.meta, new import.meta.K().made, "import.meta in a string");
`
	// (node then takes the file for an ES module, where require and the
	// rest are undefined; here the other names stay: docs/behaviour.md.)
	cjs := `const __filename = "mine"; let exports = 3; const module = { id: "own" };
console.log(__filename, exports, module.id);
`
	main := `import("./e.mjs").then(() => require("./f.js"));`
	dir := t.TempDir()
	for name, text := range map[string]string{"e.mjs": esm, "f.js": cjs, "main.js": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("node", "main.js")
	cmd.Dir = dir
	want, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, want)
	}
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, map[string]any{"lang": "node", "code": `const fs = require("fs");
fs.writeFileSync("e.mjs", ` + jsonString(esm) + `);
fs.writeFileSync("f.js", ` + jsonString(cjs) + `);
await import("./e.mjs"); require("./f.js");`})
	if res.Stdout != string(want) {
		t.Fatalf("module files:\n--- sandbox\n%s%s\n--- node\n%s", res.Stdout, res.Stderr, want)
	}
	// The same module text as a run's code.
	res = mustRun(t, r, map[string]any{"lang": "node", "code": esm})
	if first, _, _ := strings.Cut(string(want), "\n"); res.Stdout != first+"\n" {
		t.Fatalf("as a run's code:\n--- sandbox\n%s\n--- node\n%s", res.Stdout, first)
	}
	res = mustRun(t, r, map[string]any{"lang": "node", "code": "const __dirname = 'own'; const exports = 1; return [__dirname, exports]"})
	if string(res.Result) != `["own",1]` {
		t.Fatalf("plain code declaring the wrapper's names: %s %s", res.Result, res.Stderr)
	}
	// Code that closes a run's wrapper early and throws V8's text is not
	// compiled again (its top level ran once); a module file cannot close
	// its wrapper (a function body, as node compiles it): its `});` is a
	// SyntaxError and its top level never runs.
	k := mustRun(t, r, map[string]any{"lang": "node", "keep": true, "code": "globalThis.n = 0; return 0"})
	for _, code := range []string{
		"}); globalThis.n++; throw new SyntaxError(\"Identifier 'exports' has already been declared\"); (async () => {",
		`require("fs").writeFileSync("h.js", "}); globalThis.n++; throw new SyntaxError(\"Identifier 'exports' has already been declared\"); (function () {"); require("./h.js")`,
	} {
		if res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": code}); err != nil || res.ExitCode != 1 {
			t.Fatalf("%v %+v", err, res)
		}
	}
	if res := mustRun(t, r, map[string]any{"runtime_id": k.RuntimeID, "code": "return n"}); string(res.Result) != "1" {
		t.Fatalf("a thrown error was taken for a compile error: the top levels ran %s times, want 1 (the run's)", res.Result)
	}
	// Declaring the stand-in name as well ends in V8's own error, not a
	// loop, in a run and in a module file.
	for _, code := range []string{"const exports = 1; const __crUnused0 = 2; return 1",
		`require("fs").writeFileSync("g.js", "const exports = 1; const __crUnused0 = 2;"); require("./g.js")`} {
		res, err := r.run(t, map[string]any{"lang": "node", "code": code})
		if err != nil || res.ExitCode != 1 || !strings.Contains(res.Stderr, "SyntaxError: Identifier '__crUnused0' has already been declared") {
			t.Fatalf("%v %+v", err, res)
		}
	}
}

func TestFsIsTheScratchDirectory(t *testing.T) {
	r, _ := newLoopRig(t, nil)
	res := mustRun(t, r, map[string]any{"lang": "node", "code": `const fs = require("fs"), fsp = require("fs/promises");
const out = [];
fs.writeFileSync("a.txt", "héllo");
fs.appendFileSync("./a.txt", " more");
out.push(fs.readFileSync("/scratch/a.txt", "utf8"), fs.readFileSync("a.txt").length, fs.existsSync("a.txt"), fs.existsSync("nope"));
out.push(fs.statSync("a.txt").size, fs.statSync("a.txt").isFile(), fs.statSync("/scratch").isDirectory());
await fsp.writeFile("b.json", JSON.stringify({ k: 1 }));
out.push(JSON.parse(await fsp.readFile("b.json", "utf8")).k, fs.readdirSync(".").sort(), fs.readdirSync("/scratch", { withFileTypes: true })[0].isFile());
fs.renameSync("b.json", "c.json"); fs.copyFileSync("c.json", "d.json"); fs.unlinkSync("c.json");
out.push(fs.readdirSync(".").sort());
for (const p of ["../etc/passwd", "/etc/passwd", "/proc/self/environ", "sub/x", "/scratch/../x", "..", "/", "with space.txt", "nope.txt", "/scratch/sub/x"]) {
  try { fs.readFileSync(p); out.push("read " + p); } catch (e) { out.push(e.code); }
}
try { fs.mkdirSync("dir"); } catch (e) { out.push(e.code, e.syscall); }
try { fs.readFileSync("missing"); } catch (e) { out.push(e.message, e.errno, e.path); }
await new Promise((res) => fs.readFile("a.txt", "utf8", (err, d) => { out.push(err, d); res(); }));
try { fs.writeFileSync("big", "x".repeat(9 << 20)); } catch (e) { out.push(e.code); }
out.push(require("./d.json").k);
fs.writeFileSync("m.js", "exports.twice = (n) => n * 2; exports.name = __filename;");
fs.writeFileSync("e.mjs", "import { twice } from './m.js';\nexport const four: number = twice(2);");
out.push(require("./m").twice(4), require("./m.js").name, (await import("./e.mjs")).four);
return out;`})
	want := `["héllo more",11,true,false,11,true,true,1,["a.txt","b.json"],true,["a.txt","d.json"],` +
		`"EACCES","EACCES","EACCES","ENOENT","EACCES","EACCES","EACCES","EACCES","ENOENT","ENOENT","EPERM","mkdir",` +
		`"ENOENT: no such file or directory, open 'missing'",-2,"missing",null,"héllo more","ENOSPC",1,8,"/scratch/m.js",4]`
	if string(res.Result) != want || res.ExitCode != 0 {
		t.Fatalf("got %s\nwant %s\nstderr %s", res.Result, want, res.Stderr)
	}
	res = mustRun(t, r, map[string]any{"lang": "node", "code": `const fs = require("fs"); try { fs.readFileSync("x") } catch (e) { return e.code }`})
	if string(res.Result) != `"ENOENT"` {
		t.Fatalf("%s", res.Result)
	}
}

func TestFsWithoutScratchIsRefused(t *testing.T) {
	r, _ := newLoopRig(t, func(c *configsvc.Config) { c.ScratchMB = 0 })
	res := mustRun(t, r, node(`const fs = require("fs"); const out = []; for (const f of [() => fs.readFileSync("a"), () => fs.writeFileSync("a", "x"), () => fs.readdirSync(".")]) { try { f(); out.push("ok") } catch (e) { out.push(e.code) } } return out`))
	if string(res.Result) != `["EACCES","EACCES","EACCES"]` {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cond()
}

// readline and process.stdin answer as under `node prog.js < /dev/null`:
// input ends at once, so a program that reads its input runs and sees
// none; readline reads a stream of the program's own line by line, with
// node's line endings, questions, async iteration and errors.
func TestReadlineAndStdinAnswerAsNodeDoes(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	for name, code := range map[string]string{
		"stdin ends": `let d = ""; process.stdin.setEncoding("utf8"); process.stdin.on("data", c => d += c);
await new Promise(r => process.stdin.on("end", r)); return [d, process.stdin.isTTY ?? null, typeof process.stdin.setRawMode, process.stdin.readableEnded, process.stdin.fd]`,
		"lines of stdin": `const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
const seen = [];
rl.on("line", l => seen.push(l));
await new Promise(r => rl.on("close", r));
return [seen, rl.terminal, rl.line, rl.cursor ?? null]`,
		"lines of stdin, iterated": `const lines = [];
for await (const l of require("readline").createInterface({ input: process.stdin })) lines.push(l);
return lines`,
		"line endings": `const { Readable } = require("stream");
const readline = require("readline");
const out = [];
const rl = readline.createInterface({ input: Readable.from(["a\nb", "c\r", "\nd\re\r\n", "", "ta", "il"]), crlfDelay: Infinity });
rl.on("line", l => out.push(l));
await new Promise(r => rl.on("close", r));
return out`,
		"prompt, iteration, question": `const { Readable, PassThrough } = require("stream");
const readline = require("readline");
const pt = new PassThrough();
const rl = readline.createInterface({ input: pt, output: process.stdout, prompt: "$ " });
rl.prompt();
setTimeout(() => { pt.write("one\ntw"); pt.end("o\n"); }, 5);
const got = [];
for await (const l of rl) got.push(l);
console.log();
const rp = require("readline/promises").createInterface({ input: Readable.from(["yes\nno\n"]), output: process.stdout });
const ans = await rp.question("ok? ");
console.log();
const cb = await new Promise(r => readline.createInterface({ input: Readable.from(["maybe\n"]) }).question("", r));
let err; try { rl.question("x", () => {}) } catch (e) { err = [e.code, e.message, e.name] }
let perr; await rp.question("again? ").catch(() => {}); rp.close(); await rp.question("x").catch(e => { perr = e.code });
return { got, ans, cb, err, perr, keys: Object.keys(readline).sort(), pkeys: Object.keys(readline.promises).sort() }`,
		"breaking out closes": `const { Readable } = require("stream");
const rl = require("node:readline").createInterface({ input: Readable.from(["a\nb\nc\n"]) });
let closed = false; rl.on("close", () => closed = true);
for await (const l of rl) { if (l === "a") break; }
let err; try { rl.write("x") } catch (e) { err = e.code }
return [closed, err]`,
		"cursor controls": `const readline = require("readline");
const w = []; const s = { write(d, cb) { w.push(d); if (cb) cb(); return true; } };
readline.cursorTo(s, 2); readline.cursorTo(s, 2, 3); readline.moveCursor(s, -1, 2); readline.moveCursor(s, 3, -4);
readline.clearLine(s, -1); readline.clearLine(s, 0); readline.clearLine(s, 1); readline.clearScreenDown(s);
return [w, readline.clearLine(null, 0), readline.cursorTo(s), readline.moveCursor(s, 0, 0), w.length]`,
	} {
		t.Run(name, func(t *testing.T) { sameAsNode(t, r, code) })
	}
}

// Buffer's encodings round-trip and decode leniently as node's do: every
// length's padding, both alphabets, whitespace and junk skipped, the first
// '=' ending the data, hex stopping at its first bad pair.
func TestBufferEncodingsAnswerAsNodeDoes(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	sameAsNode(t, r, `const out = [];
for (const n of [0, 1, 2, 3, 4, 5, 100, 1001]) {
  const b = Buffer.from(Array.from({ length: n }, (_, i) => (i * 37 + 11) & 255));
  for (const enc of ["base64", "base64url", "hex", "latin1", "utf16le"]) {
    const s = b.toString(enc);
    out.push(enc === "latin1" || enc === "utf16le" ? s.length : s, Buffer.from(s, enc).equals(b));
  }
}
for (const s of ["QUJD", "QUJD=", "QU=JD", "Q U J D", "QUJ", "QU", "Q", "-_-_", "+/+/", "YWJj\nZGVm", "YWJjZA==YWJj", "!!!!QUJD", "QUJDRA"]) {
  out.push(Buffer.from(s, "base64").toString("hex"), Buffer.from(s, "base64url").toString("hex"));
}
for (const s of ["00ff", "0g", "abc", "ABCDEF", "zz11"]) out.push(Buffer.from(s, "hex").toString("hex"));
out.push(Buffer.from("héllo 😀", "latin1").toString("hex"), Buffer.from("héllo 😀", "ascii").toString("hex"), Buffer.from("\ud800x").toString("hex"));
return out`)
}

// zlib takes node's options and honours its limits as node does: a
// one-step call stops at maxOutputLength with node's RangeError (a bomb
// is an error to catch, not a killed runtime), options are checked with
// node's errors in node's order, info answers the engine, crc32 and the
// constants are there; the callback forms answer the same.
func TestZlibAnswersAsNodeDoes(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for i := 0; i < 256; i++ { // 256 MiB of zeros, twice the default memory cap
		_, _ = zw.Write(zeros)
	}
	_ = zw.Close()
	sameAsNode(t, r, `const zlib = require("zlib");
const bomb = Buffer.from("`+base64.StdEncoding.EncodeToString(bomb.Bytes())+`", "base64");
const out = [];
const tryit = (f) => { try { const r = f(); return Buffer.isBuffer(r) ? ["buf", r.length, r.subarray(0, 8).toString("hex")] : r && r.buffer ? ["info", r.buffer.length, r.engine.constructor.name] : ["other", r]; } catch (e) { return ["err", e.name, e.code, e.message, e.errno ?? null]; } };
const data = Buffer.from("hello world ".repeat(50000));
const gz = zlib.gzipSync(data), df = zlib.deflateSync(data), raw = zlib.deflateRawSync(data);
out.push(tryit(() => zlib.gunzipSync(bomb, { maxOutputLength: 1e6 })));
for (const f of ["gunzipSync", "unzipSync"]) out.push(tryit(() => zlib[f](gz, { maxOutputLength: 1e5 })));
out.push(tryit(() => zlib.inflateSync(df, { maxOutputLength: 1e5 })), tryit(() => zlib.inflateRawSync(raw, { maxOutputLength: 1e5 })));
out.push(tryit(() => zlib.gunzipSync(gz, { maxOutputLength: 600000 })), tryit(() => zlib.gunzipSync(gz, { maxOutputLength: 599999 })));
for (const o of [{ maxOutputLength: 0 }, { maxOutputLength: "x" }, { maxOutputLength: 2 ** 53 }, { maxOutputLength: Infinity }, { maxOutputLength: NaN },
  { level: 10 }, { level: -2 }, { level: 1.5 }, { windowBits: 7 }, { windowBits: 16 }, { memLevel: 0 }, { strategy: 5 }, { chunkSize: 16 }, { chunkSize: null },
  { finishFlush: 6 }, { flush: -1 }, { dictionary: "d" }, { level: 10, chunkSize: 1 }]) {
  out.push(tryit(() => zlib.deflateSync(data, o)));
}
out.push(tryit(() => zlib.gzipSync(data, { windowBits: 8 })), tryit(() => zlib.deflateRawSync(data, { windowBits: 8 })));
for (const level of [0, 1, 9, -1]) out.push(tryit(() => zlib.deflateSync(data, { level })));
out.push(tryit(() => zlib.inflateSync(df.subarray(0, 100))), tryit(() => zlib.inflateSync(df.subarray(0, 100), { finishFlush: zlib.constants.Z_SYNC_FLUSH })));
out.push(tryit(() => zlib.gunzipSync(gz, { chunkSize: 64 })), tryit(() => zlib.deflateSync(data, { info: true })), tryit(() => zlib.gunzipSync(gz, { info: true })));
out.push(tryit(() => zlib.deflateSync(data, { memLevel: 9, strategy: zlib.constants.Z_HUFFMAN_ONLY })));
const dict = Buffer.from("hello world");
out.push(tryit(() => zlib.inflateSync(zlib.deflateSync(data, { dictionary: dict }), { dictionary: dict })));
out.push(tryit(() => zlib.inflateSync(Buffer.from("garbage"))), tryit(() => zlib.gunzipSync(df)), tryit(() => zlib.deflateSync(42)));
out.push(tryit(() => zlib.gunzipSync(new Uint8Array(gz))), tryit(() => zlib.gunzipSync(gz.buffer.slice(gz.byteOffset, gz.byteOffset + gz.length))));
out.push(zlib.crc32("hello"), zlib.crc32(Buffer.from("hello")), zlib.crc32("world", zlib.crc32("hello ")), zlib.crc32(""), tryit(() => zlib.crc32(1)));
out.push(zlib.constants.Z_BEST_COMPRESSION, zlib.constants.Z_DEFAULT_CHUNK, zlib.Z_SYNC_FLUSH, zlib.codes.Z_DATA_ERROR);
out.push(await new Promise((res) => zlib.gunzip(bomb, { maxOutputLength: 1000 }, (e, b) => res(e ? [e.code, e.message] : b.length))));
out.push(await new Promise((res) => zlib.deflate("abc", (e, b) => zlib.inflate(b, (e2, c) => res(String(c))))));
return out`)
}
