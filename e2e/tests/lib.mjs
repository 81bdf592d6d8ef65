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
      if (child.exitCode !== null) return
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
