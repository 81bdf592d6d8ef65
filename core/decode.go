package core

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strings"
)

// fieldKind is what a request field must hold.
type fieldKind int

const (
	kString fieldKind = iota
	kBool
	kUint
	kLang
	kAny
)

var expectation = map[fieldKind]string{
	kString: "a string",
	kBool:   "a boolean",
	kUint:   "a non-negative integer",
}

type fieldSpec struct {
	name     string
	kind     fieldKind
	required bool
	max      uint64 // for kUint; 0 = uint64
	langs    []Lang // for kLang: the languages this worker's engines run
}

// langField is the spec of a `lang` field over langs.
func langField(langs []Lang) fieldSpec { return fieldSpec{name: "lang", kind: kLang, langs: langs} }

// expected says what a field of spec s must hold.
func (s fieldSpec) expected() string {
	if s.kind != kLang {
		return expectation[s.kind]
	}
	quoted := make([]string, len(s.langs))
	for i, l := range s.langs {
		quoted[i] = `"` + string(l) + `"`
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " or " + quoted[len(quoted)-1]
}

// decodeObject checks payload against specs in order (docs/behaviour.md#functions-decoding):
// unknown fields are ignored, null equals absent, and the first problem in
// spec order is reported. It returns the present, non-null fields.
func decodeObject(payload json.RawMessage, specs []fieldSpec) (map[string]json.RawMessage, error) {
	trimmed := bytes.TrimSpace(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, Errorf(CodeInvalidRequest, "invalid request: expected a JSON object")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return nil, Errorf(CodeInvalidRequest, "invalid request: expected a JSON object")
	}
	out := make(map[string]json.RawMessage, len(specs))
	for _, s := range specs {
		raw, ok := obj[s.name]
		if !ok || string(bytes.TrimSpace(raw)) == "null" {
			if s.required {
				return nil, Errorf(CodeInvalidRequest, "invalid request: `%s` is required", s.name)
			}
			continue
		}
		if !fits(raw, s) {
			return nil, Errorf(CodeInvalidRequest, "invalid request: `%s` must be %s", s.name, s.expected())
		}
		out[s.name] = raw
	}
	return out, nil
}

func fits(raw json.RawMessage, s fieldSpec) bool {
	switch s.kind {
	case kString:
		var v string
		return json.Unmarshal(raw, &v) == nil
	case kBool:
		var v bool
		return json.Unmarshal(raw, &v) == nil
	case kLang:
		var v string
		return json.Unmarshal(raw, &v) == nil && slices.Contains(s.langs, Lang(v))
	case kUint:
		_, ok := parseUint(raw, s.max)
		return ok
	}
	return true
}

// parseUint accepts a JSON number that is a non-negative integer no larger
// than max (0 = no limit below 2^64-1); 5.0 counts as 5. Only a JSON number
// token qualifies: json.Number would also take a quoted number ("100").
func parseUint(raw json.RawMessage, max uint64) (uint64, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return 0, false
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err != nil {
		return 0, false
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return 0, false
	}
	i := r.Num()
	if !i.IsUint64() {
		return 0, false
	}
	v := i.Uint64()
	if max == 0 {
		max = math.MaxUint64
	}
	return v, v <= max
}

func str(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

// DecodeRun decodes a code-runner::run payload (docs/behaviour.md#functions-decoding; schema worker/schemas/run.request.json);
// langs are the languages `lang` may name (the worker's engines, sorted).
func DecodeRun(payload json.RawMessage, langs []Lang) (*RunRequest, error) {
	f, err := decodeObject(payload, []fieldSpec{
		{name: "code", kind: kString, required: true},
		{name: "keep", kind: kBool},
		{name: "lang", kind: kLang, langs: langs},
		{name: "runtime_id", kind: kString},
		{name: "timeout_ms", kind: kUint},
		{name: "memory_mb", kind: kUint, max: math.MaxUint32},
	})
	if err != nil {
		return nil, err
	}
	r := &RunRequest{Code: str(f["code"]), Lang: Lang(str(f["lang"])), RuntimeID: str(f["runtime_id"])}
	if raw, ok := f["keep"]; ok {
		_ = json.Unmarshal(raw, &r.Keep)
	}
	if raw, ok := f["timeout_ms"]; ok {
		r.TimeoutMS, _ = parseUint(raw, 0)
	}
	if raw, ok := f["memory_mb"]; ok {
		v, _ := parseUint(raw, math.MaxUint32)
		m := uint32(v)
		r.MemoryMB = &m
	}
	return r, nil
}

// DecodeTeardown decodes a code-runner::teardown payload.
func DecodeTeardown(payload json.RawMessage) (*TeardownRequest, error) {
	f, err := decodeObject(payload, []fieldSpec{
		{name: "namespace", kind: kString},
		{name: "runtime_id", kind: kString},
	})
	if err != nil {
		return nil, err
	}
	return &TeardownRequest{Namespace: str(f["namespace"]), RuntimeID: str(f["runtime_id"])}, nil
}

// DecodeRegister decodes a code-runner::register_function payload. Format
// fields are returned raw; their rules (docs/behaviour.md#register-formats) are checked by
// CheckFormat. langs are the languages `lang` may name.
func DecodeRegister(payload json.RawMessage, langs []Lang) (*RegisterRequest, error) {
	f, err := decodeObject(payload, []fieldSpec{
		{name: "description", kind: kString},
		{name: "function_id", kind: kString, required: true},
		{name: "lang", kind: kLang, required: true, langs: langs},
		{name: "request_format", kind: kAny},
		{name: "response_format", kind: kAny},
		{name: "source", kind: kString, required: true},
	})
	if err != nil {
		return nil, err
	}
	r := &RegisterRequest{
		FunctionID:     str(f["function_id"]),
		Lang:           Lang(str(f["lang"])),
		Source:         str(f["source"]),
		RequestFormat:  f["request_format"],
		ResponseFormat: f["response_format"],
	}
	if raw, ok := f["description"]; ok {
		d := str(raw)
		r.Description = &d
	}
	return r, nil
}

// formatKeys are the top-level keys that make a schema constrain something.
var formatKeys = []string{"type", "properties", "$ref", "enum", "const", "anyOf", "oneOf", "allOf", "not", "items"}

// CheckFormat applies the request_format / response_format rules of
// docs/behaviour.md#register-formats to a present, non-null value; field names the field.
func CheckFormat(field string, raw json.RawMessage) error {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Errorf(CodeInvalidRequest, `%s must be a JSON Schema OBJECT, e.g. {"type": "object"} — got %s`, field, jsonKind(trimmed))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil {
		return Errorf(CodeInvalidRequest, `%s must be a JSON Schema OBJECT, e.g. {"type": "object"} — got %s`, field, jsonKind(trimmed))
	}
	constrains := false
	for _, k := range formatKeys {
		if _, ok := obj[k]; ok {
			constrains = true
			break
		}
	}
	if !constrains {
		return Errorf(CodeInvalidRequest, `%s constrains nothing — a schema needs at least one of ["type", "properties", "$ref", "enum", "const", "anyOf", "oneOf", "allOf", "not", "items"] at its top level (an empty object is the "any" you already get by omitting the field)`, field)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, trimmed)
	if compact.Len() > 16384 {
		return Errorf(CodeInvalidRequest, "%s is %d bytes serialized; the limit is 16384", field, compact.Len())
	}
	return nil
}

func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "null"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
