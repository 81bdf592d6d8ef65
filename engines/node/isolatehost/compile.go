package isolatehost

import (
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

// Compiling guest code as node compiles it: the source keeps its own
// length (a NUL is a character like any other), a run's code is the body
// of an async arrow taking CommonJS's names — node's main module, with
// await at the top level — whose columns on line 1 are the tenant's own,
// and a register_function source is a function body (V8's
// CompileFunction, as node's vm.compileFunction).

// define compiles a register_function source as a factory and lets the
// prelude call it and register the handler (docs/behaviour.md#register-node-source).
func (h *host) define(m *hostproto.Msg) (int, bool) {
	return h.enter(func() error {
		v, err := h.compileSource(m.Code)
		if err != nil {
			if v8.IsTermination(err) {
				return err
			}
			h.finish(m.Task, hostproto.StatusParse, jsErrorText(err), nil)
			return nil
		}
		return h.call("define", h.iso.Number(float64(m.Task)), h.iso.String(m.FunctionID), v, h.iso.String(string(orNull(m.Payload))))
	}, m.Task)
}

// runMain runs a run's code as node's main module: the compiled arrow is
// called with (exports, require, module, __filename, __dirname) and its
// promise tracked as task.
func (h *host) runMain(task int64, code string, maxResult int64) error {
	if h.shared.EnvOff {
		s, _, err := h.iso.Compile(v8.Source{Code: "(async () => {" + code + "\n})()", Origin: "code.js"})
		if err != nil {
			return err
		}
		p, err := s.Run()
		if err != nil {
			return err
		}
		return h.call("track", h.iso.Number(float64(task)), p)
	}
	fn, err := h.compileRun(code)
	if err != nil {
		return err
	}
	mod, err := h.env.Call("mainModule")
	if err != nil {
		return err
	}
	exports, err := mod.Get("exports")
	if err != nil {
		return err
	}
	p, err := fn.Call(v8.Value{}, exports, h.env.Require, mod, h.iso.String("/scratch/<code>"), h.iso.String("/scratch"))
	if err != nil {
		return err
	}
	return h.call("track", h.iso.Number(float64(task)), p, h.iso.Number(float64(maxResult)))
}

// compileRun compiles a run's code as plain JavaScript, or after the
// transform when it uses module syntax or TypeScript.
func (h *host) compileRun(code string) (v8.Value, error) {
	return h.compileWith(code, h.compileAsync)
}

// compileSource compiles a register_function source as a factory that
// leaves `handler` (or exports it); the prelude's define calls it.
func (h *host) compileSource(code string) (v8.Value, error) {
	return h.compileWith(code, func(src string) (v8.Value, error) {
		return jsenv.CompileFunction(h.iso, jsenv.SourceParams,
			src+"\n;return typeof handler === 'undefined' ? undefined : handler;", "source.js")
	})
}

// redeclared is V8's compile error for code that declares a name its
// wrapper passes as a parameter.
var redeclared = regexp.MustCompile(`^SyntaxError: Identifier '([\w$]+)' has already been declared`)

// compileAsync compiles src as the body of an async arrow taking CommonJS's
// names. The arrow opens on the code's first line, and the script's origin
// takes its length out of that line's columns, so stack traces and errors
// carry the tenant's own columns. Code that declares one of the names
// itself keeps its declaration (the parameter is renamed, each at most
// once, as jsenv.CompileFunction does). A SyntaxError found in the
// arrow's closing `})` means the code ended too soon: the error given is
// the one V8 reports at the end of the code itself ("Unexpected end of
// input", as node says), never a `)` the tenant did not write.
func (h *host) compileAsync(src string) (v8.Value, error) {
	names := slices.Clone(jsenv.RunParams)
	for {
		prefix := "(async (" + strings.Join(names, ", ") + ") => {"
		body := prefix + src
		script, _, err := h.iso.Compile(v8.Source{Code: body + "\n})", Origin: "code.js", Column: -len(prefix)})
		if err == nil {
			// Running it only makes the arrow — unless the code closed the
			// arrow early, when what it throws is never a compile error.
			v, err := script.Run()
			if err != nil {
				return v8.Value{}, ranError{err}
			}
			return v, nil
		}
		var je *v8.Error
		if !errors.As(err, &je) || je.Terminated {
			return v8.Value{}, err
		}
		if m := redeclared.FindStringSubmatch(je.Text()); m != nil {
			if at := slices.Index(names, m[1]); at >= 0 && names[at] == jsenv.RunParams[at] {
				names[at] = "__crUnused" + strconv.Itoa(at)
				continue
			}
		}
		if je.Position >= utf16Len(body) {
			if _, _, err2 := h.iso.Compile(v8.Source{Code: body, Origin: "code.js", Column: -len(prefix)}); err2 != nil {
				return v8.Value{}, err2
			}
		}
		return v8.Value{}, err
	}
}

// ranError is an error the compiled wrapper threw when it ran (code that
// closed the arrow early): never a compile error to transform and retry.
type ranError struct{ error }

func (e ranError) Unwrap() error { return e.error }

// utf16Len is the length of s in UTF-16 code units, as V8 counts
// positions (invalid UTF-8 counts one unit per byte, as V8 replaces it).
func utf16Len(s string) int {
	n := 0
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// compileWith compiles code with compile; when that fails with a
// SyntaxError, the transform (sucrase, in the process's transform isolate,
// under the entry's deadline) rewrites it first. A transform that fails
// too gives V8's own error for code with no module or TypeScript syntax,
// else the transformer's.
func (h *host) compileWith(code string, compile func(string) (v8.Value, error)) (v8.Value, error) {
	v, err := compile(code)
	var ran ranError
	if err == nil || errors.As(err, &ran) || !strings.HasPrefix(jsErrorText(err), "SyntaxError") {
		return v, err
	}
	out, terr := h.env.Transform(code, "<code>")
	if terr != nil {
		var te *jsenv.TransformError
		if errors.As(terr, &te) {
			if te.Msg == "" {
				return v8.Value{}, err
			}
			return v8.Value{}, errors.New("SyntaxError: " + te.Msg + " in <code>")
		}
		return v8.Value{}, terr
	}
	v, err = compile(out)
	if errors.As(err, &ran) {
		return v, ran.error
	}
	return v, err
}
