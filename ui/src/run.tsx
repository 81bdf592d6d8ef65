import {
  Card, Chip, DeniedCard, ErrorCard, RunningCard, RuntimeChip, Source, Terminal,
  deniedOf, errorOf, isObj, jsonText, unwrap, type FunctionTriggerMessage, type Obj,
} from './common'
import { redactString } from './redact'

const RETURN_HINT: Record<string, string> = {
  node: 'node runs code as a function body — use `return` to send a value back',
  python: 'python runs code as a module — assign `result` to send a value back',
}

/** PYTHON_LIBRARIES is what a python guest can import beyond the standard library. */
export const PYTHON_LIBRARIES =
  'openpyxl, xlsxwriter, pypdf, sympy, networkx, dateutil, pytz, yaml, jinja2, bs4, markdown, rich, pygments, markdown_it, lark, pyparsing, tomlkit, xmltodict, jmespath, pydantic, jsonschema, attrs, toolz, more_itertools, sortedcontainers, cachetools, tabulate, humanize, unidecode, isodate, chardet, idna, packaging'

/** missingModule names the module a python failure could not import, if that is how it failed. */
export function missingModule(stderr: unknown): string | null {
  if (typeof stderr !== 'string') return null
  const m = /ModuleNotFoundError: No module named '([^']+)'/.exec(stderr)
  return m ? m[1] : null
}

/** NODE_PACKAGES is the npm packages built into the node environment (contract §25.4). */
export const NODE_PACKAGES =
  'lodash, date-fns, dayjs, zod, yaml, papaparse, marked, decimal.js, uuid, ajv, mathjs, fast-xml-parser, diff, semver'

/** nodeHint says what is there when a node failure was a missing module or an undefined name. */
export function nodeHint(stderr: unknown): string | null {
  if (typeof stderr !== 'string') return null
  const missing = /Cannot find module '([^']+)'/.exec(stderr)
  if (missing) {
    return `no package ${missing[1]} here: no npm install and no network; built in: ${NODE_PACKAGES}, and node's I/O-free built-ins (assert, buffer, crypto, events, path, stream, url, util, zlib, fs over /scratch)`
  }
  const unavailable = /node:([\w/]+) is not available in code-runner/.exec(stderr)
  if (unavailable) {
    return `node:${unavailable[1]} is not here: no network, no processes, no host files — call bus functions with iii.trigger instead`
  }
  const ref = /ReferenceError: ([\w$]+) is not defined/.exec(stderr)
  if (ref) {
    return `${ref[1]} is not defined here: the sandbox has node's and the web's globals (timers, console, URL, TextEncoder, crypto, structuredClone, Buffer, process, require) but no DOM (window, document) and no network`
  }
  return null
}

function chips(input: Obj, output: Obj | null) {
  const rid = typeof output?.runtime_id === 'string' ? output.runtime_id : typeof input.runtime_id === 'string' ? input.runtime_id : ''
  const mode = typeof input.runtime_id === 'string' && input.runtime_id ? 'reused runtime' : input.keep === true ? 'keeps the runtime' : 'one-shot'
  return (
    <div className="cr-chips">
      {rid ? <RuntimeChip id={rid} /> : null}
      <Chip>{mode}</Chip>
      {typeof input.lang === 'string' ? <Chip>{input.lang}</Chip> : null}
      {input.timeout_ms != null ? <Chip>timeout {String(input.timeout_ms)} ms</Chip> : null}
      {input.memory_mb != null ? <Chip>memory {String(input.memory_mb)} MiB</Chip> : null}
    </div>
  )
}

function Completion(props: { output: Obj; lang?: string }) {
  if (!('result' in props.output)) {
    return <div className="cr-result cr-malformed">malformed response: no `result` key</div>
  }
  const r = props.output.result
  if (r === null) {
    return (
      <div className="cr-result">
        <span className="cr-result-null">returned nothing</span>
        {props.lang && RETURN_HINT[props.lang] ? <span className="cr-note"> — {RETURN_HINT[props.lang]}</span> : null}
      </div>
    )
  }
  const text = isObj(r) || Array.isArray(r) ? jsonText(r) : typeof r === 'string' ? redactString(r) : String(r)
  return (
    <div className="cr-result">
      <pre className="cr-ui-result-body">{text}</pre>
    </div>
  )
}

/** RunCard renders a settled code-runner::run call (docs/behaviour.md#console-cards). */
export function RunCard({ message }: { message: FunctionTriggerMessage }) {
  const input = isObj(message.input) ? message.input : {}
  const output = unwrap(message.output)
  const denied = deniedOf(output)
  if (denied) return <DeniedCard functionId={message.functionId} reason={denied} />
  const err = errorOf(output)
  if (err) return <ErrorCard functionId={message.functionId} code={err.code} message={err.message} />
  if (!isObj(output)) {
    return (
      <Card kind="run" tone="warn">
        <div className="cr-malformed">malformed response: {redactString(JSON.stringify(output) ?? String(output))}</div>
      </Card>
    )
  }
  const exit = typeof output.exit_code === 'number' ? output.exit_code : null
  const failed = exit !== 0
  const lang = typeof input.lang === 'string' ? input.lang : undefined
  const duration = typeof output.duration_ms === 'number' ? output.duration_ms : message.durationMs
  return (
    <Card kind="run" tone={failed ? 'warn' : 'ok'}>
      <header className={`cr-head cr-verdict ${failed ? 'cr-verdict--warn' : 'cr-verdict--ok'}`}>
        <strong>exit {exit ?? '?'}</strong>
        <span className="cr-note">{failed ? ' — the code threw or failed; see stderr' : ' — completed'}</span>
        {duration != null ? <span className="cr-duration"> · {duration} ms</span> : null}
      </header>
      {chips(input, output)}
      <Completion output={output} lang={lang} />
      {typeof input.code === 'string' ? <Source lang={lang} code={input.code} /> : null}
      {typeof output.stdout === 'string' && output.stdout !== '' ? <Terminal label="stdout" text={output.stdout} /> : null}
      {typeof output.stderr === 'string' && output.stderr !== '' ? <Terminal label="stderr" text={output.stderr} /> : null}
      {lang === 'python' && missingModule(output.stderr) ? (
        <div className="cr-note cr-missing-module">
          no module {missingModule(output.stderr)} here: there is no pip and no network (no numpy, no pandas); built in besides the
          standard library: {PYTHON_LIBRARIES}
        </div>
      ) : null}
      {lang === 'node' && nodeHint(output.stderr) ? <div className="cr-note cr-missing-module">{nodeHint(output.stderr)}</div> : null}
    </Card>
  )
}

export function RunRunning({ message }: { message: FunctionTriggerMessage }) {
  const input = isObj(message.input) ? message.input : {}
  return (
    <RunningCard title={`running ${typeof input.lang === 'string' ? input.lang : 'code'}…`}>
      {chips(input, null)}
      {typeof input.code === 'string' ? <Source lang={typeof input.lang === 'string' ? input.lang : undefined} code={input.code} /> : null}
    </RunningCard>
  )
}

/** RunPreview is the approval-gate preview: the code, clipped to 256 characters. */
export function RunPreview({ message }: { message: FunctionTriggerMessage }) {
  const input = isObj(message.input) ? message.input : {}
  const code = typeof input.code === 'string' ? input.code : ''
  const clipped = code.length > 256
  return (
    <Card kind="preview">
      <header className="cr-head">run {typeof input.lang === 'string' ? input.lang : ''} code?</header>
      {chips(input, null)}
      <pre className="cr-code">{redactString(clipped ? code.slice(0, 256) : code)}</pre>
      {clipped ? <div className="cr-warning">preview clipped to 256 of {code.length} characters — check the full code before approving</div> : null}
    </Card>
  )
}
