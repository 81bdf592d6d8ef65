package jsenv

import (
	_ "embed"
	"errors"
	"fmt"
	"strings"

	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

//go:embed transform.js
var transformDriver string

// moduleSyntax decides whose syntax error a tenant sees when the transform
// fails too: the transformer's for code that uses import/export or
// TypeScript, V8's own otherwise. The prelude and the transform's driver
// share it (MODULE_SYNTAX in both).
const moduleSyntax = `/^\s*(import|export)\b|^\s*(interface|enum|declare|namespace|abstract\s+class)\s|^\s*type\s+[A-Za-z_$][\w$]*\s*(<[^>]*>)?\s*=|\)\s*:\s*[A-Za-z_${[(]|\b(let|const|var)\s+[A-Za-z_$][\w$]*\s*:\s*[A-Za-z_${[(]|\bas\s+(const|any|unknown|string|number|boolean)\b|\bsatisfies\b/m`

func init() {
	preludeSource = strings.Replace(preludeSource, "MODULE_SYNTAX", moduleSyntax, 1)
	transformDriver = strings.Replace(transformDriver, "MODULE_SYNTAX", moduleSyntax, 1)
}

// transformHeap caps the transform isolate's heap: sucrase needs some
// twenty times the text it transforms, and its memory counts against the
// tenant's (the host's resident set): a module too large for it fails to
// transform rather than taking the tenant's memory cap with it.
const transformHeap = 64 << 20

// transformer is the isolate the transform (sucrase) runs in: one per
// host process, made on the first transform and kept for the next
// tenants — it only ever sees the text it is asked to transform, and its
// intrinsics are V8's own whatever a tenant did to its own isolate's
// (node's primordials, for the transform).
type transformer struct {
	iso *v8.Isolate
	fn  v8.Value
}

func newTransformer(sh *Shared) (*transformer, error) {
	src, ok, err := Source("internal/sucrase")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("code-runner: the transform unit is missing")
	}
	// From the process's snapshot when it has one: the isolates of one
	// process share V8's read-only heap, which must come from one blob.
	iso, err := v8.NewIsolate(v8.Options{HeapLimit: transformHeap, Snapshot: sh.Snapshot})
	if err != nil {
		return nil, err
	}
	t := &transformer{iso: iso}
	scope := iso.Mark()
	defer iso.Release(scope)
	fail := func(err error) (*transformer, error) {
		iso.Dispose()
		return nil, fmt.Errorf("code-runner: the transform does not load: %w", err)
	}
	source := v8.Source{Code: src, Origin: "node:sucrase"}
	if !sh.NoCache {
		source.Cache = sh.unitCache["internal/sucrase#tool"]
	}
	script, rejected, err := iso.Compile(source)
	if err != nil {
		return fail(err)
	}
	unit, err := script.Run()
	if err != nil {
		return fail(err)
	}
	drv, _, err := iso.Compile(v8.Source{Code: transformDriver, Origin: "node:internal/transform"})
	if err != nil {
		return fail(err)
	}
	mk, err := drv.Run()
	if err != nil {
		return fail(err)
	}
	fn, err := mk.Call(v8.Value{}, unit)
	if err != nil {
		return fail(err)
	}
	t.fn = fn.Pin()
	if (source.Cache == nil || rejected) && !sh.NoCache {
		// Warmed by one transform first, so its functions are compiled in
		// the cache the next process starts from.
		_, _ = t.fn.Call(v8.Value{}, iso.String("import x from 'y'; let a: number = 1; export default a"), iso.String("<warm>"), iso.String("cjs"))
		if cd := script.CodeCache(); len(cd) > 0 {
			sh.unitCache["internal/sucrase#tool"] = cd
		}
	}
	return t, nil
}

func (t *transformer) close() { t.iso.Dispose() }

// TransformError is a transform that failed: Msg is the transformer's
// message, or "" when the code uses no module or TypeScript syntax (then
// V8's own SyntaxError is the one to give).
type TransformError struct{ Msg string }

func (e *TransformError) Error() string { return e.Msg }

// transform runs the transform (transform.js says what mode means).
func (sh *Shared) transform(code, filename, mode string) (string, error) {
	t := sh.tool.Load()
	if t == nil {
		var err error
		if t, err = newTransformer(sh); err != nil {
			return "", &TransformError{Msg: err.Error()}
		}
		sh.tool.Store(t)
	}
	scope := t.iso.Mark()
	defer t.iso.Release(scope)
	out, err := t.fn.Call(v8.Value{}, t.iso.String(code), t.iso.String(filename), t.iso.String(mode))
	if err != nil || t.iso.HeapLimitHits() > 0 {
		// Stopped (the entry's deadline) or out of its heap: the isolate
		// is not used again.
		sh.tool.Store(nil)
		defer t.close()
		if err == nil || t.iso.HeapLimitHits() > 0 {
			// Its own heap cap stopped it (a termination too).
			return "", &TransformError{Msg: "the code is too large to transform"}
		}
		if v8.IsTermination(err) {
			return "", err // the entry's deadline: the host ends the call
		}
		return "", &TransformError{Msg: errorText(err)}
	}
	text := out.String()
	if strings.HasPrefix(text, "\x00") {
		return "", &TransformError{Msg: text[1:]}
	}
	return text, nil
}

// Transform turns module syntax and TypeScript in a run's code or a
// source into code V8 compiles (mode "cjs"), in the process's transform
// isolate. A *TransformError says why it could not.
func (e *Env) Transform(code, filename string) (string, error) {
	return e.shared.transform(code, filename, "cjs")
}
