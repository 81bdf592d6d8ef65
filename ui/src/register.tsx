import { Card, Chip, DeniedCard, ErrorCard, RunningCard, Source, deniedOf, errorOf, isObj, unwrap, type FunctionTriggerMessage } from './common'
import { redactString } from './redact'

function namespaceOf(id: string): string | null {
  const i = id.indexOf('::')
  return i > 0 ? id.slice(0, i) + '::' : null
}

function definesHandler(source: string, lang?: string): boolean {
  return lang === 'python' ? /\bdef\s+handler\s*\(|\bhandler\s*=/.test(source) : /\bhandler\b/.test(source)
}

function Body({ message }: { message: FunctionTriggerMessage }) {
  const input = isObj(message.input) ? message.input : {}
  const id = typeof input.function_id === 'string' ? input.function_id : ''
  const lang = typeof input.lang === 'string' ? input.lang : undefined
  const source = typeof input.source === 'string' ? input.source : null
  const ns = namespaceOf(id)
  const warnings: string[] = []
  if (!id) warnings.push('function_id is missing or not a string')
  if (lang !== 'node' && lang !== 'python') warnings.push('lang must be "node" or "python"')
  if (source === null) warnings.push('source is missing or not a string')
  return (
    <>
      <div className="cr-fn-id"><code>{redactString(id || '(no function_id)')}</code></div>
      <div className="cr-namespace">
        {ns ? <>claims namespace <code>{redactString(ns)}</code> — ids are claimed across BOTH engines</> : <span className="cr-warning">no namespace: the id needs a "my-app::" prefix</span>}
      </div>
      {typeof input.description === 'string' && input.description ? (
        <p className="cr-description">{redactString(input.description)}</p>
      ) : (
        <div className="cr-warning">no description — callers see only a default in engine::functions::info</div>
      )}
      <div className="cr-chips">{lang ? <Chip>{lang}</Chip> : null}</div>
      {source !== null ? <Source lang={lang} code={source} /> : null}
      {source !== null && !definesHandler(source, lang) ? (
        <div className="cr-warning">
          nothing named <code>handler</code> appears in the source —{' '}
          {lang === 'python' ? 'this registration will be REFUSED' : 'it will be refused too'}
        </div>
      ) : null}
      {warnings.map((w) => <div key={w} className="cr-warning">{w}</div>)}
    </>
  )
}

/** RegisterCard renders a settled code-runner::register_function call. */
export function RegisterCard({ message }: { message: FunctionTriggerMessage }) {
  const output = unwrap(message.output)
  const denied = deniedOf(output)
  if (denied) return <DeniedCard functionId={message.functionId} reason={denied} />
  const err = errorOf(output)
  if (err) return <ErrorCard functionId={message.functionId} code={err.code} message={err.message} />
  const input = isObj(message.input) ? message.input : {}
  const ok = isObj(output) && output.registered === true
  const mismatch = isObj(output) && typeof output.function_id === 'string' && output.function_id !== input.function_id
  return (
    <Card kind="register" tone={ok && !mismatch ? 'ok' : 'warn'}>
      <header className="cr-head">{ok ? 'registered' : 'not registered'}</header>
      <Body message={message} />
      {!isObj(output) ? <div className="cr-malformed">malformed response</div> : null}
      {mismatch ? <div className="cr-warning">the response names a different function id</div> : null}
    </Card>
  )
}

export function RegisterRunning({ message }: { message: FunctionTriggerMessage }) {
  return (
    <RunningCard title="registering…">
      <Body message={message} />
    </RunningCard>
  )
}

export function RegisterPreview({ message }: { message: FunctionTriggerMessage }) {
  return (
    <Card kind="preview">
      <header className="cr-head">register this function?</header>
      <Body message={message} />
    </Card>
  )
}
