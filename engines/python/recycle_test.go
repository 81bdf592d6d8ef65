package python

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/python/pywasm"
)

// One-shots are pristine although their interpreters are recycled: a run
// that rebinds builtins, json.dumps and sys.modules entries, imports modules
// and writes /work leaves nothing the next one-shot can see — and the next
// one-shot ran in the same interpreter, reset to its snapshot, not in a
// freshly booted one.
func TestOneShotsArePristineOnRecycledInterpreters(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	dirty := `import builtins, json, sys, os, decimal
builtins.leak = 'tenant A'
json.dumps = lambda *a, **k: 'forged'
sys.modules['base64'] = None
os.environ['LEAK'] = '1'
open('/work/secret', 'w').write('tenant A')
os.mkdir('/work/dir')
result = 'dirty'`
	check := `import builtins, json, sys, os
result = [getattr(builtins, 'leak', None), json.dumps([1]), sys.modules.get('base64', 'absent') is None, 'LEAK' in os.environ, sorted(os.listdir('/work')), 'decimal' in sys.modules]`
	waitPooled(t, r)
	r.mustRun(t, "result = 1") // the pool's interpreter now carries one recycle
	waitPooled(t, r)
	booted := interpSeq.Load()
	for i := 0; i < 10; i++ {
		if res := r.mustRun(t, dirty); string(res.Result) != `"dirty"` {
			t.Fatalf("%+v", res)
		}
		waitPooled(t, r)
		res := r.mustRun(t, check)
		if string(res.Result) != `[null,"[1]",false,false,[],false]` {
			t.Fatalf("round %d: a one-shot saw the previous one's state: %s %s", i, res.Result, res.Stderr)
		}
		waitPooled(t, r)
	}
	// A descriptor the previous tenant left open is closed by the reset: the
	// next tenant cannot read the deleted file through it.
	res := r.mustRun(t, `import os
open('/work/secret', 'w').write('tenant A')
fds = [os.open('/work/secret', os.O_RDONLY) for _ in range(3)]
result = fds`)
	var fds []int
	_ = json.Unmarshal(res.Result, &fds)
	if len(fds) != 3 {
		t.Fatalf("%+v", res)
	}
	waitPooled(t, r)
	res = r.mustRun(t, fmt.Sprintf(`import os
out = []
for fd in %v:
    try:
        out.append(os.read(fd, 100).decode())
    except OSError as e:
        out.append(type(e).__name__)
result = out`, strings.Join(strings.Fields(fmt.Sprint(fds)), ", ")))
	if strings.Contains(string(res.Result), "tenant A") || !strings.Contains(string(res.Result), "Error") {
		t.Fatalf("the next tenant read the previous one's file: %s %s", res.Result, res.Stderr)
	}
	waitPooled(t, r)
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters were booted for 20 one-shots; want every one recycled", n)
	}
	// A one-shot that grows its memory, fails or is killed is not recycled,
	// and the next one-shot is still correct.
	for _, code := range []string{"a = bytearray(64 << 20)", "raise ValueError('x')", "import os\nos._exit(3)"} {
		r.mustRun(t, code)
		waitPooled(t, r)
		if res := r.mustRun(t, check); string(res.Result) != `[null,"[1]",false,false,[],false]` {
			t.Fatalf("after %q: %s", code, res.Result)
		}
		waitPooled(t, r)
	}
	if res, err := r.run(t, map[string]any{"code": "while True: pass", "timeout_ms": 300}); err == nil {
		t.Fatalf("%+v", res)
	}
	waitPooled(t, r)
	if res := r.mustRun(t, check); !strings.HasPrefix(string(res.Result), `[null,"[1]"`) {
		t.Fatalf("after a timeout: %s", res.Result)
	}
}

// A kept runtime's interpreter goes back to the pool when the runtime is
// torn down and the pool has room (here: the pool's refill is still booting
// when the runtime ends), reset like a one-shot's; what the next one-shot
// gets shows nothing the torn-down tenant did over its several turns.
func TestKeptRuntimesGiveBackPristineInterpreters(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	check := `import builtins, json, sys, os
result = [getattr(builtins, 'leak', None), json.dumps([1]), 'LEAK' in os.environ, sorted(os.listdir('/work')), globals().get('counter')]`
	const clean = `[null,"[1]",false,[],null]`
	recycled := 0
	for i := 0; i < 5; i++ {
		waitPooled(t, r)
		k, err := r.run(t, map[string]any{"keep": true, "code": "counter = 0\nresult = 0"})
		if err != nil || k.RuntimeID == "" {
			t.Fatalf("%+v %v", k, err)
		}
		kept, _ := r.reg.Lookup(k.RuntimeID)
		ip := kept.Runtime.(*pyRuntime).ip
		for _, code := range []string{
			"import builtins, json, os\nbuiltins.leak = 'tenant A'\njson.dumps = lambda *a, **k: 'forged'\nos.environ['LEAK'] = '1'\ncounter += 1\nresult = counter",
			"open('/work/secret', 'w').write('tenant A')\ncounter += 1\nresult = counter",
		} {
			if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": code}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := r.call(t, core.FnTeardown, map[string]any{"runtime_id": k.RuntimeID}); err != nil {
			t.Fatal(err)
		}
		// Teardown recycles or disposes of the interpreter in the
		// background: once that work is done it is parked again or gone.
		r.eng.bg.Wait()
		if !ip.dead() && !ip.stdin.blocked() {
			t.Fatal("the torn-down runtime's interpreter neither parked nor ended")
		}
		if !ip.dead() {
			recycled++
		}
		if res := r.mustRun(t, check); string(res.Result) != clean {
			t.Fatalf("round %d: a one-shot saw the torn-down kept runtime's state: %s %s", i, res.Result, res.Stderr)
		}
	}
	if recycled == 0 {
		t.Fatal("no torn-down kept runtime's interpreter went back to the pool")
	}
}

// A snapshot whose check turns fail — here because its context ends while
// they run — leaves no interpreter behind whose late answers a tenant's turn
// could take for its own (a one-shot once answered `while True` with
// "success, null" that way): the interpreter is disposed of.
func TestAFailedSnapshotCheckDisposesTheInterpreter(t *testing.T) {
	r := newRig(t, nil)
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, wait := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		dir, err := r.eng.newWorkDir(r.eng.config())
		if err != nil {
			t.Fatal(err)
		}
		ip, err := r.eng.bootInterp(context.Background(), defaultMemMB, dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err = ip.takeSnapshot(ctx)
		cancel()
		if err == nil {
			ip.dispose()
			r.eng.removeWorkDir(dir)
			continue // fast enough this time: nothing to check
		}
		if !ip.dead() {
			t.Fatalf("takeSnapshot failed (%v) and left its interpreter running", err)
		}
		r.eng.removeWorkDir(dir)
	}
}

// A tenant that closes a writable mount's preopened directory and opens
// another directory into the same descriptor — the read-only /run, the
// shared standard library — would hand the next tenant that directory as
// its /work or /out. The reset proves each mount is still the directory it
// was (by identity, not by name) or disposes of the interpreter; either way
// the next one-shot's /work and /out are empty, writable and its own.
func TestAResetCatchesAMountSwappedForAnotherDirectory(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	swap := func(mount, other string) string {
		return fmt.Sprintf(`import os
ino = os.stat(%[1]q).st_ino
def same(fd):
    try:
        return os.fstat(fd).st_ino == ino
    except OSError:
        return False
fd = next(fd for fd in range(3, 16) if same(fd))
os.close(fd)
new = os.open(%[2]q, os.O_RDONLY)
result = [fd, new, sorted(os.listdir(%[1]q))[:2]]`, mount, other)
	}
	check := `import os
open('/work/w', 'w').write('x')
open('/out/o', 'w').write('y')
result = [sorted(os.listdir('/work')), sorted(os.listdir('/out'))]`
	for _, tc := range []struct{ mount, other string }{
		{"/work", "/run"}, {"/out", "/run"}, {"/work", pywasm.StdlibDir}, {"/out", "/work"}, {"/work", "/out"},
	} {
		waitPooled(t, r)
		res, err := r.run(t, map[string]any{"code": swap(tc.mount, tc.other)})
		if err != nil {
			t.Fatalf("%s over %s: %v", tc.other, tc.mount, err)
		}
		var got []any
		if err := json.Unmarshal(res.Result, &got); err != nil || len(got) != 3 || got[0] != got[1] {
			t.Fatalf("%s over %s: the swap did not land on the mount's descriptor: %s %s", tc.other, tc.mount, res.Result, res.Stderr)
		}
		r.eng.bg.Wait()
		waitPooled(t, r)
		if res := r.mustRun(t, check); string(res.Result) != `[["w"],["o"]]` {
			t.Fatalf("after %s was opened over %s, the next one-shot saw %s %s", tc.other, tc.mount, res.Result, res.Stderr)
		}
	}
}

// A tenant can also change the mount directories themselves rather than
// what is in them: set their times (128 chosen bits per mount, for the next
// tenant's os.stat to read), or remove one and make another at its path,
// which the preopened descriptor does not follow (the next tenant's fstat
// of it would show a deleted directory). The reset puts the times back and
// refuses a directory that is not the one it mounted.
func TestAResetPutsBackTheMountDirectoriesThemselves(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	// What the next tenant sees of each mount: its times, and whether
	// some descriptor is the directory at its path.
	probe := `import os
def same(fd, st):
    try:
        f = os.fstat(fd)
    except OSError:
        return False
    return (f.st_dev, f.st_ino) == (st.st_dev, st.st_ino)
out = []
for p in ('/work', '/out'):
    st = os.stat(p)
    out.append([st.st_atime_ns, st.st_mtime_ns, any(same(fd, st) for fd in range(3, 16))])
open('/work/w', 'w').write('x')
result = out`
	// Every descriptor is looked at first, so each mount's directory is
	// open behind its preopen before it is removed.
	touchAll := "import os\nfor fd in range(3, 16):\n    try:\n        os.fstat(fd)\n    except OSError:\n        pass\n"
	for _, dirty := range []string{
		"import os\nos.utime('/work', ns=(111, 222))\nos.utime('/out', ns=(333, 444))\nresult = 1",
		touchAll + "os.rmdir('/work')\nos.mkdir('/work')\nresult = 1",
		touchAll + "os.rmdir('/out')\nos.mkdir('/out')\nresult = 1",
	} {
		waitPooled(t, r)
		if res := r.mustRun(t, dirty); !res.Success {
			t.Fatalf("%q: %+v", dirty, res)
		}
		r.eng.bg.Wait()
		waitPooled(t, r)
		after := r.mustRun(t, probe)
		var a [][3]any
		if err := json.Unmarshal(after.Result, &a); err != nil || len(a) != 2 {
			t.Fatalf("probe: %s %s", after.Result, after.Stderr)
		}
		for i, m := range []string{"/work", "/out"} {
			if a[i][2] != true {
				t.Errorf("after %q the next tenant's %s is not the directory behind its descriptor", dirty, m)
			}
			if a[i][0] == 111.0 || a[i][0] == 333.0 || a[i][1] == 222.0 || a[i][1] == 444.0 {
				t.Errorf("after %q the next tenant read the times the last one set on %s: %v", dirty, m, a[i])
			}
		}
		r.eng.bg.Wait()
	}
}

// A tenant that fills a mount and leaves changes the directory in ways the
// wipe does not undo: an ext4 directory keeps the blocks its entries grew
// it to (st_size; 4 KiB → 188 KiB here) and the index over them; and every
// change, the reset's own included, moves its ctime. The
// next tenant's look at /work and /out — a stat by path (wazero cleans
// "sub/.." to the directory itself) or through a descriptor, the order
// os.listdir gives — reads what a tenant after a clean one reads: an interpreter whose
// mount grew is not reused, and the change time shown is the snapshot's.
func TestTheNextTenantCannotTellTheLastOneFilledAMount(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	// same: what one interpreter shows every tenant (its directories'
	// times); shape: what any interpreter shows after a clean tenant. The
	// probe changes both mounts itself, as tenants do.
	probe := `import os
same, shape = [], []
for p in ('/work', '/out'):
    first = os.stat(p)
    ino = first.st_ino
    fd = os.open(p, os.O_RDONLY)
    for st in (os.stat(p), os.fstat(fd)):
        same.append([p, st.st_ctime_ns, st.st_mtime_ns, st.st_atime_ns])
        shape.append([p, st.st_size, st.st_nlink])
    os.close(fd)
    for fd in range(3, 16):  # the preopened descriptor among them
        try:
            st = os.fstat(fd)
        except OSError:
            continue
        if st.st_ino == ino:
            same.append([p, fd, st.st_ctime_ns, st.st_mtime_ns])
            shape.append([p, fd, st.st_size])
    names = ['n%02d' % i for i in range(20)]
    for n in names:
        open(p + '/' + n, 'w').close()
    shape.append(os.listdir(p))
    for n in names:
        os.remove(p + '/' + n)
    # Through a subdirectory's "..", with the times this tenant's changes
    # moved put back as it found them: the real change time is now.
    os.mkdir(p + '/sub')
    os.utime(p, ns=(first.st_atime_ns, first.st_mtime_ns))
    st = os.stat(p + '/sub/..')
    same.append([p + '/sub/..', st.st_ctime_ns, st.st_mtime_ns])
    shape.append([p + '/sub/..', st.st_size])
    os.rmdir(p + '/sub')
result = [same, shape]`
	see := func(what string) (same, shape string) {
		t.Helper()
		r.eng.bg.Wait()
		waitPooled(t, r)
		res := r.mustRun(t, probe)
		var got [2]json.RawMessage
		if !res.Success || json.Unmarshal(res.Result, &got) != nil {
			t.Fatalf("probe after %s: %s %s", what, res.Result, res.Stderr)
		}
		return string(got[0]), string(got[1])
	}
	firstSame, firstShape := see("a first tenant")
	same, shape := see("a tenant that changed both mounts a little")
	if same != firstSame || shape != firstShape {
		t.Fatalf("after a tenant that changed the mounts a little the next one saw\n%s %s\nwhere the one before saw\n%s %s", same, shape, firstSame, firstShape)
	}
	fill := `import os
for i in range(600):
    open('/work/' + 'w%03d' % i + 'x' * 200, 'w').close()
for i in range(60):
    open('/out/' + 'o%02d' % i + 'x' * 200, 'w').close()
result = len(os.listdir('/work'))`
	waitPooled(t, r)
	if res := r.mustRun(t, fill); string(res.Result) != "600" {
		t.Fatalf("the filling tenant: %s %s", res.Result, res.Stderr)
	}
	if _, after := see("a tenant that filled both mounts"); after != shape {
		t.Fatalf("after a tenant filled the mounts the next one saw\n%s\nwhere after a clean one it saw\n%s", after, shape)
	}
}

// The inode numbers a tenant reads under /work and /out tell it nothing of
// the host's allocator, which the last tenant (ext4 passes over inodes
// deleted moments ago) and tenants of other interpreters move: files made
// one after another do not get neighbouring numbers, and the next tenant
// of the same interpreter, making the same files, reads other numbers.
// Within a tenant they are consistent: a file reads the same by path, by
// descriptor and in a listing, the mount the same by path and through its
// preopened descriptor, and no two files share one. Both tenants run on
// one interpreter, recycled between them.
func TestInodeNumbersTellATenantNothing(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	probe := `import os
files = {}
for i in range(20):
    p = '/work/f%02d' % i
    with open(p, 'w') as f:
        files[p] = [os.stat(p).st_ino, os.fstat(f.fileno()).st_ino]
listed = {'/work/' + e.name: e.inode() for e in os.scandir('/work')}
consistent = all(a == b == listed[p] for p, (a, b) in files.items())
os.mkdir('/work/sub')
roots = [os.stat('/work').st_ino, os.stat('/work/sub/..').st_ino, os.stat('/out').st_ino]
preopen = []  # descriptors that read as /work: its preopened one
for fd in range(3, 16):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    if st.st_ino == roots[0]:
        preopen.append(fd)
inos = sorted(a for a, _ in files.values())
result = {'consistent': consistent, 'roots': roots, 'preopen': preopen, 'inos': inos,
          'spread': inos[-1] - inos[0], 'distinct': len(set(inos)) == len(inos)}`
	type seen struct {
		Consistent bool
		Roots      []uint64
		Preopen    []int
		Inos       []uint64
		Spread     uint64
		Distinct   bool
	}
	waitPooled(t, r)
	booted := interpSeq.Load()
	var tenants []seen
	for i := 0; i < 2; i++ {
		r.eng.bg.Wait()
		waitPooled(t, r)
		res := r.mustRun(t, probe)
		var s seen
		if err := json.Unmarshal(res.Result, &s); err != nil || !res.Success {
			t.Fatalf("tenant %d: %s %s", i+1, res.Result, res.Stderr)
		}
		if !s.Consistent || !s.Distinct {
			t.Fatalf("tenant %d: a file's inode number differs by path, descriptor or listing, or two files share one: %+v", i+1, s)
		}
		if s.Roots[0] != s.Roots[1] || s.Roots[0] == s.Roots[2] || len(s.Preopen) != 1 {
			t.Fatalf("tenant %d: /work by path and through \"..\" %d and %d, /out %d, preopened descriptors with /work's number %v", i+1, s.Roots[0], s.Roots[1], s.Roots[2], s.Preopen)
		}
		// Twenty numbers drawn at random from 2^63 spread over far more
		// than 2^40; twenty an allocator handed out in a row do not.
		if s.Spread < 1<<40 {
			t.Fatalf("tenant %d: twenty files made in a row got numbers %d apart at most: the host's", i+1, s.Spread)
		}
		tenants = append(tenants, s)
	}
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters booted between the tenants: the second did not get the first one's, recycled", n)
	}
	if tenants[0].Roots[0] == tenants[1].Roots[0] {
		t.Fatalf("both tenants of one interpreter read /work as inode %d", tenants[0].Roots[0])
	}
	first := map[uint64]bool{}
	for _, n := range tenants[0].Inos {
		first[n] = true
	}
	for _, n := range tenants[1].Inos {
		if first[n] {
			t.Fatalf("the second tenant, making the same files, read inode %d as the first did", n)
		}
	}
}

// A one-shot's interpreter counts as on its way back to the pool from the
// moment the runtime is destroyed — not from when the background recycle
// gets to run, which on a busy worker is later, while the caller borrows
// for its next call: the pool sizes itself by its borrowers, and with 8
// callers it grew to 15 interpreters. GOMAXPROCS(1) keeps the background
// goroutine from running before the check.
func TestADestroyedOneShotIsNoLongerABorrower(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitPooled(t, r)
	rt, err := r.eng.NewRuntime(context.Background(), core.RuntimeOptions{Config: r.eng.config(), OneShot: true, Namespace: core.NewRunNamespace()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Run(context.Background(), core.Exec{Code: "result = 1"}); err != nil {
		t.Fatal(err)
	}
	if n := r.eng.pool.Borrowers(); n != 1 {
		t.Fatalf("a running one-shot: %d borrowers, want 1", n)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	rt.Destroy()
	if n := r.eng.pool.Borrowers(); n != 0 {
		t.Fatalf("a destroyed one-shot still counts: %d borrowers, want 0", n)
	}
}

// waitPooled waits (up to a minute) until the pool holds an interpreter.
func waitPooled(t *testing.T, r *rig) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); r.eng.pool.Size() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the pool never held an interpreter")
		}
	}
}

// Every reset reads the page table through the engine's one open
// /proc/self/pagemap, and Close closes it: however many one-shots were
// recycled, at most one such descriptor is open while the engine lives and
// none after.
func TestResetsShareOnePagemapDescriptor(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := openPagemaps(t)
	for i := 0; i < 5; i++ {
		waitPooled(t, r)
		r.mustRun(t, "result = bytearray(1 << 20)[0]")
		r.eng.bg.Wait()
	}
	if got := openPagemaps(t); got != before+1 {
		t.Fatalf("%d page-table descriptors open after five recycles (%d before), want one more", got, before)
	}
	r.eng.Close()
	if got := openPagemaps(t); got != before {
		t.Fatalf("%d page-table descriptors open after Close, want %d", got, before)
	}
}

// openPagemaps counts this process's descriptors open on its page table.
func openPagemaps(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasSuffix(target, "/pagemap") {
			n++
		}
	}
	return n
}

// A tenant that leaves the wrapper's loop and parks in a read of its own —
// after forging turn_done, deep inside nested C calls, or through the
// wrapper's own read function rebound — is answered with what it printed,
// and its interpreter is still recycled: the reset rewinds the wasm call
// stack and globals to the wrapper's parked read (rewind.go), so none of
// the tenant's frames runs again. Were the reset to restore memory under
// the tenant's stack, its read would return the health check's frame into
// tenant code (which here writes /work/escaped and prints), or crash.
func TestAResetRewindsATenantParkedInItsOwnRead(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	const escape = `
def escaped(data):
    open('/work/escaped', 'w').write(repr(data))
    print('ESCAPED', data)
    sys.stderr.write('ESCAPED\n')
`
	cases := []struct{ name, code string }{
		{"forged turn_done, then its own read", forgePrelude + escape + `emit('{"kind":"turn_done","envelope":{"ok":true,"result":"forged"}}')
escaped(sys.stdin.buffer.raw.read(1 << 16))`},
		{"forged turn_done, then a read 150 C calls deep", forgePrelude + escape + `def deep(n):
    if n == 0:
        emit('{"kind":"turn_done","envelope":{"ok":true,"result":"forged"}}')
        return sys.stdin.buffer.raw.read(1 << 16)
    return list(map(lambda _: deep(n - 1), [0]))[0]
escaped(deep(150))`},
		{"the wrapper's read rebound", forgePrelude + escape + `m = sys.modules['_code_runner_wrapper']
def park():
    n = m._raw.readinto(m._rbuf)
    escaped(bytes(m._rbuf[:n]))
    return n
m._park = park
result = 'own'`},
	}
	check := `import os, sys
result = [sorted(os.listdir('/work')), sys.modules['_code_runner_wrapper']._park.__name__, globals().get('m')]`
	waitPooled(t, r)
	r.mustRun(t, "result = 1")
	waitPooled(t, r)
	booted := interpSeq.Load()
	for _, tc := range cases {
		for round := 0; round < 3; round++ {
			res, err := r.run(t, map[string]any{"code": tc.code, "timeout_ms": 5000})
			if err != nil || !res.Success {
				t.Fatalf("%s, round %d: %+v %v", tc.name, round, res, err)
			}
			if got := string(res.Result); got != `"forged"` && got != `"own"` {
				t.Fatalf("%s, round %d: answered %s", tc.name, round, got)
			}
			waitPooled(t, r)
			res = r.mustRun(t, check)
			if string(res.Result) != `[[],"_park",null]` || strings.Contains(res.Stdout+res.Stderr, "ESCAPED") {
				t.Fatalf("%s, round %d: the next one-shot saw %s %q %q", tc.name, round, res.Result, res.Stdout, res.Stderr)
			}
			waitPooled(t, r)
		}
	}
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters were booted; want each hostile tenant's recycled (its reset rewound)", n)
	}
}

// An interpreter serves at most its reset limit (maxResets without a kept
// stack, whose rewinds each copy a little more; maxKeptResets with one),
// then retires: the next one-shot after its last reset gets a freshly
// booted interpreter, and answers correctly.
func TestAnInterpreterRetiresAfterItsResets(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitPooled(t, r)
	r.eng.mu.Lock()
	for ip := range r.eng.live {
		// This build keeps the stack (TestAResetPutsBackTheKeptStack), so a
		// retirement every 4,096 one-shots would be a boot's CPU for nothing.
		if limit := ip.stdin.resetLimit(); limit != maxKeptResets {
			t.Errorf("a kept-stack interpreter may serve %d resets, want %d", limit, maxKeptResets)
		}
		ip.resets = ip.stdin.resetLimit() - 1
	}
	r.eng.mu.Unlock()
	booted := interpSeq.Load()
	r.mustRun(t, "result = 1") // its last reset
	r.eng.bg.Wait()
	waitPooled(t, r)
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters booted before the last reset was spent", n)
	}
	if res := r.mustRun(t, "result = 2"); string(res.Result) != "2" { // retired after this one
		t.Fatalf("%s", res.Result)
	}
	r.eng.bg.Wait()
	waitPooled(t, r)
	if interpSeq.Load() == booted {
		t.Fatal("the interpreter served past its reset limit")
	}
	if res := r.mustRun(t, "result = 3"); string(res.Result) != "3" {
		t.Fatalf("%s", res.Result)
	}
}

// A tenant that closes stderr and opens a file that takes its number and
// its name ("stderr", a file of that name in /work) leaves the table
// looking the same by number and name; the reset compares each snapshot
// descriptor's wazero entry by identity too, refuses, and the interpreter
// goes. Otherwise the reset's backstop would close that file and every
// later tenant of the interpreter would write to a closed stderr.
func TestAResetCatchesStderrReplacedByAFileOfItsName(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitPooled(t, r)
	res := r.mustRun(t, "import os\nos.close(2)\nresult = os.open('/work/stderr', os.O_CREAT | os.O_RDWR)")
	if string(res.Result) != "2" {
		t.Fatalf("the file did not take stderr's number: %s %s", res.Result, res.Stderr)
	}
	for i := 0; i < 3; i++ {
		r.eng.bg.Wait()
		waitPooled(t, r)
		res := r.mustRun(t, "import sys\nprint('to stderr', file=sys.stderr)\nresult = 1")
		if string(res.Result) != "1" || res.Stderr != "to stderr\n" {
			t.Fatalf("one-shot %d after the swap: result %s, stderr %q, exit %d", i, res.Result, res.Stderr, res.ExitCode)
		}
	}
}
