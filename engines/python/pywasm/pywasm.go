// Package pywasm embeds the Python the engine runs: python.wasm (CPython
// 3.11.2 compiled to WASI at -O2 by deps/cpython/build.sh, with zlib, bzip2
// and SQLite linked in) and its standard library as a stored zip (sources
// and .pyc). Both are checked against the digests the build wrote beside
// them.
//
// `make deps` builds (or takes from its cache) both files and copies them
// into assets/ (git-ignored). A binary built without them still compiles;
// Wasm then reports how to fix that instead of the build failing with a
// missing-embed error.
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
)

// PythonVersion is the CPython version the wasm implements.
const PythonVersion = "3.11.2"

// StdlibDir is where the interpreter looks for its standard library (its
// compiled-in prefix /usr/local); the engine mounts Stdlib there.
const StdlibDir = "/usr/local/lib/python3.11"

//go:embed assets
var assets embed.FS

// ErrMissing is wrapped by Wasm when the binary was built without the wasm.
var ErrMissing = errors.New("python.wasm is not embedded in this binary: run `make deps` (it builds CPython for WASI with deps/cpython/build.sh and places python.wasm and stdlib.zip in engines/python/pywasm/assets) and rebuild")

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
	if err := check("python.wasm", bytes.NewReader(b)); err != nil {
		return nil, err
	}
	return b, nil
}

func check(name string, r io.Reader) error {
	sums, err := fs.ReadFile(assets, "assets/SHA256SUMS")
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
// sections of it, nothing is copied into memory).
func Stdlib() (fs.FS, error) {
	f, err := assets.Open("assets/stdlib.zip")
	if err != nil {
		return nil, ErrMissing
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat embedded stdlib.zip: %w", err)
	}
	ra, ok := f.(io.ReaderAt)
	if !ok {
		return nil, errors.New("embedded stdlib.zip cannot be read at offsets")
	}
	if err := check("stdlib.zip", io.NewSectionReader(ra, 0, st.Size())); err != nil {
		return nil, err
	}
	return newZipFS(ra, st.Size())
}
