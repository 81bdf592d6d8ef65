package bench

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/code-runner-go/code-runner/engines/python/pywasm"
)

// pythonWasmOnV8Times runs every workload three times in the embedded
// python.wasm compiled by Node's V8 (bench/peers/python-wasm-on-v8.mjs,
// node:wasi) and returns each one's median in ms. Beside the same
// workloads on wazero it shows what the WebAssembly engine costs apart
// from the CPython build; beside Pyodide, what the build costs. V8 runs
// the module as built, without the loop rewrite the engine applies (what
// that costs: BenchmarkPythonKillability in engines/python).
func pythonWasmOnV8Times(b *testing.B, peerDir string) map[string]float64 {
	wasm, err := pywasm.Wasm()
	if err != nil {
		b.Fatal(err)
	}
	std, err := pywasm.Stdlib()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	wasmPath, stdDir := filepath.Join(dir, "python.wasm"), filepath.Join(dir, "stdlib")
	if err := os.WriteFile(wasmPath, wasm, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.CopyFS(stdDir, std); err != nil {
		b.Fatalf("unpack the standard library for V8: %v", err)
	}
	cmd := exec.Command("node", "--no-warnings", "python-wasm-on-v8.mjs", wasmPath, stdDir, pywasm.StdlibDir, workloadTimesProgram())
	cmd.Dir = peerDir
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("python.wasm on V8: %v\n%s", err, out)
	}
	m := map[string]float64{}
	if err := json.Unmarshal(out, &m); err != nil {
		b.Fatalf("python.wasm on V8 printed %q: %v", out, err)
	}
	return m
}
