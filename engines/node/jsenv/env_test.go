package jsenv

import (
	"regexp"
	"strings"
	"testing"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

// testEnv makes an isolate and its environment; logged lines go to logs.
func testEnv(t testing.TB, sh *Shared, logs *[]string) *Env {
	t.Helper()
	e := NewUnmade(sh)
	iso, err := v8.NewIsolate(v8.Options{HeapLimit: 64 << 20, Snapshot: sh.Snapshot, Native: func(c *v8.Call) {
		op := c.Str(0)
		if op == "log" {
			if logs != nil {
				_, text, _ := strings.Cut(c.Str(1), "\x00")
				*logs = append(*logs, text)
			}
			return
		}
		if !e.Op(c, op) {
			c.Throw(v8.PlainError, "no native op "+op+" in this test")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(iso.Dispose)
	if err := e.Make(iso); err != nil {
		t.Fatal(err)
	}
	if err := e.Configure(false); err != nil {
		t.Fatal(err)
	}
	return e
}

// run runs code in e's isolate and answers its completion value's text.
func run(t testing.TB, e *Env, code string) string {
	t.Helper()
	scope := e.Iso.Mark()
	defer e.Iso.Release(scope)
	s, _, err := e.Iso.Compile(v8.Source{Code: code, Origin: "test.js"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Run()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Iso.Microtasks(); err != nil {
		t.Fatal(err)
	}
	j, err := v.JSON()
	if err != nil {
		t.Fatal(err)
	}
	return j.String()
}

// The first isolate of a process compiles the prelude from source and
// makes V8's code cache of it; every isolate after it compiles from that
// cache and gets the same environment.
func TestIsolatesWithoutASnapshotCompileThePreludeFromTheCodeCache(t *testing.T) {
	sh := NewShared(nil)
	first := testEnv(t, sh, nil)
	if first.preludeCached || len(sh.preludeCache) == 0 {
		t.Fatalf("first isolate: cached=%v, cache of %d bytes; want from source, a cache made", first.preludeCached, len(sh.preludeCache))
	}
	for i := 0; i < 2; i++ {
		e := testEnv(t, sh, nil)
		if !e.preludeCached {
			t.Fatalf("isolate %d compiled the prelude from source", i+2)
		}
		if got := run(t, e, "typeof console.log + ' ' + typeof iii.trigger + ' ' + typeof WebAssembly"); got != `"function function undefined"` {
			t.Fatalf("the prelude left %s", got)
		}
	}
}

// A cache V8 refuses (here: bytes that are not one) costs a compile from
// source, never a broken isolate, and is replaced by a good one.
func TestARejectedPreludeCacheIsRebuilt(t *testing.T) {
	sh := NewShared(nil)
	testEnv(t, sh, nil)
	bad := make([]byte, len(sh.preludeCache))
	for i := range bad {
		bad[i] = byte(i * 7)
	}
	sh.preludeCache = bad
	e := testEnv(t, sh, nil)
	if e.preludeCached {
		t.Fatal("V8 took bytes that are not a code cache")
	}
	if len(sh.preludeCache) == 0 || string(sh.preludeCache) == string(bad) {
		t.Fatal("the rejected cache was not replaced")
	}
	if e := testEnv(t, sh, nil); !e.preludeCached {
		t.Fatal("the rebuilt cache was not used")
	}
}

// TestThePreludeWritesOnlyTheProtocolsStatuses: every status prelude.js
// finishes a task with is one of hostproto's constants, which the
// supervisor's switches name.
func TestThePreludeWritesOnlyTheProtocolsStatuses(t *testing.T) {
	known := map[string]bool{}
	for _, s := range []string{hostproto.StatusOK, hostproto.StatusError, hostproto.StatusTimeout, hostproto.StatusMemory,
		hostproto.StatusQuota, hostproto.StatusDead, hostproto.StatusParse, hostproto.StatusThrew, hostproto.StatusMissing, hostproto.StatusRefused, hostproto.StatusOmitted} {
		known[s] = true
	}
	found := regexp.MustCompile(`finish\(\s*\w+\s*,\s*'([a-z:]+)'`).FindAllStringSubmatch(preludeSource, -1)
	if len(found) == 0 {
		t.Fatal("no finish(task, '<status>') call found in prelude.js: the pattern no longer matches it")
	}
	for _, m := range found {
		if !known[m[1]] {
			t.Errorf("prelude.js finishes a task with %q, which is not a hostproto status", m[1])
		}
	}
}

// WantsRich tells code that will touch the rich snapshot's units from code
// that computes with the language alone.
func TestWantsRich(t *testing.T) {
	for code, want := range map[string]bool{
		`return 1 + 1`: false,
		`console.log("hi"); return [1, 2].map(x => x)`: false,
		"console.log(`x ${1}`)":                        false,
		`console.log(obj)`:                             true,
		`console.table([{ a: 1 }])`:                    true,
		`const _ = require("lodash")`:                  true,
		`import dayjs from "dayjs"`:                    true,
		`await import("node:path")`:                    true,
		`new URL("https://a.b")`:                       true,
		`Buffer.from("x").toString("hex")`:             true,
		`crypto.randomUUID()`:                          true,
		`structuredClone({ a: 1 })`:                    true,
		`process.env.HOME`:                             true,
		`new TextEncoder().encode("x")`:                true,
		`const bufferSize = 4; return bufferSize`:      false,
		`const urls = 3, processed = 2; return urls`:   false,
	} {
		if got := WantsRich(code); got != want {
			t.Errorf("WantsRich(%q) = %v, want %v", code, got, want)
		}
	}
}
