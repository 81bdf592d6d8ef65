package pywasm

import (
	"bytes"
	"io"
	"io/fs"
	"testing"

	"github.com/code-runner-go/code-runner/internal/zipfs"
)

// TestEmbeddedWasmIsTheBuiltOne proves `make deps` placed the build's wasm
// where the engine embeds it: the digest matches and it is a wasm module.
func TestEmbeddedWasmIsTheBuiltOne(t *testing.T) {
	b, err := Wasm()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Fatal("not a wasm binary module")
	}
	if len(Digest()) != 64 {
		t.Fatalf("digest %q", Digest())
	}
}

// TestStdlibFilesSeekLikeRealFiles reads a module the wrapper imports, its
// .pyc, and a directory listing from the embedded standard library; files
// must seek and read at offsets (tracebacks re-read sources with seek(0)).
func TestStdlibFilesSeekLikeRealFiles(t *testing.T) {
	std, err := Stdlib()
	if err != nil {
		t.Fatal(err)
	}
	src, err := fs.ReadFile(std, "json/__init__.py")
	if err != nil || !bytes.Contains(src, []byte("def dumps(")) {
		t.Fatalf("json/__init__.py: %v", err)
	}
	if _, err := fs.Stat(std, "json/__pycache__/__init__.cpython-311.pyc"); err != nil {
		t.Fatalf("no .pyc beside json: %v", err)
	}
	f, err := std.Open("json/__init__.py")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 16)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if _, err := f.(io.Seeker).Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	again := make([]byte, 16)
	if _, err := io.ReadFull(f, again); err != nil || !bytes.Equal(head, again) || !bytes.Equal(head, src[:16]) {
		t.Fatalf("after seek: %q vs %q (%v)", again, head, err)
	}
	entries, err := fs.ReadDir(std, "json")
	if err != nil || len(entries) < 4 {
		t.Fatalf("json/: %d entries, %v", len(entries), err)
	}
	for _, gone := range []string{"test", "idlelib", "tkinter", "ensurepip"} {
		if _, err := fs.Stat(std, gone); err == nil {
			t.Errorf("%s is packed; the build drops it", gone)
		}
	}
}

// The package bundle has its three trees; a module's .pyc is a stored
// section of the zip, its source deflated: opening the source (as a stat
// does) inflates nothing, reading it does, at any offset.
func TestPackagesServeStoredBytecodeAndDeflatedSources(t *testing.T) {
	pkgs, err := Packages()
	if err != nil {
		t.Fatal(err)
	}
	zf := pkgs.(*zipfs.FS)
	for _, name := range []string{"site-packages/yaml/__init__.py", "site-packages/yaml/__pycache__/__init__.cpython-311.pyc", "zoneinfo/Europe/Paris", "doc/python3-yaml/copyright"} {
		if _, err := fs.Stat(pkgs, name); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if m, _ := zf.Method("site-packages/yaml/__pycache__/__init__.cpython-311.pyc"); m != 0 {
		t.Fatalf("a .pyc is compressed (method %d): imports would inflate it", m)
	}
	f, err := pkgs.Open("site-packages/yaml/__init__.py")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := f.(*zipfs.File).SectionReader
	st, _ := f.Stat()
	if st.Size() < 1000 {
		t.Fatalf("size %d", st.Size())
	}
	buf := make([]byte, 6)
	if _, err := in.ReadAt(buf, st.Size()-6); err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f.(io.Reader))
	if err != nil || !bytes.HasSuffix(all, buf) || !bytes.Contains(all, []byte("def safe_load(")) {
		t.Fatalf("read %d bytes, %v", len(all), err)
	}
	if _, err := fs.ReadDir(pkgs, "site-packages/sympy"); err != nil {
		t.Fatal(err)
	}
}

// The embedded zips are the ones their builds wrote: each matches the
// digest recorded beside it (Stdlib and Packages do not hash at start).
func TestEmbeddedZipsMatchTheirDigests(t *testing.T) {
	if err := Verify(); err != nil {
		t.Fatal(err)
	}
}
