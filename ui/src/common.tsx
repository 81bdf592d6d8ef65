import { useState, type ReactNode } from 'react'
import { redactRuntimeIdsDeep, redactString, truncateId } from './redact'

/** The console's message for a function call (a function-trigger message). */
export interface FunctionTriggerMessage {
  functionId: string
  input?: unknown
  output?: unknown
  durationMs?: number
  running?: boolean
}

export type Obj = Record<string, unknown>

export const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v)

/**
 * unwrap turns a harness envelope {content, details} into the response it
 * carries: details when it is an object, else content parsed as JSON.
 */
export function unwrap(output: unknown): unknown {
  if (isObj(output) && 'content' in output && 'details' in output) {
    if (isObj(output.details)) return output.details
    if (typeof output.content === 'string') {
      try {
        return JSON.parse(output.content)
      } catch {
        return output.content
      }
    }
  }
  return output
}

/** errorOf finds an error in a call's output: {error: {code, message}} or {code, message}. */
export function errorOf(output: unknown): { code: string; message: string } | null {
  const e = isObj(output) && isObj(output.error) ? output.error : output
  if (isObj(e) && typeof e.message === 'string' && (typeof e.code === 'string' || isObj(output) && 'error' in output)) {
    return { code: String(e.code ?? 'error'), message: e.message }
  }
  return null
}

/** deniedOf recognises a harness gate denial. */
export function deniedOf(output: unknown): string | null {
  if (isObj(output) && (output.decision === 'deny' || output.denied === true)) {
    return typeof output.reason === 'string' ? output.reason : 'denied by the approval gate'
  }
  return null
}

/** clamp cuts text to maxLines lines and maxChars characters. */
export function clamp(text: string, maxLines: number, maxChars: number): { text: string; clipped: boolean } {
  let t = text
  let clipped = false
  const lines = t.split('\n')
  if (lines.length > maxLines) {
    t = lines.slice(0, maxLines).join('\n')
    clipped = true
  }
  if (t.length > maxChars) {
    t = t.slice(0, maxChars)
    clipped = true
  }
  return { text: t, clipped }
}

export function Card(props: { kind: string; tone?: 'ok' | 'warn' | 'alert' | 'muted'; children: ReactNode }) {
  return (
    <div data-iii-ui="code-runner" style={{ display: 'contents' }}>
      <section className={`cr-card cr-card--${props.kind} cr-tone--${props.tone ?? 'muted'}`}>{props.children}</section>
    </div>
  )
}

export function Chip(props: { children: ReactNode; title?: string }) {
  return (
    <span className="cr-chip" title={props.title}>
      {props.children}
    </span>
  )
}

/** RuntimeChip shows a truncated runtime id; the full id is copied only on an explicit click. */
export function RuntimeChip(props: { id: string }) {
  const [copied, setCopied] = useState(false)
  const copy = () => {
    const nav = globalThis.navigator as Navigator | undefined
    void nav?.clipboard?.writeText(props.id).then(
      () => setCopied(true),
      () => setCopied(false),
    )
  }
  return (
    <button type="button" className="cr-chip cr-chip--runtime" onClick={copy} title="click to copy the full runtime id (a secret)">
      {truncateId(props.id)}
      {copied ? ' · copied' : ''}
    </button>
  )
}

export function Terminal(props: { label: string; text: string }) {
  const { text, clipped } = clamp(redactString(props.text), 12, 2000)
  return (
    <div className="cr-term">
      <div className="cr-term-label">{props.label}</div>
      <pre className="cr-term-body">{text}</pre>
      {clipped ? <div className="cr-note">output clipped in this card; the full text is in the raw tab</div> : null}
    </div>
  )
}

export function Source(props: { lang?: string; code: string }) {
  const { text, clipped } = clamp(redactString(props.code), 14, 2000)
  return (
    <div className="cr-source">
      <pre className={`cr-code cr-lang-${props.lang ?? 'text'}`}>
        <code>{highlight(text, props.lang)}</code>
      </pre>
      {clipped ? <div className="cr-note">source clipped to 14 lines / 2000 characters</div> : null}
    </div>
  )
}

const KEYWORDS: Record<string, Set<string>> = {
  node: new Set('async await break case catch class const continue default delete do else export for function if import in instanceof let new of return switch throw try typeof var void while yield'.split(' ')),
  python: new Set('and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield'.split(' ')),
}

/** highlight marks keywords, strings and comments of node/python source. */
export function highlight(code: string, lang?: string): ReactNode[] {
  const kw = KEYWORDS[lang ?? ''] ?? new Set<string>()
  const re = lang === 'python' ? /(#[^\n]*|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\b[A-Za-z_]\w*\b)/g : /(\/\/[^\n]*|`(?:\\.|[^`\\])*`|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|\b[A-Za-z_$][\w$]*\b)/g
  const out: ReactNode[] = []
  let last = 0
  let i = 0
  for (const m of code.matchAll(re)) {
    const tok = m[0]
    const at = m.index ?? 0
    if (at > last) out.push(code.slice(last, at))
    let cls = ''
    if (tok.startsWith('#') || tok.startsWith('//')) cls = 'cr-hl-comment'
    else if (/^["'`]/.test(tok)) cls = 'cr-hl-string'
    else if (kw.has(tok)) cls = 'cr-hl-keyword'
    out.push(cls ? <span key={i++} className={cls}>{tok}</span> : tok)
    last = at + tok.length
  }
  if (last < code.length) out.push(code.slice(last))
  return out
}

export function ErrorCard(props: { functionId: string; code: string; message: string }) {
  return (
    <Card kind="error" tone="alert">
      <header className="cr-head">
        <strong>{props.functionId}</strong> failed: <code>{props.code}</code>
      </header>
      <pre className="cr-error-body">{redactString(props.message)}</pre>
    </Card>
  )
}

export function DeniedCard(props: { functionId: string; reason: string }) {
  return (
    <Card kind="denied" tone="warn">
      <header className="cr-head">
        <strong>{props.functionId}</strong> was denied at the gate — it never ran
      </header>
      <p className="cr-note">{redactString(props.reason)}</p>
    </Card>
  )
}

export function RunningCard(props: { title: string; children?: ReactNode }) {
  return (
    <Card kind="running">
      <header className="cr-head cr-running">
        <span className="cr-spinner" aria-hidden="true" /> {props.title}
      </header>
      {props.children}
    </Card>
  )
}

/** jsonText renders a value for display, redacted. */
export function jsonText(v: unknown): string {
  return JSON.stringify(redactRuntimeIdsDeep(v), null, 2) ?? 'undefined'
}
