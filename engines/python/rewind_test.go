package python

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// bootLoose boots one interpreter outside any pool, with a /work of its
// own; both go when the test ends (dispose may come earlier).
func bootLoose(t *testing.T) (*interp, string) {
	t.Helper()
	r := newRig(t, nil)
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir, err := r.eng.newWorkDir(r.eng.config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.eng.removeWorkDir(dir) })
	ip, err := r.eng.bootInterp(context.Background(), defaultMemMB, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ip.dispose)
	return ip, dir
}

// bootSnapshotted boots one interpreter outside any pool and snapshots it,
// as the pool does.
func bootSnapshotted(t *testing.T) *interp {
	t.Helper()
	ip, _ := bootLoose(t)
	if err := ip.takeSnapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	return ip
}

// runFrame runs code as a turn of the wrapper's and fails the test unless
// it answers without error or output.
func runFrame(t *testing.T, ip *interp, code string) {
	t.Helper()
	frame, err := jsonx.Marshal(map[string]any{"kind": "run", "code": code})
	if err != nil {
		t.Fatal(err)
	}
	if err := ip.ping(context.Background(), frame); err != nil {
		t.Fatalf("%.60q: %v", code, err)
	}
}

// keptOf returns the interpreter's kept stack, failing the test if it has
// none: the snapshot wazero v1.12 hands out is the shape keptStack reads.
// Should a wazero upgrade change it, this fails, and resets take a new
// snapshot each time (safe, ~12 % slower one-shots) until keepStack is
// taught the new shape.
func keptOf(t *testing.T, ip *interp) *keptStack {
	t.Helper()
	ip.stdin.mu.Lock()
	defer ip.stdin.mu.Unlock()
	if !ip.stdin.stackKept() {
		t.Fatal("the interpreter's captured stack is not kept: wazero's snapshot is not the shape keepStack knows")
	}
	return ip.stdin.kept
}

// cRecursion is a turn whose C frames nest depth deep (each level a map
// calling a lambda calling list), which in wasm are native frames on the
// instance's stack.
func cRecursion(depth int) string {
	return fmt.Sprintf(`import sys
sys.setrecursionlimit(%d)
def deep(n):
    if n == 0:
        return 0
    return list(map(lambda _: deep(n - 1), [0]))[0]
deep(%d)`, 3*depth+100, depth)
}

// A reset puts the kept stack back byte for byte: its frames as captured
// and the free space below them zeroed, whatever a tenant's deep C
// recursion wrote there, so no tenant value outlives the reset in the
// instance's native stack. And an interpreter whose turn outgrew the
// buffer (wazero moved the live stack to a larger one) rewinds onto the
// kept buffer again. Each round answers the next turn correctly.
func TestAResetPutsBackTheKeptStack(t *testing.T) {
	ip := bootSnapshotted(t)
	k := keptOf(t, ip)
	captured := bytes.Clone(k.stack)
	// What the guest's retried read may write below the frames after a
	// rewind: a few native frames of CPython's read path.
	const retry = 8 << 10
	if k.frames <= 2*retry {
		t.Fatalf("only %d bytes of free stack under the parked read's frames", k.frames)
	}
	// The capture cloned the stack: the buffer becomes the live one at
	// the first rewind.
	runFrame(t, ip, "result = 1")
	if err := ip.reset(context.Background(), -1); err != nil {
		t.Fatalf("first reset: %v", err)
	}
	for _, tc := range []struct {
		name string
		code string

		grows bool
	}{
		{"within the buffer", cRecursion(0), false},
		{"past the buffer", cRecursion(30), true},
		{"within the buffer again", cRecursion(0), false},
	} {
		runFrame(t, ip, tc.code)
		if grew := liveStackLen(t, ip) > len(k.stack); grew != tc.grows {
			t.Fatalf("%s: the live stack grew: %v, want %v; the test proves nothing", tc.name, grew, tc.grows)
		}
		if bytes.Equal(k.stack[:k.frames-retry], captured[:k.frames-retry]) {
			t.Fatalf("%s: the turn left the free stack as captured; the test proves nothing", tc.name)
		}
		if err := ip.reset(context.Background(), -1); err != nil {
			t.Fatalf("%s: reset: %v", tc.name, err)
		}
		if got := keptOf(t, ip); got != k {
			t.Fatalf("%s: the reset took a new snapshot instead of putting the kept one back", tc.name)
		}
		for i, b := range k.stack[:k.frames-retry] {
			if b != 0 {
				t.Fatalf("%s: byte %d of the free stack (%d bytes) is %#x after the reset, want 0", tc.name, i, k.frames, b)
			}
		}
		runFrame(t, ip, "assert sum(range(10)) == 45")
		if err := ip.reset(context.Background(), -1); err != nil {
			t.Fatalf("%s: second reset: %v", tc.name, err)
		}
	}
}

// liveStackLen is the length of the instance's live native stack, read
// from wazero's call engine as the snapshot holds it.
func liveStackLen(t *testing.T, ip *interp) int {
	t.Helper()
	ip.stdin.mu.Lock()
	defer ip.stdin.mu.Unlock()
	c := reflect.ValueOf(ip.stdin.stack).Elem().FieldByName("c")
	if !c.IsValid() || c.Kind() != reflect.Pointer {
		t.Fatal("wazero's snapshot has no call engine where this test reads it")
	}
	st := c.Elem().FieldByName("stack")
	if !st.IsValid() || st.Kind() != reflect.Slice {
		t.Fatal("wazero's call engine has no stack where this test reads it")
	}
	return st.Len()
}

// notWazero is a snapshot of some other shape.
type notWazero struct{ stack []byte }

func (notWazero) Restore([]uint64) {}

// A snapshot keepStack does not know is not kept (the rewind then takes a
// new one each time).
func TestKeepStackRefusesAnUnknownSnapshot(t *testing.T) {
	if k := keepStack(notWazero{stack: make([]byte, 64)}); k != nil {
		t.Fatal("kept a snapshot of an unknown shape")
	}
	if k := keepStack(&notWazero{stack: make([]byte, 64)}); k != nil {
		t.Fatal("kept a pointer to a snapshot of an unknown shape")
	}
	if k := keepStack(nil); k != nil {
		t.Fatal("kept no snapshot")
	}
}
