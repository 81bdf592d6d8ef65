// Package buildinfo reports what this binary is: the release version stamped
// at build time and the versions of the engines linked into it.
package buildinfo

import "runtime/debug"

// Version is the release version, stamped by `make build` with
// -ldflags "-X github.com/code-runner-go/code-runner/internal/buildinfo.Version=<VERSION>".
// Unstamped builds (go run, go test) report 0.0.0-dev.
var Version = "0.0.0-dev"

// ModuleVersion returns the version of module path linked into this binary,
// or "not linked" when the binary does not contain that module.
func ModuleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "not linked"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return "not linked"
}
