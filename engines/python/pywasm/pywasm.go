// Package pywasm embeds the Python the engine runs: python.wasm (CPython
// 3.11.2 compiled to WASI at -O3 with pymalloc by deps/cpython/build.sh, with zlib, bzip2,
// liblzma and SQLite linked in), its standard library as a stored zip
// (sources and .pyc), and the bundle of pure-Python packages from Debian 12
// (deps/pypkgs/build.sh: .pyc stored, the rest deflated). Each was written
// with the digest of its build beside it: Wasm checks python.wasm, Verify
// (and a test) the zips.
//
// `make deps` builds (or takes from its cache) the files and copies them
// into assets/ (git-ignored). A binary built without them still compiles;
// Wasm, Stdlib and Packages then report how to fix that instead of the
// build failing with a missing-embed error.
package pywasm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/code-runner-go/code-runner/internal/zipfs"
)

// PythonVersion is the CPython version the wasm implements.
const PythonVersion = "3.11.2"

// StdlibDir is where the interpreter looks for its standard library (its
// compiled-in prefix /usr/local); the engine mounts Stdlib there.
const StdlibDir = "/usr/local/lib/python3.11"

//go:embed assets
var assets embed.FS

// ErrMissing is wrapped by Wasm when the binary was built without the wasm.
var ErrMissing = errors.New("python is not embedded in this binary: run `make deps` (it builds CPython for WASI with deps/cpython/build.sh and the package bundle with deps/pypkgs/build.sh, placing python.wasm, stdlib.zip and pkgs.zip in engines/python/pywasm/assets) and rebuild")

// Digest is the sha256 (hex) the build recorded for python.wasm, or "" when
// the binary was built without it. It names the compilation cache.
func Digest() string {
	sums, err := fs.ReadFile(assets, "assets/SHA256SUMS")
	if err != nil {
		return ""
	}
	return digests(sums)["python.wasm"]
}

// digests parses sha256sum output: "<hex>  <name>" per line.
func digests(sums []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		if sum, name, ok := strings.Cut(sc.Text(), "  "); ok {
			m[name] = sum
		}
	}
	return m
}

// Wasm returns the embedded python.wasm after checking its digest.
func Wasm() ([]byte, error) {
	b, err := fs.ReadFile(assets, "assets/python.wasm")
	if err != nil {
		return nil, ErrMissing
	}
	if err := check("python.wasm", "SHA256SUMS", bytes.NewReader(b)); err != nil {
		return nil, err
	}
	return b, nil
}

// check compares r's sha256 with the one recorded for name in the sums file.
func check(name, sumsFile string, r io.Reader) error {
	sums, err := fs.ReadFile(assets, "assets/"+sumsFile)
	if err != nil {
		return ErrMissing
	}
	want := digests(sums)[name]
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return fmt.Errorf("read embedded %s: %w", name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("embedded %s has sha256 %s, want %s: rerun `make deps` and rebuild", name, got, want)
	}
	return nil
}

// Stdlib returns the standard library as a read-only file system, served
// straight from the binary (the zip is stored, not compressed: files are
// sections of it, nothing is copied into memory, and only what a guest
// reads is ever paged in).
func Stdlib() (fs.FS, error) {
	return embeddedZip("stdlib.zip", "SHA256SUMS", true)
}

// Where the engine mounts the package bundle's three trees.
const (
	// SitePackagesDir is CPython's own site-packages for its prefix: site
	// puts it on sys.path after the standard library.
	SitePackagesDir = StdlibDir + "/site-packages"
	// ZoneinfoDir is the first directory of zoneinfo's TZPATH, where
	// Debian's pytz looks too.
	ZoneinfoDir = "/usr/share/zoneinfo"
	// DocDir holds each bundled package's copyright file, as on Debian.
	DocDir = "/usr/share/doc"
)

// Packages returns the bundle of pure-Python packages built by
// deps/pypkgs/build.sh: site-packages/, zoneinfo/ and doc/, read-only,
// its .pyc served from the binary like the standard library's.
func Packages() (fs.FS, error) {
	return embeddedZip("pkgs.zip", "SHA256SUMS.pkgs", false)
}

// embeddedZip opens an embedded zip after checking it against the digest
// its build recorded in sums.
func embeddedZip(name, sums string, stored bool) (fs.FS, error) {
	f, err := assets.Open("assets/" + name)
	if err != nil {
		return nil, fmt.Errorf("%w (%s is missing)", ErrMissing, name)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat embedded %s: %w", name, err)
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("embedded %s cannot be read at offsets", name)
	}
	// The digest is not checked here: hashing would read every page of the
	// zip into the worker's memory (59 MB for the package bundle) before a
	// guest asked for any of it. The build writes the zip and its sums
	// together; TestEmbeddedZipsMatchTheirDigests holds them to each other,
	// and Verify checks them on demand.
	return zipfs.New(name, ra, st.Size(), stored)
}

// Verify checks the embedded zips against the digests their builds
// recorded (Wasm checks python.wasm whenever it is read).
func Verify() error {
	for _, z := range []struct{ name, sums string }{{"stdlib.zip", "SHA256SUMS"}, {"pkgs.zip", "SHA256SUMS.pkgs"}} {
		f, err := assets.Open("assets/" + z.name)
		if err != nil {
			return fmt.Errorf("%w (%s is missing)", ErrMissing, z.name)
		}
		err = check(z.name, z.sums, f)
		_ = f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
