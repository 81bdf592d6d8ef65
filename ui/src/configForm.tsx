import { useEffect, useRef } from 'react'

export interface ConfigFormProps {
  id: string
  schema: Record<string, unknown> | null
  value: unknown
  onChange: (next: Record<string, unknown>) => void
  errors?: Map<string, string>
  focusField?: string[]
}

type Field = { key: string; kind: 'int' | 'bool' | 'path' | 'paths'; unit?: string; max?: number }

/** The sections, grouped by when a change applies (docs/behaviour.md#console-config-form). */
export const SECTIONS: { title: string; applies: string; fields: Field[] }[] = [
  { title: 'output caps', applies: 'applies to the next call', fields: [{ key: 'max_result_bytes', kind: 'int', unit: 'bytes' }, { key: 'max_stream_bytes', kind: 'int', unit: 'bytes' }] },
  { title: 'agent guidance', applies: 'applies to the next call', fields: [{ key: 'inject_guidance', kind: 'bool' }] },
  { title: 'timeouts', applies: 'applies to the next call', fields: [{ key: 'default_timeout_ms', kind: 'int', unit: 'ms' }, { key: 'max_timeout_ms', kind: 'int', unit: 'ms' }] },
  { title: 'runtimes & memory', applies: 'applies immediately', fields: [{ key: 'max_runtimes', kind: 'int' }, { key: 'idle_ttl_secs', kind: 'int', unit: 's' }] },
  { title: 'runtimes & memory', applies: 'applies to runtimes created after saving', fields: [{ key: 'heap_mb', kind: 'int', unit: 'MiB' }, { key: 'external_mb', kind: 'int', unit: 'MiB' }] },
  { title: 'scratch', applies: 'applies to runtimes created after saving', fields: [{ key: 'scratch_mb', kind: 'int', unit: 'MiB' }, { key: 'scratch_files', kind: 'int' }, { key: 'scratch_root', kind: 'path' }] },
  { title: 'warm pools', applies: 'resizes in the background', fields: [{ key: 'warm_pool_node', kind: 'int', max: 16 }, { key: 'warm_pool_python', kind: 'int', max: 16 }] },
  { title: 'python packages', applies: 'applies to python interpreters started after saving', fields: [{ key: 'python_path', kind: 'paths' }] },
  { title: 'stopping', applies: 'applies to the next stop', fields: [{ key: 'drain_secs', kind: 'int', unit: 's', max: 300 }] },
]

/** pathList turns the python_path text area (one path per line) into the key's list. */
export function pathList(text: string): string[] {
  return text.split('\n').map((l) => l.trim()).filter((l) => l !== '')
}

const DEFAULTS: Record<string, unknown> = {
  max_runtimes: 32, default_timeout_ms: 5000, max_timeout_ms: 30000, idle_ttl_secs: 900, heap_mb: 128, external_mb: 64,
  scratch_mb: 8, scratch_files: 64, scratch_root: null, inject_guidance: true, max_result_bytes: 32768, max_stream_bytes: 16384,
  warm_pool_node: 2, warm_pool_python: 2, python_path: [], drain_secs: 8,
}

/** tokens estimates model tokens for a byte cap (≈ 4 bytes per token). */
export function tokens(bytes: number): string {
  return bytes === 0 ? 'disabled' : `≈ ${Math.round(bytes / 4).toLocaleString('en-US')} tokens`
}

function description(schema: Record<string, unknown> | null, key: string): string {
  const props = schema && typeof schema.properties === 'object' ? (schema.properties as Record<string, { description?: string }>) : {}
  return props[key]?.description ?? ''
}

/** CodeRunnerConfigForm draws the fields and reports the full next value. */
export function CodeRunnerConfigForm(props: ConfigFormProps) {
  const value: Record<string, unknown> = { ...DEFAULTS, ...(typeof props.value === 'object' && props.value ? (props.value as Record<string, unknown>) : {}) }
  const root = useRef<HTMLDivElement>(null)
  const focus = props.focusField?.[0]
  useEffect(() => {
    if (!focus || !root.current) return
    const el = root.current.querySelector<HTMLElement>(`[data-field="${focus}"]`)
    el?.scrollIntoView?.({ block: 'center' })
    el?.focus?.()
  }, [focus])
  const set = (key: string, v: unknown) => props.onChange({ ...value, [key]: v })
  const footprint = Number(value.max_runtimes) * Number(value.scratch_mb)
  return (
    <div data-iii-ui="code-runner" className="cr-config" ref={root}>
      {SECTIONS.map((s, i) => (
        <fieldset key={`${s.title}-${i}`} className="cr-config-section">
          <legend>{s.title} <span className="cr-applies">{s.applies}</span></legend>
          {s.fields.map((f) => {
            const err = props.errors?.get(`/${f.key}`)
            return (
              <label key={f.key} className={`cr-field${focus === f.key ? ' cr-field--focus' : ''}`}>
                <span className="cr-field-name"><code>{f.key}</code>{f.unit ? ` (${f.unit})` : ''}</span>
                {f.kind === 'bool' ? (
                  <input type="checkbox" data-field={f.key} checked={value[f.key] === true} onChange={(e) => set(f.key, e.target.checked)} />
                ) : f.kind === 'paths' ? (
                  <textarea data-field={f.key} rows={3} placeholder="one absolute path per line: a directory, .zip or .whl"
                    value={Array.isArray(value[f.key]) ? (value[f.key] as string[]).join('\n') : ''}
                    onChange={(e) => set(f.key, pathList(e.target.value))} />
                ) : f.kind === 'path' ? (
                  <input type="text" data-field={f.key} value={typeof value[f.key] === 'string' ? (value[f.key] as string) : ''} placeholder="system temp dir"
                    onChange={(e) => set(f.key, e.target.value === '' ? null : e.target.value)} />
                ) : (
                  <input type="number" min={0} max={f.max} data-field={f.key} value={String(value[f.key] ?? '')}
                    onChange={(e) => set(f.key, e.target.value === '' ? 0 : Math.max(0, Math.floor(Number(e.target.value))))} />
                )}
                {f.unit === 'bytes' ? <span className="cr-hint">{tokens(Number(value[f.key]))}</span> : null}
                <span className="cr-field-desc">{description(props.schema, f.key)}</span>
                {err ? <span className="cr-field-error">{err}</span> : null}
              </label>
            )
          })}
          {s.title === 'scratch' ? (
            <p className="cr-hint cr-footprint">
              worst-case scratch footprint: max_runtimes × scratch_mb = {footprint.toLocaleString('en-US')} MiB, plus 256 MiB of /work per python runtime
            </p>
          ) : null}
        </fieldset>
      ))}
    </div>
  )
}
