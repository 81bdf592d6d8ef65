package main

import (
	"encoding/json"
	"runtime"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/internal/buildinfo"
)

// description is the worker's one-line description (manifest, registry,
// engine::workers::register).
const description = "Run untrusted Node.js and Python in-process — V8 isolates and CPython-on-WebAssembly behind one run/register_function/teardown API, with no microVM and no /dev/kvm. Code gets a global `iii` and a private scratch directory."

// manifest is the registry manifest of docs/behaviour.md#process-manifest.
type manifest struct {
	Name             string          `json:"name"`
	Version          string          `json:"version"`
	Description      string          `json:"description"`
	DefaultConfig    json.RawMessage `json:"default_config"`
	SupportedTargets []string        `json:"supported_targets"`
}

// targetTriples maps the GOOS/GOARCH pairs this worker builds for to the
// registry's target triples (Linux only: docs/behaviour.md#process-manifest).
var targetTriples = map[string]string{
	"linux/amd64": "x86_64-unknown-linux-gnu",
	"linux/arm64": "aarch64-unknown-linux-gnu",
}

func buildManifest() manifest {
	var targets []string
	if t, ok := targetTriples[runtime.GOOS+"/"+runtime.GOARCH]; ok {
		targets = append(targets, t)
	} else {
		targets = append(targets, runtime.GOARCH+"-unknown-"+runtime.GOOS)
	}
	return manifest{
		Name:             "code-runner",
		Version:          buildinfo.Version,
		Description:      description,
		DefaultConfig:    configsvc.DefaultsJSON(),
		SupportedTargets: targets,
	}
}
