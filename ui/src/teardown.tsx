import { Card, Chip, DeniedCard, ErrorCard, RunningCard, RuntimeChip, deniedOf, errorOf, isObj, unwrap, type FunctionTriggerMessage } from './common'
import { redactString } from './redact'

function Target({ input }: { input: Record<string, unknown> }) {
  if (typeof input.runtime_id === 'string' && input.runtime_id) {
    return <div className="cr-chips"><Chip>runtime</Chip><RuntimeChip id={input.runtime_id} /></div>
  }
  if (typeof input.namespace === 'string' && input.namespace) {
    return <div className="cr-chips"><Chip>namespace</Chip><code>{redactString(input.namespace)}</code></div>
  }
  return <div className="cr-warning">neither runtime_id nor namespace was given</div>
}

/** TeardownCard renders a settled code-runner::teardown call. */
export function TeardownCard({ message }: { message: FunctionTriggerMessage }) {
  const input = isObj(message.input) ? message.input : {}
  const output = unwrap(message.output)
  const denied = deniedOf(output)
  if (denied) return <DeniedCard functionId={message.functionId} reason={denied} />
  const err = errorOf(output)
  if (err) return <ErrorCard functionId={message.functionId} code={err.code} message={err.message} />
  const o = isObj(output) ? output : {}
  const list = o.unregistered
  const warnings: string[] = []
  if (o.torn_down !== true) warnings.push('torn_down is not true')
  let ids: string[] = []
  let malformed: unknown[] = []
  if (!Array.isArray(list)) warnings.push('the unregistered list is missing')
  else {
    ids = list.filter((x): x is string => typeof x === 'string')
    malformed = list.filter((x) => typeof x !== 'string')
    if (malformed.length) warnings.push(`${malformed.length} malformed entr${malformed.length === 1 ? 'y' : 'ies'} in unregistered`)
  }
  const shown = ids.slice(0, 12)
  const rest = ids.slice(12)
  return (
    <Card kind="teardown" tone={warnings.length ? 'warn' : 'ok'}>
      <header className="cr-head">
        torn down · {ids.length} function id{ids.length === 1 ? '' : 's'} stopped resolving
      </header>
      <Target input={input} />
      {Array.isArray(list) && ids.length === 0 && malformed.length === 0 ? (
        <p className="cr-note">no bus functions were registered — nothing else stopped resolving</p>
      ) : null}
      <ul className="cr-ids">
        {shown.map((id) => <li key={id}><code>{redactString(id)}</code></li>)}
        {malformed.map((m, i) => <li key={`m${i}`} className="cr-malformed">{redactString(JSON.stringify(m) ?? String(m))}</li>)}
      </ul>
      {rest.length ? (
        <details className="cr-more">
          <summary>{rest.length} more</summary>
          <ul className="cr-ids">{rest.map((id) => <li key={id}><code>{redactString(id)}</code></li>)}</ul>
        </details>
      ) : null}
      {warnings.map((w) => <div key={w} className="cr-warning">{w}</div>)}
    </Card>
  )
}

export function TeardownRunning({ message }: { message: FunctionTriggerMessage }) {
  return (
    <RunningCard title="tearing down…">
      <Target input={isObj(message.input) ? message.input : {}} />
    </RunningCard>
  )
}

export function TeardownPreview({ message }: { message: FunctionTriggerMessage }) {
  return (
    <Card kind="preview">
      <header className="cr-head">tear this down?</header>
      <Target input={isObj(message.input) ? message.input : {}} />
    </Card>
  )
}
