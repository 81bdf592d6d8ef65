package pywasm

import (
	"bytes"
	"testing"
)

// TestEmbeddedWasmIsThePinnedBuild proves `make deps` placed the pinned wasm
// where the engine embeds it: the digest matches and it is a wasm module.
func TestEmbeddedWasmIsThePinnedBuild(t *testing.T) {
	b, err := Wasm()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x00asm\x01\x00\x00\x00")) {
		t.Fatal("not a wasm binary module")
	}
}
