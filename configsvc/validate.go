package configsvc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/code-runner-go/code-runner/internal/zipfs"

	"github.com/hashicorp/go-multierror"
	"github.com/xeipuuv/gojsonschema"
)

// Problem is one validation finding, reported as "<JSON pointer>: <problem>".
type Problem struct {
	Pointer string // "/max_runtimes"; "" for the document itself
	Text    string
}

// Error renders the problem as "<pointer>: <text>"; the document itself is
// shown as "/".
func (p Problem) Error() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "/"
	}
	return ptr + ": " + p.Text
}

// Problems returns every Problem wrapped in err (as returned by Parse, FromJSON
// or FromValue), in report order. It returns nil for a nil error and a
// single-element list for any other error.
func Problems(err error) []string {
	if err == nil {
		return nil
	}
	var merr *multierror.Error
	if me, ok := err.(*ValidationError); ok {
		merr = me.errs
	}
	if merr == nil {
		return []string{err.Error()}
	}
	out := make([]string, len(merr.Errors))
	for i, e := range merr.Errors {
		out[i] = e.Error()
	}
	return out
}

// ValidationError carries every problem found in one configuration document.
type ValidationError struct {
	errs *multierror.Error
}

// Error joins every problem with "; ".
func (e *ValidationError) Error() string {
	return strings.Join(Problems(e), "; ")
}

// Len returns the number of problems.
func (e *ValidationError) Len() int { return len(e.errs.Errors) }

var (
	compiledOnce   sync.Once
	compiledSchema *gojsonschema.Schema
	compileErr     error
)

// compiled returns the schema compiled once; the schema is a constant, so
// this is not mutable configuration state.
func compiled() (*gojsonschema.Schema, error) {
	compiledOnce.Do(func() {
		compiledSchema, compileErr = gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schemaJSON))
	})
	return compiledSchema, compileErr
}

// FromJSON validates a configuration value received as JSON (for example
// from configuration::get) and returns the complete Config: keys that are
// absent take their defaults, and a JSON null means "nothing stored" and
// yields Defaults. Every problem is reported at once in a *ValidationError.
func FromJSON(raw json.RawMessage) (Config, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return Defaults(), nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return Config{}, validationErr(Problem{Text: "not valid JSON: " + err.Error()})
	}
	return FromValue(doc)
}

// FromValue validates a decoded JSON-compatible document (maps, slices,
// strings, json.Number/float64/int, bools, nil) and returns the complete
// Config. See FromJSON.
func FromValue(doc any) (Config, error) {
	if doc == nil {
		return Defaults(), nil
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return Config{}, validationErr(Problem{Text: "the configuration must be a mapping of keys to values, got " + kindOf(doc)})
	}
	var problems []Problem
	schema, err := compiled()
	if err != nil {
		return Config{}, fmt.Errorf("compile config schema: %w", err)
	}
	res, err := schema.Validate(gojsonschema.NewGoLoader(obj))
	if err != nil {
		return Config{}, fmt.Errorf("validate config: %w", err)
	}
	bad := map[string]bool{}
	for _, re := range res.Errors() {
		p := problemFrom(re)
		bad[p.Pointer] = true
		problems = append(problems, p)
	}

	cfg := Defaults()
	fields := fieldsByKey(&cfg)
	for key, val := range obj {
		f, known := fields[key]
		if !known || bad["/"+escapePointer(key)] {
			continue
		}
		b, err := json.Marshal(val)
		if err == nil {
			err = json.Unmarshal(b, f.Addr().Interface())
		}
		if err != nil {
			problems = append(problems, Problem{Pointer: "/" + escapePointer(key), Text: "value out of range for this key"})
		}
	}
	if !bad["/python_path"] {
		problems = append(problems, checkPythonPath(cfg.PythonPath)...)
	}
	if len(problems) > 0 {
		return Config{}, validationErr(problems...)
	}
	return cfg, nil
}

// checkPythonPath refuses a python_path entry no host could mount: each
// must be a clean absolute path other than "/", named once. Whether it
// exists is a fact of one host, not of the shared configuration: see
// HostPathProblems. Each problem names its entry.
func checkPythonPath(entries []string) []Problem {
	var out []Problem
	seen := map[string]bool{}
	for i, p := range entries {
		ptr := fmt.Sprintf("/python_path/%d", i)
		switch {
		case !filepath.IsAbs(p) || filepath.Clean(p) != p:
			out = append(out, Problem{Pointer: ptr, Text: fmt.Sprintf("%q must be a clean absolute path (e.g. /opt/python-libs)", p)})
		case p == "/":
			out = append(out, Problem{Pointer: ptr, Text: "the root directory cannot be put on python's path; name the directory of the libraries"})
		case seen[p]:
			out = append(out, Problem{Pointer: ptr, Text: fmt.Sprintf("%q is listed twice", p)})
		}
		seen[p] = true
	}
	return out
}

// HostPathProblems checks python_path against this host: each entry must
// exist and be a directory, or a regular .zip or .whl file that reads as a
// zip archive. A configuration file (one host's) is refused with these
// problems; a shared configuration is not (another worker may have the
// path), and a worker that lacks an entry says so and mounts the rest.
func HostPathProblems(entries []string) []Problem {
	var out []Problem
	for i, p := range entries {
		ptr := fmt.Sprintf("/python_path/%d", i)
		st, err := os.Stat(p)
		if err != nil {
			out = append(out, Problem{Pointer: ptr, Text: fmt.Sprintf("%q does not exist or cannot be read: %v", p, err)})
			continue
		}
		switch {
		case st.IsDir():
		case st.Mode().IsRegular() && (strings.HasSuffix(p, ".zip") || strings.HasSuffix(p, ".whl")):
			f, err := os.Open(p)
			if err == nil {
				_, err = zipfs.New(p, f, st.Size(), false)
				_ = f.Close()
			}
			if err != nil {
				out = append(out, Problem{Pointer: ptr, Text: fmt.Sprintf("%q is not a zip archive python can read (stored or deflated entries): %v", p, err)})
			}
		default:
			out = append(out, Problem{Pointer: ptr, Text: fmt.Sprintf("%q is neither a directory nor a regular .zip or .whl file", p)})
		}
	}
	return out
}

// problemFrom turns one gojsonschema finding into a Problem.
func problemFrom(re gojsonschema.ResultError) Problem {
	if re.Type() == "additional_property_not_allowed" {
		prop, _ := re.Details()["property"].(string)
		return Problem{Pointer: "/" + escapePointer(prop), Text: "unknown key"}
	}
	ptr := ""
	if f := re.Field(); f != "(root)" && f != "" {
		for _, seg := range strings.Split(f, ".") {
			ptr += "/" + escapePointer(seg)
		}
	}
	desc := re.Description()
	if desc != "" {
		desc = strings.ToLower(desc[:1]) + desc[1:]
	}
	return Problem{Pointer: ptr, Text: desc}
}

func validationErr(problems ...Problem) error {
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Pointer < problems[j].Pointer })
	var merr *multierror.Error
	for _, p := range problems {
		merr = multierror.Append(merr, p)
	}
	return &ValidationError{errs: merr}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// fieldsByKey maps every json key of *c to its addressable field.
func fieldsByKey(c *Config) map[string]reflect.Value {
	v := reflect.ValueOf(c).Elem()
	t := v.Type()
	out := make(map[string]reflect.Value, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out[jsonName(t.Field(i))] = v.Field(i)
	}
	return out
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return "a number"
	}
}

// JSON returns c as a complete JSON object, keys in schema order.
func (c Config) JSON() json.RawMessage {
	b, err := json.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("configsvc: marshal Config: %v", err))
	}
	return b
}
