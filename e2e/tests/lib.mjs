// Shared helpers for the e2e suite: start the repo's test engine, connect
// iii-sdk workers, poll, and assert errors by code.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { registerWorker } from 'iii-sdk'

const here = path.dirname(fileURLToPath(import.meta.url))
export const repoRoot = path.resolve(here, '..', '..')

// startEngine runs bin/iiitest-engine (built by `make e2e`) and resolves
// with its URL once it listens.
export async function startEngine(args = []) {
  const bin = path.join(repoRoot, 'bin', 'iiitest-engine')
  const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })
  const url = await new Promise((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', (code) => reject(new Error(`iiitest-engine exited with ${code}`)))
    lines.on('line', (line) => {
      if (line.startsWith('url=')) resolve(line.slice(4))
    })
  })
  return {
    url,
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.stdin.end()
      await once(child, 'exit')
    },
  }
}

// worker connects an iii-sdk worker with OTel off (the test engine accepts
// /otel too, but there is nothing to export).
export function worker(url, name, extra = {}) {
  return registerWorker(url, { workerName: name, otel: { enabled: false }, invocationTimeoutMs: 20000, ...extra })
}

// until polls fn until it returns a truthy value (8 s, every 100 ms).
export async function until(fn, { timeoutMs = 8000, everyMs = 100 } = {}) {
  const deadline = Date.now() + timeoutMs
  let last
  for (;;) {
    try {
      const v = await fn()
      if (v) return v
    } catch (e) {
      last = e
    }
    if (Date.now() > deadline) throw new Error(`until: timed out${last ? `; last error: ${last.message}` : ''}`)
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

// expectError asserts that fn rejects with an error whose code or message
// contains code, and returns the error.
export async function expectError(fn, code) {
  try {
    await fn()
  } catch (e) {
    const text = `${e.code ?? ''} ${e.message ?? ''}`
    if (!text.includes(code)) throw new Error(`expected ${code}, got ${text}`)
    return e
  }
  throw new Error(`expected ${code}, but the call succeeded`)
}

// startCodeRunner starts bin/code-runner against url with a seed file and
// waits up to 30 s until code-runner::run answers through the bus.
export async function startCodeRunner(url, caller, { seed, args = [], env = {} } = {}) {
  const { writeFileSync, mkdtempSync } = await import('node:fs')
  const os = await import('node:os')
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cr-e2e-'))
  const seedPath = path.join(dir, 'seed.yaml')
  writeFileSync(seedPath, seed ?? 'max_runtimes: 8\ndefault_timeout_ms: 5000\nmax_timeout_ms: 30000\nidle_ttl_secs: 900\nheap_mb: 128\nexternal_mb: 64\nscratch_mb: 64\nscratch_files: 256\n')
  const bin = path.join(repoRoot, 'bin', 'code-runner')
  const logs = []
  const child = spawn(bin, ['--url', url, '--config', seedPath, '--log-level', 'debug', ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR ?? '/tmp', ...env },
  })
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (d) => logs.push(d))
  await until(async () => {
    const r = await caller.trigger({ function_id: 'code-runner::run', payload: { lang: 'node', code: 'return 1' }, timeoutMs: 5000 })
    return r.result === 1
  }, { timeoutMs: 180000, everyMs: 200 }) // a cold python.wasm compile comes first on a new machine
  return {
    child,
    logs: () => logs.join(''),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      await once(child, 'exit')
    },
  }
}
