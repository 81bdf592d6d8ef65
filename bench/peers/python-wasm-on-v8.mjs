// Runs code-runner's own python.wasm in Node's V8 through node:wasi: a
// baseline for `make bench` that separates what the WebAssembly engine
// costs from what the CPython build costs. The same bytes the worker
// compiles with wazero are compiled here by V8's optimizing tier; the
// standard library is a directory the caller unpacked.
//
//   node --no-warnings python-wasm-on-v8.mjs PYTHON_WASM STDLIB_DIR STDLIB_MOUNT PROGRAM
//
// What the program prints goes to stdout; the exit status is the guest's.
// The engine's one import beyond WASI, code_runner.tick (the call its loop
// rewrite and CPython's eval-breaker make to yield or end a guest), is a
// function that does nothing here.
import { WASI } from "node:wasi";
import { readFileSync } from "node:fs";

const [wasmPath, stdlibDir, mount, program] = process.argv.slice(2);
if (!program) {
  console.error("usage: python-wasm-on-v8.mjs PYTHON_WASM STDLIB_DIR STDLIB_MOUNT PROGRAM");
  process.exit(2);
}
const wasi = new WASI({
  version: "preview1",
  // Without it, the guest's proc_exit ends Node from inside the wasm call
  // (Node 20 then crashes on its way out).
  returnOnExit: true,
  args: ["python", "-I", "-c", program],
  env: {},
  preopens: { [mount]: stdlibDir },
});
const module = await WebAssembly.compile(readFileSync(wasmPath));
const instance = await WebAssembly.instantiate(module, {
  wasi_snapshot_preview1: wasi.wasiImport,
  code_runner: { tick() {} },
});
process.exitCode = wasi.start(instance);
