// The end-to-end catalogue (docs/behaviour.md#e2e-catalogue) against the real binary: an iii-sdk harness calls
// code-runner through the repo's test engine. Groups run in order
// run → keep → register → errors → decisions.
import { test, before, after, describe } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, startCodeRunner, worker, until, expectError } from './lib.mjs'

let engine, cr, h

const run = (payload, timeoutMs = 20000) => h.trigger({ function_id: 'code-runner::run', payload, timeoutMs })
const register = (payload) => h.trigger({ function_id: 'code-runner::register_function', payload, timeoutMs: 20000 })
const teardown = (payload) => h.trigger({ function_id: 'code-runner::teardown', payload, timeoutMs: 20000 })
const setConfig = async (patch) => {
  const current = (await h.trigger({ function_id: 'configuration::get', payload: { id: 'code-runner' } })).value
  await h.trigger({ function_id: 'iiitest::config_set', payload: { id: 'code-runner', value: { ...current, ...patch } } })
}

before(async () => {
  engine = await startEngine()
  h = worker(engine.url, 'e2e-harness')
  cr = await startCodeRunner(engine.url, h)
})

after(async () => {
  await cr?.stop()
  await h?.shutdown()
  await engine?.stop()
})

describe('run', () => {
  test('1. the four public functions are live with typed schemas', async () => {
    const info = await h.trigger({ function_id: 'engine::functions::info', payload: { function_ids: ['code-runner::run', 'code-runner::teardown', 'code-runner::register_function', 'code-runner::inject-guidance'] } })
    for (const f of info.functions) {
      assert.ok(!f.error, `${f.function_id} missing`)
      assert.ok(f.response_schema.type || f.response_schema.properties || f.response_schema.$ref)
    }
    assert.ok(info.functions[0].request_schema.required.includes('code'))
  })

  test('2. node one-shot return 2 + 2', async () => {
    const r = await run({ lang: 'node', code: 'return 2 + 2' })
    assert.equal(r.result, 4)
    assert.equal(r.exit_code, 0)
    assert.equal(r.success, true)
    assert.equal('runtime_id' in r, false)
    assert.equal(typeof r.duration_ms, 'number')
  })

  test('3. python one-shot result = 2 + 2', async () => {
    const r = await run({ lang: 'python', code: 'result = 2 + 2' })
    assert.equal(r.result, 4)
    assert.equal(r.exit_code, 0)
    assert.equal('runtime_id' in r, false)
  })

  test('4 (python). print → stdout, print(file=sys.stderr) → stderr', async () => {
    const r = await run({ lang: 'python', code: 'import sys\nprint("out")\nprint("err", file=sys.stderr)' })
    assert.equal(r.stdout, 'out\n')
    assert.equal(r.stderr, 'err\n')
  })

  test('5 (python). non-ASCII round-trips', async () => {
    const s = 'olá — 日本語 ±3°'
    const r = await run({ lang: 'python', code: `s = ${JSON.stringify(s)}\nprint(s)\nresult = s` })
    assert.equal(r.result, s)
    assert.equal(r.stdout, s + '\n')
  })

  test('6. python calls back into the bus', async () => {
    const r = await run({ lang: 'python', code: 'answer = iii.trigger({"function_id": "code-runner::run", "payload": {"lang": "node", "code": "return 40 + 2"}})\nresult = answer["result"]' })
    assert.equal(r.result, 42)
  })

  test('4. console.log → stdout, console.error → stderr', async () => {
    const r = await run({ lang: 'node', code: 'console.log("out"); console.error("err")' })
    assert.equal(r.stdout, 'out\n')
    assert.equal(r.stderr, 'err\n')
  })

  test('5. non-ASCII round-trips', async () => {
    const s = 'olá — 日本語 ±3°'
    const r = await run({ lang: 'node', code: `console.log(${JSON.stringify(s)}); return ${JSON.stringify(s)}` })
    assert.equal(r.result, s)
    assert.equal(r.stdout, s + '\n')
  })
})

describe('keep', () => {
  test('1. node globals and iii.files persist; the id is echoed; teardown', async () => {
    const first = await run({ lang: 'node', keep: true, code: 'globalThis.n = 41; iii.files.write("f.txt", "kept")' })
    assert.match(first.runtime_id, /^rt-[0-9a-f-]{36}$/)
    const again = await run({ runtime_id: first.runtime_id, code: 'return [n + 1, iii.files.readText("f.txt")]' })
    assert.deepEqual(again.result, [42, 'kept'])
    assert.equal(again.runtime_id, first.runtime_id)
    const td = await teardown({ runtime_id: first.runtime_id })
    assert.equal(td.torn_down, true)
  })

  test('2. python globals, imports and /work persist', async () => {
    const first = await run({ lang: 'python', keep: true, code: 'n = 41\nopen("/work/f.txt", "w").write("kept")\nimport json' })
    const again = await run({ runtime_id: first.runtime_id, code: 'result = [n + 1, open("/work/f.txt").read(), json.dumps([1])]' })
    assert.deepEqual(again.result, [42, 'kept', '[1]'])
    await teardown({ runtime_id: first.runtime_id })
  })

  test('4. an id routes to its own engine', async () => {
    const k = await run({ lang: 'python', keep: true, code: 'marker = "py-marker"' })
    assert.equal((await run({ runtime_id: k.runtime_id, code: 'result = marker' })).result, 'py-marker')
    await expectError(() => run({ runtime_id: k.runtime_id, lang: 'node', code: 'return 1' }), 'code-runner::invalid_request')
    await teardown({ runtime_id: k.runtime_id })
  })

  test('3. a torn-down id is gone', async () => {
    const k = await run({ lang: 'node', keep: true, code: 'return 1' })
    await teardown({ runtime_id: k.runtime_id })
    await expectError(() => run({ runtime_id: k.runtime_id, code: 'return 1' }), 'code-runner::runtime_not_found')
  })
})

describe('register', () => {
  test('1. node e2e-node::greet', async () => {
    const r = await register({ function_id: 'e2e-node::greet', lang: 'node', source: 'function handler(p) { return `hello ${p.who}` }' })
    assert.deepEqual(r, { function_id: 'e2e-node::greet', registered: true })
    assert.equal(await h.trigger({ function_id: 'e2e-node::greet', payload: { who: 'world' } }), 'hello world')
  })

  test('1b. node source with an import, an export and TypeScript (§25.5)', async () => {
    const r = await register({ function_id: 'e2e-node::sum', lang: 'node',
      source: 'import _ from "lodash"; export function handler(p: {xs: number[]}) { return _.sum(p.xs) }' })
    assert.equal(r.registered, true)
    assert.equal(await h.trigger({ function_id: 'e2e-node::sum', payload: { xs: [1, 2, 3.5] } }), 6.5)
  })
  test('1c. node run code as agents write it: import, types, timers, web globals', async () => {
    const r = await run({ lang: 'node', code: `import dayjs from "dayjs"
const n: number = 41
await new Promise((r) => setTimeout(r, 20))
console.log(new Map([[1, 2]]))
console.assert(n === 0, "n is %d", n)
return [dayjs("2024-01-31").add(1, "day").format("YYYY-MM-DD"), new URL("https://a.b/c").host, crypto.randomUUID().length, n + 1]` })
    assert.deepEqual(r.result, ['2024-02-01', 'a.b', 36, 42])
    assert.equal(r.stdout, 'Map(1) { 1 => 2 }\n')
    assert.equal(r.stderr, 'Assertion failed: n is 41\n')
  })
  test('2/3. python handlers are callable and keep state', async () => {
    await register({ function_id: 'e2e-py::greet', lang: 'python', source: 'import itertools\n_c = itertools.count(1)\ndef handler(p):\n    return {"hello": p.get("who"), "n": next(_c)}' })
    const a = await h.trigger({ function_id: 'e2e-py::greet', payload: { who: 'py' } })
    const b = await h.trigger({ function_id: 'e2e-py::greet', payload: { who: 'py' } })
    assert.equal(a.hello, 'py')
    assert.equal(b.n, a.n + 1)
  })

  test('4. python source without a handler is refused; nothing is left', async () => {
    await expectError(() => register({ function_id: 'e2e-bad::f', lang: 'python', source: 'x = 1' }), 'handler(payload)')
    await expectError(() => teardown({ namespace: 'e2e-bad' }), 'code-runner::runtime_not_found')
  })

  test('6. one id, one engine', async () => {
    await register({ function_id: 'e2e-clash::fn', lang: 'python', source: 'def handler(p):\n    return 1' })
    await expectError(() => register({ function_id: 'e2e-clash::fn', lang: 'node', source: 'function handler(){ return 2 }' }), 'code-runner::invalid_request')
    assert.equal((await run({ lang: 'node', code: 'return 3' })).result, 3)
  })

  test('5. formats show in engine::functions::info', async () => {
    await register({ function_id: 'e2e-fmt::double', lang: 'node', description: 'doubles n',
      source: 'export function handler(p) { return p.n * 2 }',
      request_format: { type: 'object', properties: { e2e_marker_n: { type: 'number' } } }, response_format: { type: 'number' } })
    const info = await h.trigger({ function_id: 'engine::functions::info', payload: { function_id: 'e2e-fmt::double' } })
    const text = JSON.stringify(info)
    assert.ok(text.includes('e2e_marker_n'))
    assert.ok(!text.includes('"any"'))
  })

  test('7. namespace teardown unregisters both ids, which can be registered again', async () => {
    for (const id of ['e2e-down::a', 'e2e-down::b']) await register({ function_id: id, lang: 'node', source: 'function handler(){ return 1 }' })
    const td = await teardown({ namespace: 'e2e-down' })
    assert.deepEqual(td, { namespace: 'e2e-down::', torn_down: true, unregistered: ['e2e-down::a', 'e2e-down::b'] })
    await until(async () => {
      try { await h.trigger({ function_id: 'e2e-down::a', payload: {}, timeoutMs: 2000 }); return false } catch (e) { return e.code === 'function_not_found' }
    })
    await register({ function_id: 'e2e-down::a', lang: 'node', source: 'function handler(){ return 2 }' })
    assert.equal(await h.trigger({ function_id: 'e2e-down::a', payload: {} }), 2)
  })

  test('namespaces are torn down after the group (the seed allows 8 runtimes)', async () => {
    for (const ns of ['e2e-node', 'e2e-fmt', 'e2e-py', 'e2e-clash', 'e2e-down']) {
      const td = await teardown({ namespace: ns })
      assert.equal(td.torn_down, true)
    }
  })

  test('seeded ids cannot be claimed', async () => {
    await expectError(() => register({ function_id: 'code-runner::run', lang: 'node', source: 'function handler(){}' }), 'code-runner::invalid_request')
  })
})

describe('errors', () => {
  test('1. node throw → exit 1 with the text on stderr', async () => {
    const r = await run({ lang: 'node', code: 'throw new Error("boom-n")' })
    assert.equal(r.exit_code, 1)
    assert.ok(r.stderr.includes('boom-n'))
  })

  test('4. 200000 prints still return, capped', async () => {
    const r = await run({ lang: 'node', code: 'for (let i = 0; i < 200000; i++) console.log(i); return 1', timeout_ms: 25000 }, 40000)
    assert.equal(r.result, 1)
    assert.ok(Buffer.byteLength(r.stdout) <= 2 * 1024 * 1024)
  })

  test('2/3. python raise and syntax errors are exit-1 responses', async () => {
    assert.equal((await run({ lang: 'python', code: 'raise ValueError("boom-p")' })).exit_code, 1)
    const r = await run({ lang: 'python', code: 'def (:' })
    assert.equal(r.exit_code, 1)
    assert.ok(r.stderr.includes('line'))
  })

  test('5. an infinite loop times out (both languages); then a normal run works', async () => {
    await expectError(() => run({ lang: 'node', code: 'for(;;){}', timeout_ms: 1500 }), 'code-runner::timeout')
    assert.equal((await run({ lang: 'node', code: 'return 1' })).result, 1)
    await expectError(() => run({ lang: 'python', code: 'while True: pass', timeout_ms: 1500 }), 'code-runner::timeout')
    assert.equal((await run({ lang: 'python', code: 'result = 1' })).result, 1)
  })

  test('6/7/8. request errors', async () => {
    await expectError(() => run({ code: 'return 1' }), 'lang')
    await expectError(() => run({ runtime_id: 'rt-does-not-exist', code: 'return 1' }), 'code-runner::runtime_not_found')
    await expectError(() => teardown({ runtime_id: 'rt-x', namespace: 'x' }), 'code-runner::invalid_request')
    await expectError(() => teardown({}), 'code-runner::invalid_request')
  })
})

describe('decisions', () => {
  test('D3: a timed-out kept runtime is expired, for run and teardown', async () => {
    const k = await run({ lang: 'node', keep: true, code: 'return 1' })
    await expectError(() => run({ runtime_id: k.runtime_id, code: 'for(;;){}', timeout_ms: 500 }), 'code-runner::timeout')
    await expectError(() => run({ runtime_id: k.runtime_id, code: 'return 1' }), 'code-runner::expired')
    await expectError(() => teardown({ runtime_id: k.runtime_id }), 'code-runner::expired')
  })

  test('D4: a throwing node handler → handler_error with the guest text', async () => {
    await register({ function_id: 'e2e-throw::f', lang: 'node', source: 'function handler() { throw new Error("guest-text") }' })
    const e = await expectError(() => h.trigger({ function_id: 'e2e-throw::f', payload: {} }), 'code-runner::handler_error')
    assert.equal(e.code, 'code-runner::handler_error')
    assert.ok(e.message.includes('guest-text'))
    await teardown({ namespace: 'e2e-throw' })
  })

  test('D4 (python): a raising handler → handler_error', async () => {
    await register({ function_id: 'e2e-throwpy::f', lang: 'python', source: 'def handler(p):\n    raise RuntimeError("py-guest-text")' })
    const e = await expectError(() => h.trigger({ function_id: 'e2e-throwpy::f', payload: {} }), 'code-runner::handler_error')
    assert.ok(e.message.includes('py-guest-text'))
    await teardown({ namespace: 'e2e-throwpy' })
  })

  test('D5: a failing python run keeps what it printed', async () => {
    const r = await run({ lang: 'python', code: 'print("before")\nraise ValueError("x")' })
    assert.equal(r.exit_code, 1)
    assert.equal(r.stdout, 'before\n')
    assert.ok(r.stderr.includes('ValueError: x'))
    assert.ok(r.stderr.includes('Traceback'))
  })

  test('D7: a python handler that overruns is restored for the next call', async () => {
    await setConfig({ default_timeout_ms: 1000 })
    await until(() => cr.logs().includes('default_timeout_ms 5000 → 1000'))
    await register({ function_id: 'e2e-d7::f', lang: 'python', source: 'import itertools\n_c = itertools.count(1)\ndef handler(p):\n    if p.get("spin"):\n        while True: pass\n    return next(_c)' })
    assert.equal(await h.trigger({ function_id: 'e2e-d7::f', payload: {} }), 1)
    await expectError(() => h.trigger({ function_id: 'e2e-d7::f', payload: { spin: true } }), 'code-runner::timeout')
    assert.equal(await h.trigger({ function_id: 'e2e-d7::f', payload: {} }), 1)
    await setConfig({ default_timeout_ms: 5000 })
    await until(() => cr.logs().includes('default_timeout_ms 1000 → 5000'))
    await teardown({ namespace: 'e2e-d7' })
  })

  test('namespace restart (node): a node handler that overruns is restored for the next call', async () => {
    await setConfig({ default_timeout_ms: 1000 })
    await until(() => cr.logs().includes('default_timeout_ms 5000 → 1000'))
    await register({ function_id: 'e2e-d7n::count', lang: 'node', source: 'let n = 0; function handler() { return ++n }' })
    await register({ function_id: 'e2e-d7n::spin', lang: 'node', source: 'function handler() { for(;;){} }' })
    assert.equal(await h.trigger({ function_id: 'e2e-d7n::count', payload: {} }), 1)
    await expectError(() => h.trigger({ function_id: 'e2e-d7n::spin', payload: {} }), 'code-runner::timeout')
    assert.equal(await h.trigger({ function_id: 'e2e-d7n::count', payload: {} }), 1)
    await setConfig({ default_timeout_ms: 5000 })
    await until(() => cr.logs().includes('default_timeout_ms 1000 → 5000'))
    await teardown({ namespace: 'e2e-d7n' })
  })

  test('D11: python iii.namespace', async () => {
    await register({ function_id: 'e2e-ns::f', lang: 'python', source: 'def handler(p):\n    return iii.namespace' })
    assert.equal(await h.trigger({ function_id: 'e2e-ns::f', payload: {} }), 'e2e-ns::')
    assert.match((await run({ lang: 'python', code: 'result = iii.namespace' })).result, /^code-runner::[0-9a-f]{32}::$/)
    await teardown({ namespace: 'e2e-ns' })
  })

  test('D12: one-shot python /work is private', async () => {
    assert.equal((await run({ lang: 'python', code: 'open("/work/x", "w").write("1")\nresult = open("/work/x").read()' })).result, '1')
    assert.equal((await run({ lang: 'python', code: 'import os\nresult = os.path.exists("/work/x")' })).result, false)
  })

  test('D13 (python): memory_mb 64 allocating 100 MiB → resource_exhausted', async () => {
    await expectError(() => run({ lang: 'python', memory_mb: 64, code: 'b = bytearray(100 * 1024 * 1024)' }), 'code-runner::resource_exhausted')
  })

  test('D1: two long one-shot runs (node and python) fill max_runtimes 2', async () => {
    await setConfig({ max_runtimes: 2 })
    await until(() => cr.logs().includes('max_runtimes 8 → 2'))
    const slow = [
      run({ lang: 'node', code: 'const t = Date.now(); while (Date.now() - t < 2500) {} return 1', timeout_ms: 10000 }),
      run({ lang: 'python', code: 'import time\ntime.sleep(2.5)\nresult = 1', timeout_ms: 10000 }),
    ]
    await new Promise((r) => setTimeout(r, 1000))
    await expectError(() => run({ lang: 'node', code: 'return 1' }), 'code-runner::capacity')
    const done = await Promise.all(slow)
    assert.deepEqual(done.map((d) => d.result), [1, 1])
    assert.equal((await run({ lang: 'python', code: 'result = 1' })).result, 1)
    await setConfig({ max_runtimes: 8 })
    await until(() => cr.logs().includes('max_runtimes 2 → 8'))
  })

  test('D6: node definition failures are invalid_request with the diagnostic', async () => {
    await expectError(() => register({ function_id: 'e2e-d6::a', lang: 'node', source: 'function handler( {' }), 'does not parse')
    await expectError(() => register({ function_id: 'e2e-d6::b', lang: 'node', source: '(p) => p' }), 'source must define handler(payload)')
    await expectError(() => register({ function_id: 'e2e-d6::c', lang: 'node', source: 'throw new Error("x")' }), 'threw while being defined')
  })

  test('D8: a kept runtime namespace hides its id', async () => {
    const k = await run({ lang: 'node', keep: true, code: 'iii.registerFunction(iii.namespace + "f", () => 1); return iii.namespace' })
    assert.ok(k.result.startsWith('code-runner::'))
    assert.ok(!k.result.includes(k.runtime_id.slice(3)))
    const td = await teardown({ runtime_id: k.runtime_id })
    assert.deepEqual(td.unregistered, [k.result + 'f'])
    assert.ok(!cr.logs().includes(k.runtime_id))
  })

  test('D9: timeout_ms 0 is the default', async () => {
    assert.equal((await run({ lang: 'node', code: 'await null; return 7', timeout_ms: 0 })).result, 7)
  })

  test('D10: a guest call cannot outlive its run', async () => {
    h.registerFunction('e2e-never::f', () => new Promise(() => {}))
    await until(async () => (await h.trigger({ function_id: 'engine::functions::info', payload: { function_ids: ['e2e-never::f'] } })).functions[0].error === undefined)
    const r = await run({ lang: 'node', timeout_ms: 1000, code: 'try { await iii.trigger({ function_id: "e2e-never::f", timeout: 30000 }) } catch (e) { return e.message }' })
    assert.match(r.result, /TIMEOUT: invocation timed out after \d+ms/)
  })

  test('D13: memory_mb with runtime_id is refused; 4096 is clamped', async () => {
    const k = await run({ lang: 'node', keep: true, code: 'return 1' })
    await expectError(() => run({ runtime_id: k.runtime_id, code: 'return 1', memory_mb: 64 }), 'code-runner::invalid_request')
    assert.equal((await run({ lang: 'node', code: 'return 1', memory_mb: 4096 })).result, 1)
  })

  test('D14: the raw error code is the code-runner code', async () => {
    const e = await expectError(() => run({ lang: 'node', code: 'for(;;){}', timeout_ms: 300 }), 'code-runner::timeout')
    assert.equal(e.code, 'code-runner::timeout')
    assert.ok(e.message.includes('code-runner::timeout: execution exceeded its deadline'))
  })

  test('P1: a one-shot runtime never serves a second request', async () => {
    await run({ lang: 'node', code: 'globalThis.leak = "secret"' })
    const r = await run({ lang: 'node', code: 'return typeof leak' })
    assert.equal(r.result, 'undefined')
  })

  test('R6: an uncaught scratch quota refusal is resource_exhausted; caught, the run continues', async () => {
    await setConfig({ scratch_mb: 1 })
    await until(() => cr.logs().includes('scratch_mb 64 → 1'))
    const big = 'iii.files.write("big.bin", "z".repeat(2 * 1048576))'
    await expectError(() => run({ lang: 'node', code: big }), 'big.bin')
    const r = await run({ lang: 'node', code: `try { ${big} } catch (e) { return "caught" }` })
    assert.equal(r.result, 'caught')
    await setConfig({ scratch_mb: 64 })
    await until(() => cr.logs().includes('scratch_mb 1 → 64'))
  })

  test('D2/D16: default_timeout_ms and max_timeout_ms apply on the next call', async () => {
    await setConfig({ default_timeout_ms: 200 })
    await until(() => cr.logs().includes('default_timeout_ms 5000 → 200'))
    await expectError(() => run({ lang: 'node', code: 'for(;;){}' }), 'code-runner::timeout')
    await setConfig({ default_timeout_ms: 5000, max_timeout_ms: 300 })
    await until(() => cr.logs().includes('max_timeout_ms 30000 → 300'))
    await expectError(() => run({ lang: 'node', code: 'for(;;){}', timeout_ms: 5000 }), 'code-runner::timeout')
    await setConfig({ max_timeout_ms: 30000 })
    await until(() => cr.logs().includes('max_timeout_ms 300 → 30000'))
  })

  test('D1: max_runtimes is one budget; lowering it kills nothing', async () => {
    const k1 = await run({ lang: 'node', keep: true, code: 'return 1' })
    const k2 = await run({ lang: 'node', keep: true, code: 'return 2' })
    await setConfig({ max_runtimes: 1 })
    await until(() => cr.logs().includes('max_runtimes 8 → 1'))
    assert.equal((await run({ runtime_id: k1.runtime_id, code: 'return 1' })).result, 1)
    await expectError(() => run({ lang: 'node', code: 'return 1' }), 'code-runner::capacity')
    await teardown({ runtime_id: k1.runtime_id })
    await teardown({ runtime_id: k2.runtime_id })
    await setConfig({ max_runtimes: 8 })
    await until(() => cr.logs().includes('max_runtimes 1 → 8'))
  })
})
