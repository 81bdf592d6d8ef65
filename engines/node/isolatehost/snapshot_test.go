package isolatehost

import (
	"crypto/sha256"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

// runOnce runs code as a run's code in h's isolate and answers its result
// (JSON) or fails the test.
func runOnce(t testing.TB, h *host, code string) string {
	t.Helper()
	scope := h.iso.Mark()
	defer h.iso.Release(scope)
	h.tasks[1] = &hostTask{id: 1, kind: "run", deadline: time.Now().Add(10 * time.Second)}
	h.runTask = 1
	defer func() { delete(h.tasks, 1); h.runTask = 0 }()
	h.iso.SetOwner(1)
	if err := h.runMain(1, code, 0); err != nil {
		t.Fatalf("%s: %v", code, err)
	}
	if err := h.drain(); err != nil {
		t.Fatal(err)
	}
	recs, err := h.takeDone()
	if err != nil || len(recs) != 1 || recs[0].status != "ok" {
		t.Fatalf("%s: %+v %v (uncaught %v)", code, recs, err, h.uncaught)
	}
	return recs[0].text
}

// Isolates made from one snapshot draw their own randomness: the first
// Math.random(), crypto.getRandomValues, crypto.randomUUID and uuid's v4
// of 1,000 isolates are 1,000 different values each.
func TestIsolatesDrawTheirOwnRandomness(t *testing.T) {
	h := newTestHost(t, testSnapshot(t, jsenv.Rich))
	n := 1000
	if testing.Short() {
		n = 100
	}
	seen := make([]map[string]bool, 4)
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	for i := 0; i < n; i++ {
		h.recycleForTest(t)
		if !h.iso.FromSnapshot() {
			t.Fatal("not from the snapshot")
		}
		out := runOnce(t, h, `return [String(Math.random()), Array.from(crypto.getRandomValues(new Uint8Array(16))).join(), crypto.randomUUID(), require("uuid").v4()].join("|")`)
		parts := strings.Split(strings.Trim(out, `"`), "|")
		for j, p := range parts {
			if seen[j][p] {
				t.Fatalf("isolate %d drew value %d (%s) another isolate drew first", i, j, p)
			}
			seen[j][p] = true
		}
	}
}

// Nothing a tenant does reaches a snapshot: the snapshot is made by a
// process that runs none, it is mapped read-only, and every isolate made
// from it after a tenant changed everything it could starts as the first
// did.
func TestNothingATenantDidIsInTheSnapshot(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/rich.bin"
	t.Setenv("CODE_RUNNER_V8_SNAPSHOT_KIND", string(jsenv.Rich))
	if code := makeSnapshot(path); code != 0 {
		t.Fatal("no snapshot")
	}
	before, _ := os.ReadFile(path)
	blob, err := jsenv.OpenSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	h := newTestHost(t, blob)
	probe := `return [typeof globalThis.leak, require("lodash").VERSION, typeof require("lodash").evil, typeof Array.prototype.evil,
  new URL("https://a.b/c").href, JSON.stringify({ a: 1 }), require("dayjs").locale()].join(" ")`
	h.recycleForTest(t)
	first := runOnce(t, h, probe)
	runOnce(t, h, `globalThis.leak = 1; const _ = require("lodash"); _.VERSION = "changed"; _.mixin({ evil() {} });
Array.prototype.evil = 1; URL.prototype.toString = () => "evil"; Object.defineProperty(URL.prototype, "href", { get() { return "evil" } });
JSON.stringify = () => "evil"; require("dayjs").locale("xx", {}, true); console.count("x"); process.exitCode = 0; return 1`)
	for i := 0; i < 3; i++ {
		h.recycleForTest(t)
		if got := runOnce(t, h, probe); got != first {
			t.Fatalf("isolate %d after a tenant: %s, the first: %s", i, got, first)
		}
	}
	after, _ := os.ReadFile(path)
	if sha256.Sum256(before) != sha256.Sum256(after) {
		t.Fatal("the snapshot file changed")
	}
}

// The snapshot's maker reads nothing of the clock or of randomness: code
// that would is refused, so the maker fails rather than make a snapshot
// every isolate would share such a value of.
func TestMakingASnapshotRefusesTheClockAndRandomness(t *testing.T) {
	all := jsenv.Warm
	t.Cleanup(func() { jsenv.Warm = all })
	for _, code := range []string{`crypto.randomUUID()`, `crypto.getRandomValues(new Uint8Array(4))`, `performance.now()`, `process.hrtime()`} {
		jsenv.Warm = append(append([]string{}, all...), code)
		if _, err := jsenv.MakeSnapshot(jsenv.Rich); err == nil || !strings.Contains(err.Error(), "not available while the startup snapshot is made") {
			t.Errorf("%s: %v", code, err)
		}
	}
}

// A host whose rich isolates and lean ones alternate changes blobs only
// with no isolate of the other one alive (the transform's included), and
// both kinds answer the same.
func TestAHostChangesSnapshotKindsAsItRecycles(t *testing.T) {
	lean, rich := testSnapshot(t, jsenv.Lean), testSnapshot(t, jsenv.Rich)
	h := newTestHost(t, nil)
	h.blobs = map[jsenv.Kind]*v8.Blob{jsenv.Lean: lean, jsenv.Rich: rich}
	h.recycleForTest(t)
	for i, richNext := range []bool{true, true, false, true, false, false} {
		if err := h.rebuild(64, false, richNext); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]jsenv.Kind{true: jsenv.Rich, false: jsenv.Lean}[richNext]; h.kind != want {
			t.Fatalf("step %d: kind %s, want %s", i, h.kind, want)
		}
		if got := runOnce(t, h, `import x from "lodash"; const n: number = x.sum([1, 2]); return n + new URL("https://a.b/?q=1").searchParams.get("q")`); got != `"31"` {
			t.Fatalf("step %d: %s", i, got)
		}
	}
}
