package isolatehost

import (
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/internal/benchutil"
)

// newTestHost is a host with no pipes, enough to build and recycle
// isolates in this process.
func newTestHost(t testing.TB) *host {
	t.Helper()
	h := &host{tasks: map[int64]*hostTask{}, calls: map[int64]bool{}, mem: newSelfMemory()}
	t.Cleanup(func() {
		if h.iso != nil {
			h.ctx.Close()
			h.iso.Dispose()
		}
	})
	return h
}

// recycleForTest builds the next isolate and disposes of the last, as "reset" does.
func (h *host) recycleForTest(t testing.TB) {
	t.Helper()
	oldCtx, oldIso := h.ctx, h.iso
	if err := h.init(64, false); err != nil {
		t.Fatal(err)
	}
	oldCtx.Close()
	oldIso.Dispose()
}

// preludeWorks binds ns through the prelude's API and reads it back from
// guest-visible code.
func preludeWorks(t *testing.T, h *host, ns string) {
	t.Helper()
	if err := h.bind(ns, nil); err != nil {
		t.Fatalf("bind through the prelude: %v", err)
	}
	v, err := h.ctx.RunScript("typeof console.log + ' ' + iii.namespace + ' ' + typeof WebAssembly", "check.js")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := v.String(), "function "+ns+" undefined"; got != want {
		t.Fatalf("the prelude left %q, want %q", got, want)
	}
}

// The first isolate of a process compiles the prelude from source and makes
// V8's code cache of it; every isolate after it compiles from that cache
// and gets the same prelude.
func TestRecycledIsolatesCompileThePreludeFromTheCodeCache(t *testing.T) {
	h := newTestHost(t)
	if err := h.init(64, false); err != nil {
		t.Fatal(err)
	}
	if h.preludeCached || len(h.preludeCache) == 0 {
		t.Fatalf("first isolate: cached=%v, cache of %d bytes; want from source, a cache made", h.preludeCached, len(h.preludeCache))
	}
	preludeWorks(t, h, "first::")
	for i, ns := range []string{"second::", "third::"} {
		h.recycleForTest(t)
		if !h.preludeCached {
			t.Fatalf("isolate %d compiled the prelude from source", i+2)
		}
		preludeWorks(t, h, ns)
	}
}

// A cache V8 refuses (here: bytes that are not one) costs a compile from
// source, never a broken isolate, and is replaced by a good one.
func TestARejectedPreludeCacheIsRebuilt(t *testing.T) {
	h := newTestHost(t)
	if err := h.init(64, false); err != nil {
		t.Fatal(err)
	}
	bad := make([]byte, len(h.preludeCache))
	for i := range bad {
		bad[i] = byte(i * 7)
	}
	h.preludeCache = bad
	h.recycleForTest(t)
	if h.preludeCached {
		t.Fatal("V8 took bytes that are not a code cache")
	}
	preludeWorks(t, h, "after::")
	if len(h.preludeCache) == 0 || string(h.preludeCache) == string(bad) {
		t.Fatal("the rejected cache was not replaced")
	}
	h.recycleForTest(t)
	if !h.preludeCached {
		t.Fatal("the rebuilt cache was not used")
	}
	preludeWorks(t, h, "again::")
}

// BenchmarkRecycle: one host rebuilding its isolate as "reset" does (a new
// isolate, context and prelude, then the old one disposed of), with the
// prelude from the code cache and, as the baseline in the same run, from
// source every time with no cache made (what a recycle did before); alternating blocks of 20 so a drift of the machine
// falls on both.
func BenchmarkRecycle(b *testing.B) {
	cached, fresh := newTestHost(b), newTestHost(b)
	fresh.noPreludeCache = true
	for _, h := range []*host{cached, fresh} {
		if err := h.init(64, false); err != nil {
			b.Fatal(err)
		}
	}
	var withCache, fromSource benchutil.Samples
	for i := 0; i < max(b.N, 200); i += 20 {
		withCache = append(withCache, benchutil.Time(20, func() { cached.recycleForTest(b) })...)
		fromSource = append(fromSource, benchutil.Time(20, func() { fresh.recycleForTest(b) })...)
	}
	withCache.Report(b, "recycle-prelude-cached")
	fromSource.Report(b, "recycle-prelude-from-source")
	b.ReportMetric(float64(fromSource.P(0.5)-withCache.P(0.5))/float64(time.Millisecond), "saved-ms/recycle")
}
