package python

import (
	"time"

	"github.com/code-runner-go/code-runner/core"
)

// Lang is the language this engine runs: the `lang` requests name.
const Lang core.Lang = "python"

// ErrMemory is the python memory-cap answer for an interpreter whose
// linear memory is capped at memMB.
func ErrMemory(memMB int64) *core.Error {
	return core.ErrMemoryCap("run", memMB)
}

// errUnavailableText is the answer while the engine cannot serve.
const errUnavailableText = "the python engine failed to start on this worker; check its boot logs"

// Unavailable is the answer for python requests when the engine did not
// boot (core.Unavailability); cause is the boot's error, for the logs.
func (e *Engine) Unavailable(cause error) *core.Error {
	return &core.Error{Code: core.CodeEngine, Text: errUnavailableText, Cause: cause}
}

// PinsNamespaces reports that python namespace runtimes are never reaped
// for idleness (core.NamespacePinner,
// docs/behaviour.md#register-namespace-lifetime).
func (e *Engine) PinsNamespaces() bool { return true }

// ModuleOptions are the python engine's own options, bound into its module.
type ModuleOptions struct {
	// CacheDir overrides the compilation cache directory ("-": memory only).
	CacheDir string
	// LongTurn overrides DefaultLongTurn (tests).
	LongTurn time.Duration
}

// Module returns the python engine as the worker builds it
// (core.EngineModule). Its boot — the compile or the cache load — runs in
// the background (core.Booting).
func Module(o ModuleOptions) core.EngineModule {
	return core.EngineModule{Lang: Lang, New: func(d core.EngineDeps) (core.LiveEngine, error) {
		return New(Options{Registry: d.Registry, Bus: d.Bus, Transport: d.Transport, Live: d.Live, Log: d.Log, CacheDir: o.CacheDir,
			Dirs: d.Dirs, OnPoolBoot: d.OnPoolBoot, Busy: d.Busy, LongTurn: o.LongTurn}), nil
	}}
}

// The lifecycle the worker relies on, checked by the compiler.
var (
	_ core.LiveEngine      = (*Engine)(nil)
	_ core.Pooled          = (*Engine)(nil)
	_ core.Booting         = (*Engine)(nil)
	_ core.Unavailability  = (*Engine)(nil)
	_ core.NamespacePinner = (*Engine)(nil)
)
