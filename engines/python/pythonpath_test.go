package python

import (
	"archive/zip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tetratelabs/wazero/sys"

	"github.com/code-runner-go/code-runner/configsvc"
)

// writeZip writes files (name → content) as a zip archive at path.
func writeZip(t *testing.T, path string, files map[string]string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// setPythonPath changes python_path as a reload would: the router's table
// is swapped, then the engine told.
func (r *rig) setPythonPath(entries []string) {
	r.cfg.PythonPath = entries
	r.router.Swap(r.router.Provision(r.cfg, "test"))
	r.eng.Commit(r.router.Live())
}

// An operator's directory, .zip and pure-Python .whl are importable, after
// the standard library and the built-in packages on sys.path; a wheel with
// a C extension gives the guest an ImportError; a change applies to
// interpreters started after it (one-shots, new kept runtimes), while a
// kept runtime started before keeps the path it had.
func TestOperatorPythonPath(t *testing.T) {
	dir := t.TempDir()
	libDir := filepath.Join(dir, "libs")
	if err := os.MkdirAll(filepath.Join(libDir, "acme"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libDir, "acme", "__init__.py"), []byte("def greet(n):\n    return 'hello ' + n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	zipPath := filepath.Join(dir, "extra.zip")
	writeZip(t, zipPath, map[string]string{"extra_mod.py": "VALUE = 42\n"})
	whl := filepath.Join(dir, "tiny-1.0-py3-none-any.whl")
	writeZip(t, whl, map[string]string{
		"tiny/__init__.py":                    "from .core import double\n",
		"tiny/core.py":                        "def double(x):\n    return 2 * x\n",
		"tiny-1.0.dist-info/METADATA":         "Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n",
		"tiny-1.0.dist-info/WHEEL":            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"tiny-1.0.dist-info/RECORD":           "",
		"tiny-1.0.dist-info/top_level.txt":    "tiny\n",
		"tiny-1.0.dist-info/INSTALLER":        "code-runner-test\n",
		"tiny-1.0.dist-info/entry_points.txt": "",
	})
	cext := filepath.Join(dir, "fast-1.0-cp311-cp311-linux_x86_64.whl")
	writeZip(t, cext, map[string]string{
		"fast/__init__.py": "from ._speedups import go\n",
		"fast/_speedups.cpython-311-x86_64-linux-gnu.so": "\x7fELF not really",
	})

	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	old, err := r.run(t, map[string]any{"keep": true, "code": "import sys\nresult = [p for p in sys.path if p.startswith('/pkgs')]"})
	if err != nil || string(old.Result) != `[]` {
		t.Fatalf("before any python_path: %s %v", old.Result, err)
	}
	r.setPythonPath([]string{libDir, zipPath, whl, cext})
	use := `import sys, importlib.metadata
import acme, extra_mod, tiny
try:
    import fast
    c = 'imported'
except ImportError as e:
    c = type(e).__name__
site = sys.path.index('/usr/local/lib/python3.11/site-packages')
result = [acme.greet('ops'), extra_mod.VALUE, tiny.double(21), importlib.metadata.version('tiny'), c, [p for p in sys.path[site + 1:]]]`
	want := `["hello ops",42,42,"1.0","ModuleNotFoundError",["/pkgs/0","/pkgs/1","/pkgs/2","/pkgs/3"]]`
	for i := 0; i < 3; i++ { // the first may meet the pool's interpreter of the old path: never used
		res, err := r.run(t, map[string]any{"code": use})
		if err != nil || string(res.Result) != want {
			t.Fatalf("one-shot %d with python_path: %s %v\n%s", i, res.Result, err, res.Stderr)
		}
	}
	k, err := r.run(t, map[string]any{"keep": true, "code": use})
	if err != nil || string(k.Result) != want {
		t.Fatalf("a kept runtime started after the change: %s %v\n%s", k.Result, err, k.Stderr)
	}
	res, err := r.run(t, map[string]any{"runtime_id": old.RuntimeID, "code": "try:\n    import acme\n    result = 'sees it'\nexcept ImportError:\n    result = 'keeps its path'"})
	if err != nil || string(res.Result) != `"keeps its path"` {
		t.Fatalf("a kept runtime started before the change: %s %v", res.Result, err)
	}
	// The wheel replaced at the same path: interpreters started from now on
	// import the new one.
	writeZip(t, whl, map[string]string{"tiny/__init__.py": "def double(x):\n    return 'v2'\n"})
	r.eng.Commit(r.router.Live())
	for i := 0; i < 3; i++ {
		res, err := r.run(t, map[string]any{"code": "import tiny\nresult = tiny.double(1)"})
		if err != nil || string(res.Result) != `"v2"` {
			t.Fatalf("one-shot %d after the wheel was replaced: %s %v\n%s", i, res.Result, err, res.Stderr)
		}
	}
	r.setPythonPath([]string{})
	res, err = r.run(t, map[string]any{"code": "import sys\ntry:\n    import acme\n    result = 'still there'\nexcept ImportError:\n    result = [p for p in sys.path if p.startswith('/pkgs')]"})
	if err != nil || string(res.Result) != `[]` {
		t.Fatalf("after python_path was emptied: %s %v", res.Result, err)
	}
}

// The operator's path is read-only and link-proof: the guest cannot write,
// create or remove anything under it, and a symlink the directory holds
// that points outside it resolves to nothing.
func TestOperatorPythonPathIsReadOnlyAndLinkProof(t *testing.T) {
	dir := t.TempDir()
	libDir := filepath.Join(dir, "libs")
	if err := os.MkdirAll(libDir, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret.txt")
	if err := os.WriteFile(secret, []byte("host secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(libDir, "ok.py"), []byte("X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(libDir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(libDir, "etc")); err != nil {
		t.Fatal(err)
	}
	// A FIFO would block an open (and wazero's stat, which opens) forever.
	if err := syscall.Mkfifo(filepath.Join(libDir, "pipe.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil)
	r.setPythonPath([]string{libDir})
	res := r.mustRun(t, `import os
out = []
for op in (lambda: open('/pkgs/0/ok.py', 'a'),
           lambda: open('/pkgs/0/new.py', 'w'),
           lambda: os.remove('/pkgs/0/ok.py'),
           lambda: os.mkdir('/pkgs/0/d'),
           lambda: open('/pkgs/0/leak.txt').read(),
           lambda: os.listdir('/pkgs/0/etc'),
           lambda: open('/pkgs/0/../../etc/passwd').read(),
           lambda: open('/pkgs/0/pipe.py').read(),
           lambda: __import__('pipe')):
    try:
        r = op()
        out.append('allowed: ' + str(r)[:40])
    except (OSError, ImportError) as e:
        out.append(type(e).__name__)
import ok
result = [out, ok.X]`)
	if strings.Count(string(res.Result), "Error") < 9 {
		t.Fatalf("not every operation was refused: %s", res.Result)
	}
	if strings.Contains(string(res.Result), "allowed") || strings.Contains(res.Stdout+string(res.Result), "host secret") || !strings.HasSuffix(string(res.Result), ",1]") {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(libDir, "ok.py")); string(b) != "X = 1\n" {
		t.Fatalf("the operator's file changed: %q", b)
	}
}

// An operator's directory is shared by every interpreter, and a read of a
// file in it moves the file's access time on the host (relatime: when it
// is older than the modification time, or a day old). A guest's stat of
// such a file — by path, through its descriptor, of the directory — reads
// the modification time there instead, so one tenant cannot tell when
// another imported a package.
func TestOperatorFilesShowNoAccessTimes(t *testing.T) {
	libDir := filepath.Join(t.TempDir(), "libs")
	if err := os.MkdirAll(filepath.Join(libDir, "acme"), 0o755); err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(libDir, "acme", "__init__.py")
	if err := os.WriteFile(mod, []byte("X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An access time older than the modification time: the next read
	// moves it to now.
	atime, mtime := time.Unix(946684800, 0), time.Unix(1577836800, 0)
	for _, p := range []string{mod, filepath.Join(libDir, "acme")} {
		if err := os.Chtimes(p, atime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, nil)
	r.setPythonPath([]string{libDir})
	res := r.mustRun(t, `import os
import acme
open('/pkgs/0/acme/__init__.py').read()
f = open('/pkgs/0/acme/__init__.py')
sts = [os.stat('/pkgs/0/acme/__init__.py'), os.fstat(f.fileno()), os.stat('/pkgs/0/acme')]
result = [[st.st_atime_ns, st.st_mtime_ns] for st in sts]`)
	var got [][2]int64
	if err := json.Unmarshal(res.Result, &got); err != nil || len(got) != 3 {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
	for i, what := range []string{"stat of the module", "fstat of the module", "stat of its directory"} {
		if got[i][0] != mtime.UnixNano() || got[i][1] != mtime.UnixNano() {
			t.Errorf("%s read access time %d, modification time %d; want both %d", what, got[i][0], got[i][1], mtime.UnixNano())
		}
	}
	// The host's access time did move: the disguise is what hides it.
	if info, err := os.Stat(mod); err == nil && sys.NewStat_t(info).Atim == atime.UnixNano() {
		t.Log("the host did not move the access time (a noatime mount?): the test shows less than it could")
	}
}
