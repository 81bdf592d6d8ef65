// Package jsenv embeds the JavaScript environment's units (contract §25):
// the bundles deps/jsenv/build.mjs makes from the npm packages pinned in
// deps/jsenv/package-lock.json and from the glue in deps/jsenv/src. An
// isolate host compiles a unit only when guest code first touches what it
// provides (a global, a built-in module, a package), so a one-shot that
// uses none of it costs nothing more.
//
// `make deps` writes the units into assets/ (git-ignored). A binary built
// without them still compiles; Source then reports ErrMissing, and the
// environment's globals and modules fail with a message naming the fix.
package jsenv

import (
	"bufio"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"sync"
)

//go:embed assets
var assets embed.FS

// ErrMissing is returned by Source when the binary was built without the
// units.
var ErrMissing = errors.New("the JavaScript environment is not embedded in this binary: run `make deps` (deps/jsenv/build.mjs bundles it into engines/node/jsenv/assets) and rebuild")

// Source returns the text of the unit named name ("node/util",
// "pkg/lodash", "internal/url", …): one function expression taking
// (module, exports, require, __cr). ok is false for a name no unit has.
func Source(name string) (src string, ok bool, err error) {
	if !validName(name) {
		return "", false, nil
	}
	if !Present() {
		return "", false, ErrMissing
	}
	b, err := fs.ReadFile(assets, "assets/"+name+".js")
	if err != nil {
		return "", false, nil
	}
	return string(b), true, nil
}

// validName accepts the names build.mjs writes: path segments of letters,
// digits, '.', '_' and '-', none of them "." or "..".
func validName(name string) bool {
	if name == "" || len(name) > 200 {
		return false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// Present reports whether the units are embedded.
func Present() bool {
	_, err := fs.Stat(assets, "assets/units.txt")
	return err == nil
}

// Package is one built-in npm package.
type Package struct {
	Name, Version string
}

// Packages lists the built-in npm packages with their versions, in the
// order contract §25.4 names them (nil when the units are missing).
func Packages() []Package {
	b, err := fs.ReadFile(assets, "assets/packages.txt")
	if err != nil {
		return nil
	}
	var pkgs []Package
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if name, ver, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok {
			pkgs = append(pkgs, Package{Name: name, Version: ver})
		}
	}
	return pkgs
}

// PackageNames is the comma-separated list of the built-in packages'
// names, as MODULE_NOT_FOUND's message gives it.
func PackageNames() string {
	var names []string
	for _, p := range Packages() {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// ESMNames is the JSON list of the names node 20's import() gives the
// built-in package (or subpath) name, as the build recorded them by
// importing each under node (assets/esm.json); "" for any other name.
func ESMNames(name string) string {
	esmOnce.Do(func() {
		b, err := fs.ReadFile(assets, "assets/esm.json")
		if err == nil {
			_ = json.Unmarshal(b, &esmNames)
		}
	})
	if names, ok := esmNames[name]; ok {
		return string(names)
	}
	return ""
}

var (
	esmOnce  sync.Once
	esmNames map[string]json.RawMessage
)
