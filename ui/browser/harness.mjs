// Serves a harness page on 127.0.0.1 that provides React through an import
// map (as the console does), a stub `host`, and loads the built
// dist/page.js and dist/styles.css exactly as the console would.
import { build } from 'esbuild'
import { createServer } from 'node:http'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const uiDir = path.resolve(here, '..')
const require = createRequire(path.join(uiDir, 'package.json'))

export const RUNTIME_ID = 'rt-3f9a1c2e-1b2c-4d5e-8f90-123456789abc'

// ESM shims for the CommonJS React packages; splitting keeps one React.
async function buildVendor(dir) {
  const specs = { react: 'react', 'react-dom': 'react-dom', 'react-dom-client': 'react-dom/client', 'jsx-runtime': 'react/jsx-runtime' }
  const entries = []
  for (const [name, spec] of Object.entries(specs)) {
    const names = Object.keys(require(spec)).filter((k) => /^[A-Za-z_$][\w$]*$/.test(k) && k !== 'default')
    const file = path.join(dir, `${name}.entry.js`)
    writeFileSync(file, `import M from ${JSON.stringify(spec)};\nexport default M;\nexport const { ${names.join(', ')} } = M;\n`)
    entries.push({ in: file, out: name })
  }
  writeFileSync(path.join(dir, 'console-ui.entry.js'), 'export const version = "stub";\n')
  entries.push({ in: path.join(dir, 'console-ui.entry.js'), out: 'console-ui' })
  await build({ entryPoints: entries, bundle: true, splitting: true, format: 'esm', outdir: path.join(dir, 'vendor'),
    define: { 'process.env.NODE_ENV': '"production"' }, nodePaths: [path.join(uiDir, 'node_modules')], logLevel: 'silent' })
}

const samples = {
  'run-ok': { functionId: 'code-runner::run', input: { lang: 'node', keep: true, code: 'console.log("hi")\nglobalThis.n = 41\nreturn { answer: n + 1 }' },
    output: { runtime_id: RUNTIME_ID, stdout: 'hi\n', stderr: '', exit_code: 0, success: true, duration_ms: 12, result: { answer: 42 } } },
  'run-failed': { functionId: 'code-runner::run', input: { lang: 'python', code: 'print("before")\nraise ValueError("x")' },
    output: { stdout: 'before\n', stderr: 'ValueError: x\nTraceback (most recent call last):\n  File "<code>", line 2, in <module>\n', exit_code: 1, success: false, duration_ms: 3, result: null } },
  'run-error': { functionId: 'code-runner::run', input: { runtime_id: RUNTIME_ID, code: 'return 1' },
    output: { error: { code: 'code-runner::expired', message: `code-runner::expired: runtime ${RUNTIME_ID} expired: it was reaped or killed` } } },
  register: { functionId: 'code-runner::register_function', input: { function_id: 'my-app::greet', lang: 'node', description: 'Greets someone by name',
    source: 'export function handler(p) {\n  return `hello ${p.who}`\n}' }, output: { function_id: 'my-app::greet', registered: true } },
  teardown: { functionId: 'code-runner::teardown', input: { namespace: 'my-app' }, output: { namespace: 'my-app::', torn_down: true, unregistered: ['my-app::greet', 'my-app::v2::save'] } },
}

const page = `<!doctype html>
<html><head><meta charset="utf-8"><title>code-runner cards</title>
<script type="importmap">{"imports": {
  "react": "/vendor/react.js", "react-dom": "/vendor/react-dom.js", "react-dom/client": "/vendor/react-dom-client.js",
  "react/jsx-runtime": "/vendor/jsx-runtime.js", "@iii-dev/console-ui": "/vendor/console-ui.js"}}</script>
<link rel="stylesheet" href="/dist/styles.css">
<style>:root{--color-bg:#fff;--color-ink:#1b1b1f;--color-ink-faint:#5c5c66;--color-ink-ghost:#8a8a94;--color-accent:#4053d6;--color-accent-fg:#fff;--color-alert:#c62828;--color-ok:#2e7d32;--color-warn:#b26a00;--color-panel:#fafafa;--color-paper-2:#f0f0f3;--color-ring:#4053d6;--color-rule:#e2e2e8;--color-rule-2:#cfcfd8}
body{font-family:system-ui,sans-serif;margin:16px;width:760px} .slot{margin-bottom:16px}</style>
</head><body>
<div id="cards"></div>
<script type="module">
import { createElement } from 'react'
import { createRoot } from 'react-dom/client'
const samples = ${JSON.stringify(samples)}
const renderers = []
const forms = {}
const host = { functionTriggers: { register: (r) => { renderers.push(r); return () => {} } }, configForms: { register: (id, c) => { forms[id] = c } } }
const mod = await import('/dist/page.js')
mod.default(host)
window.__renderers = renderers.map((r) => r.id)
const root = document.getElementById('cards')
for (const [name, msg] of Object.entries(samples)) {
  const r = renderers.find((x) => x.isMatch(msg.functionId))
  const slot = document.createElement('div')
  slot.className = 'slot'
  slot.id = 'card-' + name
  root.appendChild(slot)
  // The console mounts every injected render inside this wrapper.
  createRoot(slot).render(createElement('div', { 'data-iii-ui': 'code-runner', style: { display: 'contents' } }, r.tryRender(msg)))
}
const formSlot = document.createElement('div')
formSlot.id = 'card-config'
formSlot.className = 'slot'
root.appendChild(formSlot)
window.__lastConfig = null
createRoot(formSlot).render(createElement(forms['code-runner'], { id: 'code-runner', schema: null,
  value: { max_runtimes: 32, scratch_mb: 8 }, onChange: (v) => { window.__lastConfig = v }, focusField: ['heap_mb'] }))
// Ready when React has committed every card and the form (render is
// asynchronous; a fixed delay was flaky on a loaded machine).
const rendered = () => [...root.children].every((s) => s.childElementCount > 0) && document.querySelector('#card-config [data-field]') !== null
const poll = () => { if (rendered()) window.__ready = true; else setTimeout(poll, 10) }
poll()
</script></body></html>`

/** startHarness builds the vendor shims and serves the page; it resolves with its URL. */
export async function startHarness() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cr-ui-harness-'))
  await buildVendor(dir)
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x')
    let file
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      return res.end(page)
    }
    if (url.pathname.startsWith('/vendor/')) file = path.join(dir, 'vendor', path.basename(url.pathname))
    if (url.pathname.startsWith('/dist/')) file = path.join(uiDir, 'dist', path.basename(url.pathname))
    try {
      const body = readFileSync(file)
      res.writeHead(200, { 'content-type': file.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8' })
      res.end(body)
    } catch {
      res.writeHead(404)
      res.end()
    }
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return { url: `http://127.0.0.1:${server.address().port}/`, close: () => new Promise((r) => server.close(r)) }
}
