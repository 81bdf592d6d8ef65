// Two code-runner processes on one engine, seen by a real iii-sdk caller as
// one worker (contract §24), on a last-writer (0.22) and a refusing (0.23)
// test engine: kept runtimes of both served through the shared ids, one
// namespace across a join, a configuration change applied by both, and
// failover when the holder of the shared ids is SIGKILLed — the namespace
// served again by the survivor from its records.
import { test, describe, after } from 'node:test'
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { startEngine, startCodeRunner, worker, until } from './lib.mjs'

// tag is a worker's routing tag: the first four hex digits of the SHA-256
// of its name (core.TagOf).
const tag = (name) => createHash('sha256').update(name).digest('hex').slice(0, 4)

for (const version of ['0.22', '0.23']) {
  describe(`two workers, one face (engine ${version})`, () => {
    let engine, h
    const workers = {}
    after(async () => {
      for (const w of Object.values(workers)) await w?.stop()
      await h?.shutdown()
      await engine?.stop()
    })
    const call = (function_id, payload) => h.trigger({ function_id, payload, timeoutMs: 20000 })
    const listed = async (prefix) =>
      (await call('engine::functions::list', { prefix, include_internal: true })).functions
    const holder = async () => (await listed('code-runner::run')).find((f) => f.function_id === 'code-runner::run')?.worker_name
    const start = async (name) => {
      workers[name] = await startCodeRunner(engine.url, h, { env: { III_WORKER_NAME: name } })
      await until(async () => (await listed(`code-runner::run@${tag(name)}`)).length === 1, { timeoutMs: 30000 })
    }

    test('kept runtimes of both workers and one namespace, through the shared ids', async () => {
      engine = await startEngine(['--engine-version', version])
      h = worker(engine.url, `e2e-group-${version}`)
      await start('cr-a')
      await call('code-runner::register_function', { function_id: 'grp::inc', lang: 'node', source: 'function handler() { globalThis.n = (globalThis.n || 0) + 1; return globalThis.n }' })
      await start('cr-b')
      // The joiner leaves the shared ids with cr-a on both engine versions
      // (on 0.22 its registration would have taken them: the last writer
      // wins). Registered after it joined: the same namespace, the same
      // runtime.
      await new Promise((r) => setTimeout(r, 500))
      assert.equal(await holder(), 'cr-a')
      await call('code-runner::register_function', { function_id: 'grp::read', lang: 'node', source: 'function handler() { return globalThis.n || 0 }' })
      const rows = await listed('grp::')
      assert.deepEqual(rows.map((f) => f.worker_name), ['cr-a', 'cr-a'])
      assert.equal(await call('grp::inc', {}), 1)
      assert.equal(await call('grp::read', {}), 1)
      // A kept runtime on each worker, made through its own id, then many
      // turns through the shared id.
      const kept = {}
      for (const name of ['cr-a', 'cr-b']) {
        const r = await call(`code-runner::run@${tag(name)}`, { lang: 'python', keep: true, code: 'n = 0\nresult = n' })
        assert.ok(r.runtime_id.startsWith(`rt-${tag(name)}`), r.runtime_id)
        kept[name] = r.runtime_id
      }
      for (let i = 1; i <= 20; i++) {
        for (const name of ['cr-a', 'cr-b']) {
          const r = await call('code-runner::run', { runtime_id: kept[name], code: 'n += 1\nresult = n' })
          assert.equal(r.result, i)
          assert.equal(r.runtime_id, kept[name])
        }
      }
      // A configuration change reaches both workers.
      const current = (await call('configuration::get', { id: 'code-runner' })).value
      await call('iiitest::config_set', { id: 'code-runner', value: { ...current, max_result_bytes: 40 } })
      for (const name of ['cr-a', 'cr-b']) {
        await until(async () => {
          const r = await call(`code-runner::run@${tag(name)}`, { lang: 'node', code: 'return "x".repeat(500)' })
          return typeof r.result === "string" && r.result.length < 500
        })
      }
      await call('iiitest::config_set', { id: 'code-runner', value: current })

      // SIGKILL the holder: another worker serves the shared ids within
      // seconds, the dead worker's runtime answers expired, the survivor's
      // keeps its globals.
      const dead = await holder()
      const alive = dead === 'cr-a' ? 'cr-b' : 'cr-a'
      workers[dead].child.kill('SIGKILL')
      await until(async () => (await call('code-runner::run', { lang: 'node', code: 'return 6 * 7' })).result === 42, { timeoutMs: 15000 })
      assert.equal(await holder(), alive)
      await until(async () => {
        try {
          await call('code-runner::run', { runtime_id: kept[dead], code: 'result = 1' })
        } catch (e) {
          return `${e.code ?? ''} ${e.message}`.includes('code-runner::expired')
        }
        return false
      })
      const r = await call('code-runner::run', { runtime_id: kept[alive], code: 'n += 1\nresult = n' })
      assert.equal(r.result, 21)
      // The namespace lived on cr-a: wherever it was, the survivor serves
      // it again from its records (contract §26.2), its module state
      // rebuilt from its sources (nothing incremented yet on a fresh one).
      await until(async () => {
        try {
          const rows = await listed('grp::')
          return rows.length === 2 && rows.every((f) => f.worker_name === alive)
        } catch (e) {
          return false
        }
      }, { timeoutMs: 10000 })
      if (dead === 'cr-a') assert.equal(await call('grp::read', {}), 0)
      assert.equal(await call('grp::inc', {}), dead === 'cr-a' ? 1 : 2)
    })
  })
}
