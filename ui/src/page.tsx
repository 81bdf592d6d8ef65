// code-runner's console script. The console import()s this module and calls
// its default export with the host API (docs/behaviour.md#console-page).
import type { ComponentType, ReactNode } from 'react'
import type { FunctionTriggerMessage } from './common'
import { CodeRunnerConfigForm, type ConfigFormProps } from './configForm'
import { redactRuntimeIdsDeep } from './redact'
import { RegisterCard, RegisterPreview, RegisterRunning } from './register'
import { RunCard, RunPreview, RunRunning } from './run'
import { TeardownCard, TeardownPreview, TeardownRunning } from './teardown'

export { redactRuntimeIdsDeep, redactString, truncateId } from './redact'
export { CodeRunnerConfigForm } from './configForm'

interface Renderer {
  id: string
  isMatch(functionId: string): boolean
  tryRender(message: FunctionTriggerMessage): ReactNode | null
  tryRenderRunning?(message: FunctionTriggerMessage): ReactNode | null
  tryRenderPreview?(message: FunctionTriggerMessage): ReactNode | null
  primaryTabLabel?: string
  redactRaw?(value: unknown): unknown
}

export interface Host {
  functionTriggers: { register(r: Renderer): unknown }
  configForms: { register(id: string, c: ComponentType<ConfigFormProps>): unknown }
}

type Card = ComponentType<{ message: FunctionTriggerMessage }>

function renderer(id: string, name: string, settled: Card, running: Card, preview: Card): Renderer {
  const fn = `code-runner::${name}`
  const mine = (m: FunctionTriggerMessage) => m && m.functionId === fn
  const Settled = settled
  const Running = running
  const Preview = preview
  return {
    id,
    isMatch: (functionId) => functionId === fn,
    tryRender: (m) => (mine(m) ? (m.running ? <Running message={m} /> : <Settled message={m} />) : null),
    tryRenderRunning: (m) => (mine(m) ? <Running message={m} /> : null),
    tryRenderPreview: (m) => (mine(m) ? <Preview message={m} /> : null),
    primaryTabLabel: name,
    redactRaw: (v) => redactRuntimeIdsDeep(v),
  }
}

/** The three renderers, in the order they are registered. */
export const renderers: Renderer[] = [
  renderer('code-runner/page.js#run', 'run', RunCard, RunRunning, RunPreview),
  renderer('code-runner/page.js#register_function', 'register_function', RegisterCard, RegisterRunning, RegisterPreview),
  renderer('code-runner/page.js#teardown', 'teardown', TeardownCard, TeardownRunning, TeardownPreview),
]

export default function setup(host: Host) {
  const handles = renderers.map((r) => host.functionTriggers.register(r))
  host.configForms.register('code-runner', CodeRunnerConfigForm)
  return () => {
    for (const h of handles) if (typeof h === 'function') h()
  }
}
