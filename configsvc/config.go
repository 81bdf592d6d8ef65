package configsvc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the configuration's JSON Schema (draft-07, docs/behaviour.md#configuration-keys)
// as compact JSON with its properties in document order. The caller owns the
// returned slice.
func Schema() json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, schemaJSON); err != nil {
		panic(fmt.Sprintf("configsvc: embedded schema.json is not JSON: %v", err))
	}
	return buf.Bytes()
}

// Config is one complete code-runner configuration. Every field maps to one
// key of the schema by its json tag; the zero value is not meaningful, use
// Defaults.
type Config struct {
	MaxRuntimes      int64    `json:"max_runtimes"`
	DefaultTimeoutMS int64    `json:"default_timeout_ms"`
	MaxTimeoutMS     int64    `json:"max_timeout_ms"`
	IdleTTLSecs      int64    `json:"idle_ttl_secs"`
	HeapMB           int64    `json:"heap_mb"`
	ExternalMB       int64    `json:"external_mb"`
	ScratchMB        int64    `json:"scratch_mb"`
	ScratchFiles     int64    `json:"scratch_files"`
	ScratchRoot      *string  `json:"scratch_root"`
	InjectGuidance   bool     `json:"inject_guidance"`
	MaxResultBytes   int64    `json:"max_result_bytes"`
	MaxStreamBytes   int64    `json:"max_stream_bytes"`
	WarmPoolNode     int64    `json:"warm_pool_node"`
	WarmPoolPython   int64    `json:"warm_pool_python"`
	PythonPath       []string `json:"python_path"`
	DrainSecs        int64    `json:"drain_secs"`
}

// Defaults returns the built-in configuration: every key at the default the
// schema declares.
func Defaults() Config {
	var c Config
	if err := json.Unmarshal(DefaultsJSON(), &c); err != nil {
		panic(fmt.Sprintf("configsvc: schema defaults do not fit Config: %v", err))
	}
	return c
}

// DefaultsJSON returns the schema's defaults as one JSON object, keys in
// schema order (the manifest's default_config).
func DefaultsJSON() json.RawMessage {
	props := schemaProperties()
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, p := range props {
		if i > 0 {
			buf.WriteByte(',')
		}
		k, _ := json.Marshal(p.name)
		buf.Write(k)
		buf.WriteByte(':')
		buf.Write(p.def)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// Keys returns the configuration keys in schema order.
func Keys() []string {
	props := schemaProperties()
	keys := make([]string, len(props))
	for i, p := range props {
		keys[i] = p.name
	}
	return keys
}

type schemaProperty struct {
	name string
	def  json.RawMessage
	desc string
}

// schemaProperties reads the properties of schema.json in document order.
func schemaProperties() []schemaProperty {
	dec := json.NewDecoder(bytes.NewReader(schemaJSON))
	var top map[string]json.RawMessage
	if err := json.Unmarshal(schemaJSON, &top); err != nil {
		panic(err)
	}
	dec = json.NewDecoder(bytes.NewReader(top["properties"]))
	if _, err := dec.Token(); err != nil { // {
		panic(err)
	}
	var out []schemaProperty
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			panic(err)
		}
		var body struct {
			Default     json.RawMessage `json:"default"`
			Description string          `json:"description"`
		}
		if err := dec.Decode(&body); err != nil {
			panic(err)
		}
		out = append(out, schemaProperty{name: tok.(string), def: body.Default, desc: body.Description})
	}
	return out
}

// Get returns the value of key in c as a JSON-compatible Go value, or false
// for an unknown key.
func (c Config) Get(key string) (any, bool) {
	v := reflect.ValueOf(c)
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if jsonName(t.Field(i)) == key {
			f := v.Field(i)
			if f.Kind() == reflect.Pointer {
				if f.IsNil() {
					return nil, true
				}
				return f.Elem().Interface(), true
			}
			return f.Interface(), true
		}
	}
	return nil, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// ScratchRootOrEmpty returns scratch_root, or "" when it is null.
func (c Config) ScratchRootOrEmpty() string {
	if c.ScratchRoot == nil {
		return ""
	}
	return *c.ScratchRoot
}
