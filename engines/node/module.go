package node

import (
	"fmt"

	"github.com/code-runner-go/code-runner/core"
)

// Lang is the language this engine runs: the `lang` requests name.
const Lang core.Lang = "node"

// ErrExternalMemory is the node answer for a runtime whose memory outside
// V8's heap (ArrayBuffers, typed arrays, Buffers) passed its off-heap cap
// (contract §16.3): it names that cap, not the heap's.
func ErrExternalMemory(externalMB int64) *core.Error {
	return &core.Error{Code: core.CodeResourceExhausted, Kill: core.KillMemory,
		Text: fmt.Sprintf("the runtime exceeded its off-heap memory cap of %d MiB (external_mb) and was killed", externalMB)}
}

// ErrMemory is the node memory-cap answer for a runtime whose heap cap is
// heapMB.
func ErrMemory(heapMB int64) *core.Error {
	return core.ErrMemoryCap("the runtime", heapMB)
}

// ModuleOptions are the node engine's own options, bound into its module.
type ModuleOptions struct {
	// HostArgv starts one isolate host (default: this executable with
	// HostArg); HostEnv is the host's whole environment (default empty).
	HostArgv, HostEnv []string
}

// Module returns the node engine as the worker builds it (core.EngineModule).
func Module(o ModuleOptions) core.EngineModule {
	return core.EngineModule{Lang: Lang, New: func(d core.EngineDeps) (core.LiveEngine, error) {
		return New(Options{HostArgv: o.HostArgv, HostEnv: o.HostEnv, Registry: d.Registry, Bus: d.Bus, Transport: d.Transport,
			Live: d.Live, Owners: d.Owners, Log: d.Log, LocalLog: d.LocalLog, Dirs: d.Dirs, OnPoolBoot: d.OnPoolBoot})
	}}
}

// The lifecycle the worker relies on, checked by the compiler.
var (
	_ core.LiveEngine = (*Engine)(nil)
	_ core.Pooled     = (*Engine)(nil)
)
