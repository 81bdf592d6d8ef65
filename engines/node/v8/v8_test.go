package v8

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// newIso makes an isolate disposed of when the test ends.
func newIso(t testing.TB, native func(*Call)) *Isolate {
	t.Helper()
	iso, err := NewIsolate(Options{HeapLimit: 64 << 20, Native: native})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iso.Dispose)
	return iso
}

// eval compiles and runs code.
func eval(iso *Isolate, code string) (Value, error) {
	s, _, err := iso.Compile(Source{Code: code, Origin: "test.js"})
	if err != nil {
		return Value{}, err
	}
	return s.Run()
}

func mustEval(t testing.TB, iso *Isolate, code string) Value {
	t.Helper()
	v, err := eval(iso, code)
	if err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	return v
}

// Values cross both ways whole: every byte of a string (NULs, astral
// characters), numbers, booleans, bytes, JSON.
func TestValuesCrossTheBoundaryWhole(t *testing.T) {
	var got []string
	iso := newIso(t, func(c *Call) {
		got = append(got, fmt.Sprintf("%d:%q", c.Kind(0), c.Str(0)+string(c.Bytes(0))))
		c.ReturnString(c.Str(0) + "|\x00|")
	})
	native := iso.NativeFunction().Pin()
	for _, s := range []string{"", "a\x00b", "é🙂\x00", strings.Repeat("x", 1<<20)} {
		str := iso.String(s)
		if back := str.String(); back != s {
			t.Fatalf("a string of %d bytes came back as %d bytes", len(s), len(back))
		}
		if n := str.UTF8Len(); n != len(s) {
			t.Fatalf("UTF8Len %d, want %d", n, len(s))
		}
		v, err := native.Call(Value{}, str)
		if err != nil || v.String() != s+"|\x00|" {
			t.Fatalf("through a native call: %q %v", v.String(), err)
		}
	}
	if v := mustEval(t, iso, "'a\\u0000b'.length + '\\u0000'.length"); v.Int() != 4 {
		t.Fatalf("NUL in source: %v", v.Int())
	}
	// Invalid UTF-8 from Go becomes U+FFFD, as V8 decodes it.
	if s := iso.String("\xff").String(); s != "\uFFFD" {
		t.Fatalf("invalid UTF-8: %q", s)
	}
	b := iso.Bytes([]byte{0, 1, 255})
	if in, _ := b.Describe(); in.Kind != KindBytes || string(in.Bytes) != "\x00\x01\xff" {
		t.Fatalf("bytes: %+v", in)
	}
	if _, err := native.Call(Value{}, b); err != nil {
		t.Fatal(err)
	}
	if got[len(got)-1] != fmt.Sprintf("%d:%q", KindBytes, "\x00\x01\xff") {
		t.Fatalf("bytes into a native call: %s", got[len(got)-1])
	}
	for _, n := range []float64{0, -1.5, 1e300} {
		if iso.Number(n).Float() != n {
			t.Fatalf("number %v", n)
		}
	}
	j, err := iso.JSONParse(`{"a":[1,"x\u0000"],"b":null}`)
	if err != nil {
		t.Fatal(err)
	}
	text, err := j.JSON()
	if err != nil || text.String() != `{"a":[1,"x\u0000"],"b":null}` {
		t.Fatalf("JSON round trip: %q %v", text.String(), err)
	}
	if _, err := iso.JSONParse("{oops"); err == nil || !strings.Contains(err.Error(), "SyntaxError") {
		t.Fatalf("bad JSON: %v", err)
	}
}

// Exceptions cross both ways: what JavaScript throws reaches Go with its
// text, stack and place; what Go throws reaches JavaScript as the error
// kind it chose; a Go panic in a native call is an error in JavaScript,
// never a crash.
func TestExceptionsCrossBothWays(t *testing.T) {
	iso := newIso(t, func(c *Call) {
		switch c.Str(0) {
		case "type":
			c.Throw(TypeError, "bad type")
		case "range":
			c.Throw(RangeError, "out of range")
		case "panic":
			panic("a bug")
		}
	})
	_, err := eval(iso, "\n  throw new TypeError('boom')")
	var je *Error
	if !errors.As(err, &je) || je.Message != "TypeError: boom" || !strings.Contains(je.Stack, "test.js:2:9") {
		t.Fatalf("a JS throw: %#v", err)
	}
	_, err = eval(iso, "let x = ;")
	if !errors.As(err, &je) || !strings.HasPrefix(je.Message, "SyntaxError:") || je.Line != 1 || je.Column != 9 || je.Position != 8 {
		t.Fatalf("a compile error: %#v", err)
	}
	_, err = eval(iso, "throw {toString() { return 'custom' }}")
	if !errors.As(err, &je) || je.Message != "custom" || je.Stack != "" {
		t.Fatalf("a thrown object: %#v", err)
	}
	_, err = eval(iso, "throw {toString() { throw 1 }}")
	if !errors.As(err, &je) || je.Message != "unstringifiable thrown value" {
		t.Fatalf("an unprintable throw: %#v", err)
	}
	fn := mustEval(t, iso, `(native) => ['type', 'range', 'panic'].map((k) => {
		try { native(k); return 'no throw' } catch (e) { return e.constructor.name + ': ' + e.message }
	}).join('; ')`)
	v, err := fn.Call(Value{}, iso.NativeFunction())
	if err != nil {
		t.Fatal(err)
	}
	want := "TypeError: bad type; RangeError: out of range; Error: code-runner: internal error in a native call (a bug)"
	if v.String() != want {
		t.Fatalf("got %q\nwant %q", v.String(), want)
	}
}

// Handles never outlive their scope: a value whose scope was released, a
// value of another isolate, and any value of a disposed isolate are
// refused, never used.
func TestHandlesNeverOutliveTheirScope(t *testing.T) {
	var leaked Value
	iso := newIso(t, func(c *Call) { leaked = c.Value(0) })
	other := newIso(t, nil)
	outer := iso.Mark()
	kept := iso.String("kept")
	pinned := iso.String("pinned").Pin()
	inner := iso.Mark()
	gone := iso.String("gone")
	obj := mustEval(t, iso, "({a: 1})")
	iso.Release(inner)
	if _, err := gone.Describe(); err != ErrStale {
		t.Fatalf("a released string: %v", err)
	}
	if _, err := obj.Get("a"); err != ErrStale {
		t.Fatalf("a released object: %v", err)
	}
	// Slots are reused by later values: the old handle still names nothing.
	fresh := iso.String("fresh")
	if gone.String() != "" || fresh.String() != "fresh" {
		t.Fatalf("a stale handle read %q", gone.String())
	}
	if kept.String() != "kept" {
		t.Fatal("a value of the outer scope was lost")
	}
	// A value from inside a native call dies with the call.
	f := mustEval(t, iso, "(n) => n({b: 2})")
	if _, err := f.Call(Value{}, iso.NativeFunction()); err != nil {
		t.Fatal(err)
	}
	if _, err := leaked.Get("b"); err != ErrStale {
		t.Fatalf("a native call's argument used after the call: %v", err)
	}
	iso.Release(outer)
	if kept.String() != "" || pinned.String() != "pinned" {
		t.Fatalf("after the outer scope: kept %q, pinned %q", kept.String(), pinned.String())
	}
	// Another isolate's value is not this one's.
	ov := other.String("other")
	if _, err := f.Call(Value{}, ov); err != ErrStale {
		t.Fatalf("another isolate's value as an argument: %v", err)
	}
	pinned.Unpin()
	if _, err := pinned.Describe(); err != ErrStale {
		t.Fatalf("an unpinned value: %v", err)
	}
	d, err := NewIsolate(Options{})
	if err != nil {
		t.Fatal(err)
	}
	dv := d.String("x")
	d.Dispose()
	d.Dispose() // twice is harmless
	if _, err := dv.Describe(); err != ErrStale {
		t.Fatalf("a value of a disposed isolate: %v", err)
	}
	if _, err := eval(d, "1"); err != ErrGone {
		t.Fatalf("compiling in a disposed isolate: %v", err)
	}
	d.Terminate() // after dispose: nothing happens
}

// Termination stops JavaScript wherever it runs — a loop, a native call,
// a promise job, each hook, the serializer, a module's evaluation — and
// the isolate stays stopped for the host's kill until it is cancelled.
func TestTerminationStopsEveryKindOfCallback(t *testing.T) {
	spin := "() => { for (;;) {} }"
	cases := []struct {
		name, code string
		hook       Hook
		hookFn     string
	}{
		{"a loop", "for (;;) {}", -1, ""},
		{"inside a native call that calls JS", "native('reenter')", -1, ""},
		{"a promise job", "Promise.resolve().then(() => { for (;;) {} }); intr.runMicrotasks()", -1, ""},
		{"the rejection hook", "Promise.reject(1)", HookReject, spin},
		{"the import hook", "import('x')", HookImport, spin},
		{"the clone error hook", "intr.structuredClone(() => 1)", HookCloneError, spin},
		{"a serializer getter", "intr.structuredClone({ get a() { for (;;) {} } })", -1, ""},
		{"a module's evaluation", "const id = intr.moduleCompile('for (;;) {}', 'm.mjs'); intr.moduleInstantiate(id, () => 0); intr.moduleEvaluate(id)", -1, ""},
		{"a synthetic module's exports", "const id = intr.moduleSynthetic('s', { get x() { for (;;) {} } }); intr.moduleInstantiate(id, () => 0); intr.moduleEvaluate(id)", -1, ""},
		{"reading an error's text", "throw { toString() { for (;;) {} } }", -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var iso *Isolate
			iso = newIso(t, func(call *Call) {
				if call.Str(0) == "reenter" {
					if _, err := eval(iso, "for (;;) {}"); !IsTermination(err) {
						t.Errorf("the re-entered JS: %v", err)
					}
				}
			})
			global := iso.Global()
			if err := global.Set("native", iso.NativeFunction()); err != nil {
				t.Fatal(err)
			}
			if err := global.Set("intr", iso.Intrinsics()); err != nil {
				t.Fatal(err)
			}
			if c.hookFn != "" {
				if err := iso.SetHook(c.hook, mustEval(t, iso, c.hookFn)); err != nil {
					t.Fatal(err)
				}
			}
			timer := time.AfterFunc(50*time.Millisecond, iso.Terminate)
			defer timer.Stop()
			_, err := eval(iso, c.code)
			if err == nil {
				err = iso.Microtasks()
			}
			if !IsTermination(err) {
				t.Fatalf("want a termination, got %v", err)
			}
			// The host's kill stays in force: a later entry stops at once.
			if _, err := eval(iso, "1"); !IsTermination(err) {
				t.Fatalf("after a kill, the next entry: %v", err)
			}
			iso.CancelTerminate()
			if v := mustEval(t, iso, "6*7"); v.Int() != 42 {
				t.Fatal("the isolate does not run after the termination was cancelled")
			}
		})
	}
}

// The module operations refuse, with a TypeError, what V8 would abort the
// process on or fault inside: evaluating a module not linked or still
// evaluating, instantiating from inside another instantiation, evaluating
// again a module whose evaluation was terminated (V8 answers a promise that
// never settles).
func TestModuleOpsRefuseWhatV8WouldAbortOn(t *testing.T) {
	for _, c := range []struct{ name, code, want string }{
		{"not linked", `const id = intr.moduleCompile('export const x = 1', 'a.mjs'); intr.moduleEvaluate(id)`,
			"moduleEvaluate: the module is not instantiated"},
		{"linking inside linking", `const a = intr.moduleCompile('import "b"; export const x = 1', 'a.mjs');
const b = intr.moduleCompile('export const y = 1', 'b.mjs');
intr.moduleInstantiate(a, () => { intr.moduleInstantiate(a, () => b); return b; })`,
			"moduleInstantiate: a module graph is already being instantiated"},
		{"evaluating inside evaluation", `const id = intr.moduleCompile('intr.moduleEvaluate(globalThis.self)', 'a.mjs');
globalThis.self = id; intr.moduleInstantiate(id, () => 0); intr.moduleEvaluate(id);
const st = intr.moduleStatus(id); throw st[1]`,
			"moduleEvaluate: a module is being instantiated or evaluated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			iso := newIso(t, nil)
			if err := iso.Global().Set("intr", iso.Intrinsics()); err != nil {
				t.Fatal(err)
			}
			_, err := eval(iso, c.code)
			var je *Error
			if !errors.As(err, &je) || !strings.Contains(je.Message, c.want) || !strings.HasPrefix(je.Message, "TypeError") {
				t.Fatalf("want TypeError %q, got %v", c.want, err)
			}
			if v := mustEval(t, iso, "6*7"); v.Int() != 42 {
				t.Fatal("the isolate does not run after the refusal")
			}
		})
	}
	t.Run("evaluated again after a termination", func(t *testing.T) {
		iso := newIso(t, nil)
		if err := iso.Global().Set("intr", iso.Intrinsics()); err != nil {
			t.Fatal(err)
		}
		mustEval(t, iso, `globalThis.id = intr.moduleCompile('for (;;) {}', 'spin.mjs'); intr.moduleInstantiate(id, () => 0)`)
		timer := time.AfterFunc(50*time.Millisecond, iso.Terminate)
		defer timer.Stop()
		if _, err := eval(iso, "intr.moduleEvaluate(id)"); !IsTermination(err) {
			t.Fatalf("want a termination, got %v", err)
		}
		iso.CancelTerminate()
		_, err := eval(iso, "intr.moduleEvaluate(id)")
		var je *Error
		if !errors.As(err, &je) || !strings.Contains(je.Message, "the module's evaluation was stopped") {
			t.Fatalf("evaluating the stopped module again: %v", err)
		}
	})
}

// TerminateNow (process.exit) stops only the JavaScript that called: the
// isolate runs again at the next entry.
func TestTerminateNowEndsOnlyTheCallingCode(t *testing.T) {
	var iso *Isolate
	iso = newIso(t, func(c *Call) { iso.TerminateNow() })
	if err := iso.Global().Set("exit", iso.NativeFunction()); err != nil {
		t.Fatal(err)
	}
	// As the prelude's process.exit: the stop lands at the next check V8
	// makes (a call, a loop), so exit() is followed by one.
	if _, err := eval(iso, "try { exit(); for (;;) {} } finally { globalThis.after = 1 } globalThis.after2 = 1"); !IsTermination(err) {
		t.Fatalf("%v", err)
	}
	if v := mustEval(t, iso, "[typeof after, typeof after2].join()"); v.String() != "undefined,undefined" {
		t.Fatalf("code after exit ran: %s", v.String())
	}
}

// A native call cannot dispose of its own isolate.
func TestANativeCallCannotDisposeOfItsIsolate(t *testing.T) {
	var iso *Isolate
	var recovered any
	iso = newIso(t, func(c *Call) {
		defer func() { recovered = recover() }()
		iso.Dispose()
	})
	if err := iso.Global().Set("n", iso.NativeFunction()); err != nil {
		t.Fatal(err)
	}
	mustEval(t, iso, "n()")
	if recovered == nil {
		t.Fatal("Dispose inside a native call did not refuse")
	}
	if mustEval(t, iso, "1+1").Int() != 2 {
		t.Fatal("the isolate broke")
	}
}

// The heap cap ends the code that reached it (a termination, counted),
// never the process.
func TestTheHeapCapTerminatesInsteadOfCrashing(t *testing.T) {
	for _, code := range []string{
		"const a = []; for (;;) a.push({ n: a.length })",
		"let s = 'x'; const keep = []; for (;;) { s = s + s.length; keep.push(s) }",
		"const m = new Map(); for (let i = 0;; i++) m.set(i, { i })",
		"const m = new Map(); for (let i = 0;; i++) m.set(i, { i }); 1",
	} {
		iso, err := NewIsolate(Options{HeapLimit: 32 << 20})
		if err != nil {
			t.Fatal(err)
		}
		_, err = eval(iso, code)
		if !IsTermination(err) || iso.HeapLimitHits() == 0 {
			t.Fatalf("%s: %v, hits %d", code, err, iso.HeapLimitHits())
		}
		iso.Dispose()
	}
}

// Deep recursion is a RangeError, on whichever OS thread the isolate is
// entered from: the Locker moves V8's stack limit with the goroutine.
func TestDeepRecursionIsARangeErrorOnEveryThread(t *testing.T) {
	iso := newIso(t, nil)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			_, err := eval(iso, "function f(n) { return f(n + 1) + 1 } f(0)")
			if err == nil || !strings.Contains(err.Error(), "RangeError: Maximum call stack size exceeded") {
				t.Errorf("deep recursion: %v", err)
			}
		}()
		wg.Wait() // one thread at a time: an isolate has one user at a time
	}
}

// The continuation-preserved owner follows every promise job started
// under it, whichever owner is current when the job runs.
func TestTheOwnerFollowsContinuations(t *testing.T) {
	iso := newIso(t, nil)
	if err := iso.Global().Set("intr", iso.Intrinsics()); err != nil {
		t.Fatal(err)
	}
	iso.SetOwner(7)
	mustEval(t, iso, "globalThis.seen = []; globalThis.p = new Promise((r) => { globalThis.resolve = r }); p.then(() => seen.push(intr.owner())); (async () => { await p; seen.push(intr.owner()) })()")
	iso.SetOwner(9)
	mustEval(t, iso, "p.then(() => seen.push(intr.owner())); Promise.resolve().then(() => seen.push(intr.owner()))")
	iso.SetOwner(11)
	mustEval(t, iso, "resolve()")
	if err := iso.Microtasks(); err != nil {
		t.Fatal(err)
	}
	if got := mustEval(t, iso, "seen.join()").String(); got != "9,7,7,9" {
		t.Fatalf("owners seen by the jobs: %s, want 9,7,7,9 (the settled promise's job first, then p's reactions in the order they were made)", got)
	}
}

// The rejection hook hears a rejection with no handler, and a handler
// added after it.
func TestTheRejectionHookHearsNodesEvents(t *testing.T) {
	iso := newIso(t, nil)
	hook := mustEval(t, iso, "globalThis.events = []; (e, p, reason, owner) => events.push(e + ':' + reason + ':' + owner)")
	if err := iso.SetHook(HookReject, hook); err != nil {
		t.Fatal(err)
	}
	iso.SetOwner(3)
	mustEval(t, iso, "globalThis.p = Promise.reject('r')")
	mustEval(t, iso, "p.catch(() => {})")
	if got := mustEval(t, iso, "events.join()").String(); got != "0:r:3,1:undefined:3" {
		t.Fatalf("events %s", got)
	}
}

// Ten thousand isolates made and disposed of one after another leave the
// process's memory where it was.
func TestTenThousandIsolatesLeaveMemoryFlat(t *testing.T) {
	n := 10_000
	if testing.Short() {
		t.Skip("skipped in -short: 10,000 isolates take a while")
	}
	cycle := func() {
		iso, err := NewIsolate(Options{HeapLimit: 16 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if v, err := eval(iso, "[1,2,3].map(x => x * 2).join()"); err != nil || v.String() != "2,4,6" {
			t.Fatalf("%v %v", v, err)
		}
		iso.Dispose()
	}
	for i := 0; i < 500; i++ {
		cycle()
	}
	runtime.GC()
	base := rssKB()
	for i := 500; i < n; i++ {
		cycle()
	}
	runtime.GC()
	if grew := rssKB() - base; grew > 32<<10 {
		t.Fatalf("RSS grew %d KiB over %d isolates", grew, n-500)
	}
}

func rssKB() int64 {
	b, _ := os.ReadFile("/proc/self/statm")
	var size, rss int64
	fmt.Sscan(string(b), &size, &rss)
	return rss * int64(os.Getpagesize()) / 1024
}
