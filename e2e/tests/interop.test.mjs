// Interop: a real iii-sdk@0.22.1 worker and the Go iii client talk through
// the repo's test engine (docs/behaviour.md#test-engine-interop).
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startEngine, worker, until, expectError } from './lib.mjs'

let engine, n, d
let slowEntered = false

before(async () => {
  engine = await startEngine(['--demo-worker'])
  n = worker(engine.url, 'n')
  n.registerFunction('n::hello', async (input, metadata) => ({ hello: input?.who ?? null, caller: input?._caller_worker_id ?? null, metadata: metadata ?? null }))
  n.registerFunction('n::slow', async () => {
    slowEntered = true
    await new Promise((r) => setTimeout(r, 60000).unref())
    return 'late'
  })
  d = worker(engine.url, 'd')
  await until(async () => (await d.trigger({ function_id: 'engine::functions::info', payload: { function_ids: ['n::hello', 'g::call'] } })).functions.every((f) => !f.error))
})

after(async () => {
  await d?.shutdown()
  await n?.shutdown().catch(() => {})
  await engine?.stop()
})

test('Go calls Node: the engine forwards and adds _caller_worker_id', async () => {
  const out = await d.trigger({ function_id: 'g::call', payload: { function_id: 'n::hello', payload: { who: 'g' } } })
  assert.equal(out.result.hello, 'g')
  const workers = (await d.trigger({ function_id: 'engine::workers::list', payload: {} })).workers
  const g = workers.find((w) => w.name === 'g')
  assert.equal(out.result.caller, g.id)
})

test('Node calls Go with metadata; the Go handler sees it', async () => {
  const out = await n.trigger({ function_id: 'g::echo', payload: { x: 1 }, metadata: { tenant: 't1' } })
  assert.equal(out.data.x, 1)
  assert.deepEqual(out.metadata, { tenant: 't1' })
})

test('unknown function → function_not_found for Node and for Go', async () => {
  const e = await expectError(() => n.trigger({ function_id: 'nope::x', payload: {} }), 'function_not_found')
  assert.equal(e.code, 'function_not_found')
  const out = await d.trigger({ function_id: 'g::call', payload: { function_id: 'nope::x', payload: {} } })
  assert.equal(out.error.code, 'function_not_found')
})

test('both workers are listed with runtime, name and pid', async () => {
  const workers = (await d.trigger({ function_id: 'engine::workers::list', payload: {} })).workers
  const g = workers.find((w) => w.name === 'g')
  const nn = workers.find((w) => w.name === 'n')
  assert.equal(g.runtime, 'go')
  assert.equal(nn.runtime, 'node')
  assert.ok(Number.isInteger(g.pid) && g.pid > 0)
  assert.ok(Number.isInteger(nn.pid) && nn.pid > 0)
})

test('serving side dropped mid-call: invocation_stopped, then reattach, replay, callable again', async () => {
  const call = d.trigger({ function_id: 'g::call', payload: { function_id: 'n::slow', payload: {}, timeout_ms: 30000 } })
  await until(() => slowEntered)
  const before = (await d.trigger({ function_id: 'iiitest::frames', payload: { type: 'reattach' } })).frames.length
  const closed = await d.trigger({ function_id: 'iiitest::close_connection', payload: { name: 'n' } })
  assert.equal(closed.closed, 1)
  const out = await call
  assert.equal(out.error.code, 'invocation_stopped')
  // The SDK reconnects (first retry after ~1 s), sends reattach first, and replays n::hello.
  await until(async () => (await d.trigger({ function_id: 'iiitest::frames', payload: { type: 'reattach' } })).frames.length > before, { timeoutMs: 15000 })
  const again = await until(async () => {
    const r = await d.trigger({ function_id: 'g::call', payload: { function_id: 'n::hello', payload: { who: 'back' }, timeout_ms: 2000 } })
    return r.result ? r : null
  }, { timeoutMs: 15000 })
  assert.equal(again.result.hello, 'back')
})

test('a Go-provided trigger type bound from Node: register, fire, unregister on disconnect', async () => {
  const t = n.registerTrigger({ type: 'g-tt', function_id: 'n::hello', config: { every: 1 }, metadata: { m: 1 } })
  const binding = await until(async () => {
    const b = await d.trigger({ function_id: 'g::bindings', payload: {} })
    return b.registered.find((x) => x.function_id === 'n::hello')
  })
  assert.deepEqual(binding.config, { every: 1 })
  const fired = await d.trigger({ function_id: 'g::fire', payload: { trigger_id: binding.id, payload: { who: 'fired' } } })
  assert.equal(fired.hello, 'fired')
  assert.deepEqual(fired.metadata, { m: 1 })
  await n.shutdown()
  await until(async () => (await d.trigger({ function_id: 'g::bindings', payload: {} })).unregistered.includes(binding.id))
  void t
})
