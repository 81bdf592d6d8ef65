package isolatehost

import (
	"os"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
	"github.com/code-runner-go/code-runner/internal/benchutil"
)

// newTestHost is a host with no pipes, enough to build and recycle
// isolates in this process, from snapshot (nil: the environment built
// without one).
func newTestHost(t testing.TB, snapshot *v8.Blob) *host {
	t.Helper()
	h := &host{tasks: map[int64]*hostTask{}, calls: map[int64]bool{}, mem: newSelfMemory(), callOwner: map[int64]int64{}}
	h.shared = jsenv.NewShared(nil)
	h.blobs = map[jsenv.Kind]*v8.Blob{}
	if snapshot != nil {
		h.blobs[jsenv.Lean] = snapshot
	}
	h.dropRunState()
	t.Cleanup(func() {
		if h.iso != nil {
			h.iso.Dispose()
		}
		h.shared.Close()
	})
	return h
}

// recycleForTest builds the next isolate and disposes of the last, as "reset" does.
func (h *host) recycleForTest(t testing.TB) {
	t.Helper()
	if err := h.rebuild(64, false, false); err != nil {
		t.Fatal(err)
	}
}

// testSnapshot makes a startup snapshot of kind in this process (tests
// only: a worker makes it in a host process of its own). A process makes
// its isolates from one blob: a test uses one.
func testSnapshot(t testing.TB, kind jsenv.Kind) *v8.Blob {
	t.Helper()
	dir := t.TempDir()
	path := dir + "/snapshot.bin"
	t.Setenv(hostproto.SnapshotKindEnv, string(kind))
	if code := makeSnapshot(path); code != 0 {
		t.Fatalf("making the snapshot exited %d", code)
	}
	blob, err := jsenv.OpenSnapshot(path)
	if err != nil {
		t.Fatal(err)
	}
	return blob
}

// Isolates built from the snapshot and without it give guest code the same
// environment, and a recycled host's next isolate shows nothing of the
// last tenant's globals.
func TestIsolatesFromTheSnapshotAndWithoutItAreTheSame(t *testing.T) {
	snap := testSnapshot(t, jsenv.Rich)
	probe := "const seen = typeof globalThis.leftover; globalThis.leftover = 1; [typeof console.log, typeof iii.trigger, typeof WebAssembly, typeof URL, typeof require('lodash').chunk, seen].join(' ')"
	var answers []string
	for _, s := range []*v8.Blob{snap, nil} {
		// One blob at a time: a process's isolates share V8's read-only
		// heap, which comes from one blob.
		h := newTestHost(t, s)
		for i := 0; i < 3; i++ {
			h.recycleForTest(t)
			if got := h.iso.FromSnapshot(); got != (s != nil) {
				t.Fatalf("from the snapshot: %v, want %v", got, s != nil)
			}
			scope := h.iso.Mark()
			sc, _, err := h.iso.Compile(v8.Source{Code: probe, Origin: "probe.js"})
			if err != nil {
				t.Fatal(err)
			}
			v, err := sc.Run()
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, v.String())
			h.iso.Release(scope)
		}
		h.iso.Dispose()
		h.iso = nil
	}
	for _, a := range answers {
		if a != "function function undefined function function undefined" {
			t.Fatalf("answers %q", answers)
		}
	}
}

// A snapshot file that cannot be used — missing, corrupt, truncated, not
// one — leaves the host a warning to log, and its isolates are built
// without it.
func TestASnapshotThatFailsToLoadIsWarnedAboutAndLeftOut(t *testing.T) {
	dir := t.TempDir()
	good := dir + "/good.bin"
	if code := makeSnapshot(good); code != 0 {
		t.Fatal("no snapshot")
	}
	file, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := append([]byte(nil), file...)
	corrupt[len(corrupt)-100] ^= 0xff
	cases := map[string][]byte{"corrupt": corrupt, "truncated": file[:len(file)/2], "not one": []byte("hello"), "empty": nil}
	for name, b := range cases {
		path := dir + "/" + name
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		h := newTestHost(t, nil)
		if warn := h.loadSnapshots(map[jsenv.Kind]string{jsenv.Lean: path}); warn == "" || h.blobs[jsenv.Lean] != nil {
			t.Fatalf("%s: warning %q, snapshot kept: %v", name, warn, h.blobs[jsenv.Lean] != nil)
		}
		h.recycleForTest(t)
		if h.iso.FromSnapshot() {
			t.Fatalf("%s: the isolate came from the snapshot", name)
		}
	}
	h := newTestHost(t, nil)
	if warn := h.loadSnapshots(map[jsenv.Kind]string{jsenv.Lean: dir + "/missing"}); warn == "" {
		t.Fatal("a missing snapshot gave no warning")
	}
	if warn := h.loadSnapshots(map[jsenv.Kind]string{jsenv.Lean: good}); warn != "" || h.blobs[jsenv.Lean] == nil {
		t.Fatalf("the good snapshot: %q", warn)
	}
}

// BenchmarkRecycle: one host rebuilding its isolate as "reset" does (a new
// isolate and its environment, then the old one disposed of): from the
// startup snapshot, and as baselines in the same run without it, with the
// prelude from its code cache and from source; alternating blocks of 20
// so a drift of the machine falls on all three.
func BenchmarkRecycle(b *testing.B) {
	snapped, cached, fresh := newTestHost(b, testSnapshot(b, jsenv.Lean)), newTestHost(b, nil), newTestHost(b, nil)
	fresh.shared.NoCache = true
	for _, h := range []*host{snapped, cached, fresh} {
		h.recycleForTest(b)
	}
	var fromSnapshot, withCache, fromSource benchutil.Samples
	for i := 0; i < max(b.N, 200); i += 20 {
		fromSnapshot = append(fromSnapshot, benchutil.Time(20, func() { snapped.recycleForTest(b) })...)
		withCache = append(withCache, benchutil.Time(20, func() { cached.recycleForTest(b) })...)
		fromSource = append(fromSource, benchutil.Time(20, func() { fresh.recycleForTest(b) })...)
	}
	fromSnapshot.Report(b, "recycle-from-snapshot")
	withCache.Report(b, "recycle-prelude-cached")
	fromSource.Report(b, "recycle-prelude-from-source")
	b.ReportMetric(float64(withCache.P(0.5))/float64(fromSnapshot.P(0.5)), "cached/snapshot")
	_ = time.Millisecond
}
