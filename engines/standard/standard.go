// Package standard lists the language engines this binary ships, in the
// order the worker builds them: node, then python. A new engine is a
// package under engines/ that offers a core.EngineModule, and one line
// here.
package standard

import (
	"time"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/node"
	"github.com/code-runner-go/code-runner/engines/python"
)

// Options are the engines' own options. The binary runs with the zero
// value (each engine's defaults); tests point the node host at the test
// binary and share one python compilation cache.
type Options struct {
	// NodeHost is the isolate-host argv (default: this executable);
	// NodeEnv the host's whole environment.
	NodeHost, NodeEnv []string
	// PythonCacheDir overrides the python compilation cache ("-": memory
	// only); PythonLongTurn overrides python.DefaultLongTurn (tests).
	PythonCacheDir string
	PythonLongTurn time.Duration
}

// Modules returns the shipped engines' modules.
func Modules(o Options) []core.EngineModule {
	return []core.EngineModule{
		node.Module(node.ModuleOptions{HostArgv: o.NodeHost, HostEnv: o.NodeEnv}),
		python.Module(python.ModuleOptions{CacheDir: o.PythonCacheDir, LongTurn: o.PythonLongTurn}),
	}
}
