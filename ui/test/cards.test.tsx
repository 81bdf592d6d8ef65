import { describe, expect, it } from 'vitest'
import { renderToStaticMarkup } from 'react-dom/server'
import setup, { renderers, redactRuntimeIdsDeep, truncateId, CodeRunnerConfigForm } from '../src/page'
import type { FunctionTriggerMessage } from '../src/common'
import { pathList } from '../src/configForm'

const ID = 'rt-3f9a1c2e-1b2c-4d5e-8f90-123456789abc'
const SHORT = 'rt-3f9a…'

const [runR, regR, tdR] = renderers
const html = (n: unknown) => renderToStaticMarkup(n as never)
const settled = (r: (typeof renderers)[number], m: FunctionTriggerMessage) => html(r.tryRender(m))

function noFullId(s: string) {
  expect(s).not.toMatch(/rt-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/i)
}

describe('setup', () => {
  it('registers three renderers and the configuration form', () => {
    const regs: string[] = []
    const forms: string[] = []
    setup({ functionTriggers: { register: (r) => regs.push(r.id) }, configForms: { register: (id) => forms.push(id) } })
    expect(regs).toEqual(['code-runner/page.js#run', 'code-runner/page.js#register_function', 'code-runner/page.js#teardown'])
    expect(forms).toEqual(['code-runner'])
  })
  it('each renderer claims only its own function id; inject-guidance gets none', () => {
    expect(renderers.map((r) => r.isMatch('code-runner::run'))).toEqual([true, false, false])
    expect(renderers.map((r) => r.isMatch('code-runner::inject-guidance'))).toEqual([false, false, false])
    expect(runR.tryRender({ functionId: 'code-runner::teardown', input: {}, output: {} })).toBeNull()
  })
})

describe('redactRuntimeIdsDeep', () => {
  it('redacts values and keys, nested, without mutating', () => {
    const input = { [ID]: [ID, { note: `see ${ID.toUpperCase()}` }], n: 1 }
    const copy = JSON.parse(JSON.stringify(input))
    const out = redactRuntimeIdsDeep(input) as Record<string, unknown>
    expect(input).toEqual(copy)
    expect(JSON.stringify(out)).toBe(JSON.stringify({ [SHORT]: [SHORT, { note: 'see RT-3F9A…' }], n: 1 }))
  })
  it('replaces cycles and handles shared references', () => {
    const shared = { id: ID }
    const cyc: Record<string, unknown> = { a: shared, b: shared }
    cyc.self = cyc
    const out = redactRuntimeIdsDeep(cyc) as Record<string, any>
    expect(out.self).toBe('[circular]')
    expect(out.a.id).toBe(SHORT)
    expect(out.b.id).toBe(SHORT)
  })
  it('keeps strings of ≤ 8 characters whole', () => {
    expect(truncateId('rt-12345')).toBe('rt-12345')
    expect(truncateId(ID)).toBe(SHORT)
  })
  it('is every renderer\'s redactRaw', () => {
    for (const r of renderers) expect(JSON.stringify(r.redactRaw!({ x: ID }))).not.toContain(ID)
  })
})

describe('run card', () => {
  const base = { functionId: 'code-runner::run' }
  it('leads with the verdict, then the completion value, the source, the streams', () => {
    const s = settled(runR, { ...base, input: { lang: 'node', code: 'console.log("hi"); return 2 + 2' },
      output: { stdout: 'hi\n', stderr: '', exit_code: 0, success: true, duration_ms: 12, result: 4 } })
    expect(s.indexOf('exit 0')).toBeLessThan(s.indexOf('cr-ui-result-body'))
    expect(s.indexOf('cr-ui-result-body')).toBeLessThan(s.indexOf('cr-source'))
    expect(s.indexOf('cr-source')).toBeLessThan(s.indexOf('stdout'))
    expect(s).toContain('>4</pre>')
    expect(s).toContain('one-shot')
    expect(s).toContain('12 ms')
  })
  it('renders objects as JSON and null with the language hint', () => {
    expect(settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { exit_code: 0, result: { a: [1] } } })).toContain('&quot;a&quot;')
    const node = settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { exit_code: 0, result: null } })
    expect(node).toContain('returned nothing')
    expect(node).toContain('function body')
    expect(node).toContain('`return`')
    const py = settled(runR, { ...base, input: { lang: 'python', code: '' }, output: { exit_code: 0, result: null } })
    expect(py).toContain('module')
    expect(py).toContain('assign `result`')
    const none = settled(runR, { ...base, input: { runtime_id: ID, code: '' }, output: { exit_code: 0, result: null, runtime_id: ID } })
    expect(none).toContain('returned nothing')
    expect(none).not.toContain('function body')
    expect(none).not.toContain('module')
  })
  it('a python import that failed says what is built in and that there is no pip', () => {
    const s = settled(runR, { ...base, input: { lang: 'python', code: 'import numpy' },
      output: { exit_code: 1, result: null, stdout: '', stderr: "Traceback (most recent call last):\nModuleNotFoundError: No module named 'numpy'\n" } })
    expect(s).toContain('no module numpy here')
    expect(s).toContain('no pip')
    expect(s).toContain('sympy, networkx')
    const other = settled(runR, { ...base, input: { lang: 'python', code: 'raise X' }, output: { exit_code: 1, result: null, stderr: 'NameError: X\n' } })
    expect(other).not.toContain('no pip')
    const node = settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { exit_code: 1, result: null, stderr: "ModuleNotFoundError: No module named 'x'" } })
    expect(node).not.toContain('no pip')
  })
  it('a node module or name that is not there says what is', () => {
    const missing = settled(runR, { ...base, input: { lang: 'node', code: 'require("left-pad")' },
      output: { exit_code: 1, result: null, stderr: "Error: Cannot find module 'left-pad': code-runner has no network and no npm install; built-in packages: lodash\n" } })
    expect(missing).toContain('no package left-pad here')
    expect(missing).toContain('no npm install')
    expect(missing).toContain('lodash, date-fns')
    const builtin = settled(runR, { ...base, input: { lang: 'node', code: '' },
      output: { exit_code: 1, result: null, stderr: 'Error [ERR_CODE_RUNNER_UNAVAILABLE]: node:child_process is not available in code-runner (no network, no processes, no host files)\n' } })
    expect(builtin).toContain('node:child_process is not here')
    const ref = settled(runR, { ...base, input: { lang: 'node', code: 'document.title' },
      output: { exit_code: 1, result: null, stderr: 'ReferenceError: document is not defined\n    at code.js:1:1\n' } })
    expect(ref).toContain('document is not defined here')
    expect(ref).toContain('no DOM')
    const other = settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { exit_code: 1, result: null, stderr: 'Error: boom\n' } })
    expect(other).not.toContain('no npm install')
    const py = settled(runR, { ...base, input: { lang: 'python', code: '' }, output: { exit_code: 1, result: null, stderr: 'ReferenceError: x is not defined' } })
    expect(py).not.toContain('no DOM')
  })
  it('flags a missing result key', () => {
    expect(settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { exit_code: 0 } })).toContain('no `result` key')
  })
  it('a non-zero exit is a warning, never an alert, and still shows the result', () => {
    const s = settled(runR, { ...base, input: { lang: 'python', code: 'raise X' }, output: { exit_code: 1, result: null, stderr: 'X\n', stdout: '' } })
    expect(s).toContain('cr-tone--warn')
    expect(s).not.toContain('cr-tone--alert')
    expect(s).toContain('returned nothing')
  })
  it('redacts ids everywhere and shows the runtime chip truncated', () => {
    const s = settled(runR, { ...base, input: { runtime_id: ID, code: `// ${ID}` },
      output: { runtime_id: ID, stdout: ID, stderr: `unknown runtime_id ${ID}`, exit_code: 0, result: { [ID]: ID } } })
    noFullId(s)
    expect(s).toContain(SHORT)
    expect(s).toContain('reused runtime')
  })
  it('chips: keep, lang, timeout, memory; no network chip', () => {
    const s = settled(runR, { ...base, input: { lang: 'node', code: '', keep: true, timeout_ms: 900, memory_mb: 64 }, output: { exit_code: 0, result: 1, runtime_id: ID } })
    expect(s).toContain('keeps the runtime')
    expect(s).toContain('timeout 900 ms')
    expect(s).toContain('memory 64 MiB')
    expect(s).not.toContain('cr-run-net')
  })
  it('error, envelope, gate denial, running and preview states', () => {
    const err = settled(runR, { ...base, input: {}, output: { error: { code: 'code-runner::expired', message: `code-runner::expired: runtime ${ID} expired` } } })
    expect(err).toContain('cr-tone--alert')
    noFullId(err)
    const env = settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { content: '{"exit_code":0,"result":7}', details: null } })
    expect(env).toContain('>7</pre>')
    const env2 = settled(runR, { ...base, input: { lang: 'node', code: '' }, output: { content: 'x', details: { exit_code: 0, result: 8 } } })
    expect(env2).toContain('>8</pre>')
    expect(settled(runR, { ...base, input: {}, output: { decision: 'deny', reason: 'operator said no' } })).toContain('never ran')
    expect(html(runR.tryRenderRunning!({ ...base, input: { lang: 'node', code: 'return 1' }, running: true }))).toContain('running node')
    const prev = html(runR.tryRenderPreview!({ ...base, input: { lang: 'node', code: 'x'.repeat(300) } }))
    expect(prev).toContain('clipped to 256 of 300')
  })
  it('malformed output is visible', () => {
    expect(settled(runR, { ...base, input: {}, output: 'garbage' })).toContain('malformed response')
  })
})

describe('register_function card', () => {
  const base = { functionId: 'code-runner::register_function' }
  it('shows the id, the namespace it claims across both engines, and the status', () => {
    const s = settled(regR, { ...base, input: { function_id: 'app::greet', lang: 'node', source: 'export function handler(p) { return p }', description: 'greets' },
      output: { function_id: 'app::greet', registered: true } })
    expect(s).toContain('app::greet')
    expect(s).toContain('claims namespace <code>app::</code>')
    expect(s).toContain('BOTH engines')
    expect(s).toContain('registered')
    expect(s).toContain('greets')
  })
  it('warns about a missing description and a source without handler', () => {
    const py = settled(regR, { ...base, input: { function_id: 'app::x', lang: 'python', source: 'x = 1' }, output: { function_id: 'app::x', registered: false } })
    expect(py).toContain('no description')
    expect(py).toContain('will be REFUSED')
    expect(py).toContain('not registered')
    const node = settled(regR, { ...base, input: { function_id: 'app::x', lang: 'node', source: '(p) => p' }, output: {} })
    expect(node).toContain('will be refused too')
  })
  it('warns about mismatched and malformed fields', () => {
    const s = settled(regR, { ...base, input: { function_id: 'noseparator', lang: 'ruby' }, output: { function_id: 'other::x', registered: true } })
    expect(s).toContain('no namespace')
    expect(s).toContain('lang must be')
    expect(s).toContain('different function id')
  })
})

describe('teardown card', () => {
  const base = { functionId: 'code-runner::teardown' }
  it('lists the ids that stopped resolving, with counts', () => {
    const s = settled(tdR, { ...base, input: { namespace: 'app' }, output: { namespace: 'app::', torn_down: true, unregistered: ['app::a', 'app::b'] } })
    expect(s).toContain('2 function ids stopped resolving')
    expect(s).toContain('app::a')
    expect(s).toContain('namespace')
  })
  it('an empty list reads as normal', () => {
    const s = settled(tdR, { ...base, input: { runtime_id: ID }, output: { runtime_id: ID, torn_down: true, unregistered: [] } })
    expect(s).toContain('nothing else stopped resolving')
    expect(s).not.toContain('cr-warning')
    noFullId(s)
  })
  it('clamps at 12 with an expander', () => {
    const ids = Array.from({ length: 15 }, (_, i) => `app::f${String(i).padStart(2, '0')}`)
    const s = settled(tdR, { ...base, input: { namespace: 'app' }, output: { torn_down: true, unregistered: ids } })
    expect(s).toContain('15 function ids')
    expect(s).toContain('<summary>3 more</summary>')
  })
  it('warns on torn_down false, a missing list and malformed entries', () => {
    expect(settled(tdR, { ...base, input: { namespace: 'a' }, output: { torn_down: false, unregistered: [] } })).toContain('torn_down is not true')
    expect(settled(tdR, { ...base, input: { namespace: 'a' }, output: { torn_down: true } })).toContain('list is missing')
    expect(settled(tdR, { ...base, input: { namespace: 'a' }, output: { torn_down: true, unregistered: ['a::x', 5] } })).toContain('1 malformed entry')
  })
  it('errors are redacted; gate denial, running, preview', () => {
    const e = settled(tdR, { ...base, input: { runtime_id: ID }, output: { error: { code: 'code-runner::expired', message: `runtime ${ID} expired` } } })
    noFullId(e)
    expect(settled(tdR, { ...base, input: {}, output: { denied: true } })).toContain('never ran')
    expect(html(tdR.tryRenderRunning!({ ...base, input: { namespace: 'a' } }))).toContain('tearing down')
    expect(html(tdR.tryRenderPreview!({ ...base, input: { runtime_id: ID } }))).toContain(SHORT)
  })
  it('ignores other functions', () => {
    expect(tdR.tryRender({ functionId: 'code-runner::run', input: {}, output: {} })).toBeNull()
  })
})

describe('configuration form', () => {
  it('groups keys by when they apply and shows hints and the footprint', () => {
    const s = html(<CodeRunnerConfigForm id="code-runner" schema={null} value={{ max_runtimes: 4, scratch_mb: 8, max_result_bytes: 4000 }} onChange={() => {}} />)
    for (const label of ['applies to the next call', 'applies immediately', 'applies to runtimes created after saving', 'resizes in the background']) expect(s).toContain(label)
    expect(s).toContain('≈ 1,000 tokens')
    expect(s).toContain('max_runtimes × scratch_mb = 32 MiB')
    expect(s).toContain('data-field="warm_pool_python"')
  })
  it('draws python_path one path per line and reports it as a list', () => {
    const s = html(<CodeRunnerConfigForm id="code-runner" schema={null} value={{ python_path: ['/opt/libs', '/opt/extra.whl'] }} onChange={() => {}} />)
    expect(s).toContain('applies to python interpreters started after saving')
    expect(s).toContain('data-field="python_path"')
    expect(s).toContain('/opt/libs\n/opt/extra.whl')
    expect(pathList(' /opt/libs \n\n/opt/extra.whl\n')).toEqual(['/opt/libs', '/opt/extra.whl'])
    expect(pathList('')).toEqual([])
  })
})
