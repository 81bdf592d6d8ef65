// Runtime-id redaction (docs/behaviour.md#console-redaction). A runtime_id is a capability: the
// console must never render one in full.

export const RUNTIME_ID = /rt-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi

/** truncateId keeps the first 7 characters and an ellipsis; ≤ 8 characters stay whole. */
export function truncateId(id: string): string {
  return id.length <= 8 ? id : id.slice(0, 7) + '…'
}

/** redactString replaces every runtime id in s by its truncated form. */
export function redactString(s: string): string {
  return s.replace(RUNTIME_ID, (m) => truncateId(m))
}

/**
 * redactRuntimeIdsDeep returns a copy of value with every runtime id in every
 * string — values and object keys, nested — truncated. It preserves shape,
 * never mutates its input, replaces cycles by '[circular]' and handles shared
 * references (each occurrence is redacted on its own).
 */
export function redactRuntimeIdsDeep(value: unknown): unknown {
  const ancestors = new Set<object>()
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return redactString(v)
    if (v === null || typeof v !== 'object') return v
    if (ancestors.has(v)) return '[circular]'
    ancestors.add(v)
    try {
      if (Array.isArray(v)) return v.map(walk)
      const out: Record<string, unknown> = {}
      for (const [k, val] of Object.entries(v as Record<string, unknown>)) out[redactString(k)] = walk(val)
      return out
    } finally {
      ancestors.delete(v)
    }
  }
  return walk(value)
}
