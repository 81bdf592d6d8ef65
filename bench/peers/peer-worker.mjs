// The peer a user would write instead of code-runner: a Node iii-sdk worker
// that runs JavaScript in isolated-vm and Python in Pyodide. `make bench`
// starts it beside code-runner against the same test engine and drives both
// with the same callers, so every figure is a ratio measured in one run.
//
//   peer::node::run    a fresh isolated-vm isolate per call (128 MiB, timeout)
//   peer::node::kept   one isolate and context kept across calls
//   peer::python::run  Pyodide, loaded once; fresh globals per call
//   peer::python::kept Pyodide with one globals dict kept across calls
//
// Input {code, timeout_ms?}; output {result}. Node code is a function body
// (`return 2+2`), python code sets `result`, as code-runner's run does.
// It prints "ready" on stdout once every function is registered.
import ivm from 'isolated-vm'
import { loadPyodide } from 'pyodide'
import { registerWorker } from 'iii-sdk'

const url = process.env.III_URL
if (!url) {
  console.error('peer-worker: set III_URL to the engine WebSocket URL')
  process.exit(2)
}

const w = registerWorker(url, { workerName: 'peer', otel: { enabled: false }, invocationTimeoutMs: 60000 })

function runIn(isolate, context, code, timeout) {
  const script = isolate.compileScriptSync(`(function(){${code}\n})()`)
  try {
    return script.runSync(context, { timeout, copy: true })
  } finally {
    script.release()
  }
}

w.registerFunction('peer::node::run', async (input) => {
  const isolate = new ivm.Isolate({ memoryLimit: 128 })
  try {
    const context = isolate.createContextSync()
    return { result: runIn(isolate, context, input.code, input.timeout_ms ?? 5000) ?? null }
  } finally {
    isolate.dispose()
  }
})

const keptIsolate = new ivm.Isolate({ memoryLimit: 128 })
const keptContext = keptIsolate.createContextSync()
w.registerFunction('peer::node::kept', async (input) => ({
  result: runIn(keptIsolate, keptContext, input.code, input.timeout_ms ?? 5000) ?? null,
}))

const py = await loadPyodide()
const toJs = (v) => (v && typeof v.toJs === 'function' ? v.toJs({ dict_converter: Object.fromEntries }) : v)
function runPy(globals, code) {
  py.runPython(code, { globals })
  const r = globals.get('result')
  const out = toJs(r)
  if (r && typeof r.destroy === 'function') r.destroy()
  return typeof out === 'bigint' ? Number(out) : out ?? null
}

w.registerFunction('peer::python::run', async (input) => {
  const globals = py.globals.get('dict')()
  try {
    return { result: runPy(globals, input.code) }
  } finally {
    globals.destroy()
  }
})

const keptGlobals = py.globals.get('dict')()
w.registerFunction('peer::python::kept', async (input) => ({ result: runPy(keptGlobals, input.code) }))

console.log('ready')
process.stdin.resume()
process.stdin.on('end', () => process.exit(0))
