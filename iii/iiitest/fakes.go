package iiitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/xeipuuv/gojsonschema"

	"github.com/code-runner-go/code-runner/iii"
)

// ---------------------------------------------------------------------------
// Configuration worker (docs/behaviour.md#configuration-worker)

// ConfigEntry is one stored configuration entry.
type ConfigEntry struct {
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Value       json.RawMessage `json:"value"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// ConfigurationFake is the configuration worker: configuration::ensure,
// register, get, set and list over an in-memory map, and the
// `configuration` trigger type firing on every change.
type ConfigurationFake struct {
	e        *Engine
	mu       sync.Mutex
	entries  map[string]*ConfigEntry
	bindings map[string]TriggerInfo
	calls    []ConfigCall
	env      func(string) (string, bool)
}

// ConfigCall records one configuration::* call.
type ConfigCall struct {
	Function string
	Data     json.RawMessage
}

var configIDPattern = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

func newConfigurationFake(e *Engine) *ConfigurationFake {
	f := &ConfigurationFake{e: e, entries: map[string]*ConfigEntry{}, bindings: map[string]TriggerInfo{}, env: os.LookupEnv}
	e.registerBuiltinType("configuration", "Fires when a configuration entry is registered, updated or deleted.", f)
	f.SetAvailable(true)
	return f
}

// SetAvailable installs (true) or removes (false) every configuration::*
// function, so callers get the engine's function_not_found.
func (f *ConfigurationFake) SetAvailable(on bool) {
	pick := func(fn builtinFunc) builtinFunc {
		if on {
			return fn
		}
		return nil
	}
	f.e.registerBuiltin("configuration::ensure", pick(f.ensure))
	f.e.registerBuiltin("configuration::register", pick(f.register))
	f.e.registerBuiltin("configuration::get", pick(f.get))
	f.e.registerBuiltin("configuration::set", pick(f.set))
	f.e.registerBuiltin("configuration::list", pick(f.list))
}

// SetEnsureAvailable removes (false) or restores (true) configuration::ensure
// alone, as on engines older than 0.24.1.
func (f *ConfigurationFake) SetEnsureAvailable(on bool) {
	if on {
		f.e.registerBuiltin("configuration::ensure", f.ensure)
	} else {
		f.e.registerBuiltin("configuration::ensure", nil)
	}
}

// SetEnv replaces the environment used to expand ${VAR} on get.
func (f *ConfigurationFake) SetEnv(env func(string) (string, bool)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.env = env
}

// Entry returns a copy of the stored entry.
func (f *ConfigurationFake) Entry(id string) (ConfigEntry, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.entries[id]
	if !ok {
		return ConfigEntry{}, false
	}
	return *e, true
}

// Store puts a value directly, as if the operator's file already held it
// (no event fires).
func (f *ConfigurationFake) Store(id string, value any) {
	b, _ := json.Marshal(value)
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.entries[id]
	if e == nil {
		e = &ConfigEntry{ID: id, Name: id}
		f.entries[id] = e
	}
	e.Value = b
}

// Calls returns every configuration::* call received, in order.
func (f *ConfigurationFake) Calls() []ConfigCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ConfigCall{}, f.calls...)
}

func (f *ConfigurationFake) record(fn string, data json.RawMessage) {
	f.mu.Lock()
	f.calls = append(f.calls, ConfigCall{Function: fn, Data: append(json.RawMessage{}, data...)})
	f.mu.Unlock()
}

type registerInput struct {
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	Schema       json.RawMessage `json:"schema"`
	InitialValue json.RawMessage `json:"initial_value"`
	Metadata     json.RawMessage `json:"metadata"`
}

func cfgErr(code, msg string) *iii.ErrorBody { return &iii.ErrorBody{Code: code, Message: msg} }

func validateAgainst(schema, value json.RawMessage) error {
	if len(schema) == 0 || string(schema) == "null" {
		return nil
	}
	res, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(value))
	if err != nil {
		return err
	}
	if !res.Valid() {
		var msgs []string
		for _, e := range res.Errors() {
			msgs = append(msgs, e.String())
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

func isNull(v json.RawMessage) bool { return len(v) == 0 || string(v) == "null" }

func (f *ConfigurationFake) upsert(in registerInput, seedOnlyIfEmpty bool) (*ConfigEntry, string, *iii.ErrorBody) {
	if !configIDPattern.MatchString(in.ID) {
		return nil, "", cfgErr("INVALID_ID", fmt.Sprintf("invalid configuration id %q", in.ID))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	e, existed := f.entries[in.ID]
	if !existed {
		e = &ConfigEntry{ID: in.ID}
	}
	applySeed := in.InitialValue != nil && (!seedOnlyIfEmpty || isNull(e.Value))
	if applySeed && !isNull(in.InitialValue) {
		if err := validateAgainst(in.Schema, in.InitialValue); err != nil {
			return nil, "", cfgErr("SCHEMA_INVALID", err.Error())
		}
	}
	e.Name, e.Description, e.Schema, e.Metadata = in.Name, in.Description, in.Schema, in.Metadata
	if applySeed {
		e.Value = in.InitialValue
	}
	f.entries[in.ID] = e
	event := "configuration:updated"
	if !existed {
		event = "configuration:registered"
	}
	return e, event, nil
}

func (f *ConfigurationFake) register(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.record("configuration::register", data)
	var in registerInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, deserializationError("configuration::register", err)
	}
	old := f.value(in.ID)
	e, event, eb := f.upsert(in, false)
	if eb != nil {
		return nil, eb
	}
	f.fireChange(event, e, old)
	b, _ := json.Marshal(e)
	return b, nil
}

func (f *ConfigurationFake) ensure(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.record("configuration::ensure", data)
	var in registerInput
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, deserializationError("configuration::ensure", err)
	}
	old := f.value(in.ID)
	e, event, eb := f.upsert(in, true)
	if eb != nil {
		return nil, eb
	}
	f.fireChange(event, e, old)
	action := "unchanged"
	if isNull(old) && !isNull(e.Value) {
		action = "seeded"
	}
	b, _ := json.Marshal(map[string]any{"action": action, "entry": e})
	return b, nil
}

func (f *ConfigurationFake) value(id string) json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.entries[id]; ok {
		return e.Value
	}
	return nil
}

func (f *ConfigurationFake) get(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.record("configuration::get", data)
	var in struct {
		ID  string `json:"id"`
		Raw bool   `json:"raw"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, deserializationError("configuration::get", err)
	}
	f.mu.Lock()
	e, ok := f.entries[in.ID]
	var val, schema json.RawMessage
	if ok {
		val, schema = e.Value, e.Schema
	}
	env := f.env
	f.mu.Unlock()
	if !ok {
		return nil, cfgErr("NOT_FOUND", fmt.Sprintf("configuration '%s' not found", in.ID))
	}
	if val == nil {
		val = json.RawMessage("null")
	}
	if !in.Raw && !isNull(val) {
		expanded, err := expandJSON(val, env)
		if err != nil {
			return nil, cfgErr("EXPAND_FAILED", err.Error())
		}
		if err := validateAgainst(schema, expanded); err != nil {
			return nil, cfgErr("SCHEMA_INVALID", err.Error())
		}
		val = expanded
	}
	b, _ := json.Marshal(map[string]any{"id": in.ID, "value": val})
	return b, nil
}

func (f *ConfigurationFake) set(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.record("configuration::set", data)
	var in struct {
		ID    string          `json:"id"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, deserializationError("configuration::set", err)
	}
	f.mu.Lock()
	e, ok := f.entries[in.ID]
	if !ok {
		f.mu.Unlock()
		return nil, cfgErr("NOT_REGISTERED", fmt.Sprintf("configuration '%s' is not registered", in.ID))
	}
	if isNull(e.Schema) {
		f.mu.Unlock()
		return nil, cfgErr("SCHEMA_UNAVAILABLE", "the schema of this entry is not known yet")
	}
	if err := validateAgainst(e.Schema, in.Value); err != nil {
		f.mu.Unlock()
		return nil, cfgErr("SCHEMA_INVALID", err.Error())
	}
	old := e.Value
	e.Value = in.Value
	cp := *e
	f.mu.Unlock()
	f.fireChange("configuration:updated", &cp, old)
	b, _ := json.Marshal(map[string]any{"old_value": rawOrNull(old), "new_value": in.Value})
	return b, nil
}

// SetValue is configuration::set as an operator would call it from the
// console; it returns the error body on a rejected value.
func (f *ConfigurationFake) SetValue(ctx context.Context, id string, value any) *iii.ErrorBody {
	b, _ := json.Marshal(map[string]any{"id": id, "value": value})
	_, eb := f.set(ctx, nil, b)
	return eb
}

func rawOrNull(v json.RawMessage) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	return v
}

func (f *ConfigurationFake) list(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.record("configuration::list", data)
	f.mu.Lock()
	var rows []map[string]any
	for _, e := range f.entries {
		rows = append(rows, map[string]any{"id": e.ID, "name": e.Name, "description": e.Description, "schema": e.Schema, "metadata": e.Metadata})
	}
	f.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i]["id"].(string) < rows[j]["id"].(string) })
	b, _ := json.Marshal(map[string]any{"configurations": rows})
	return b, nil
}

// Register validates a `configuration` binding's config.
func (f *ConfigurationFake) Register(t TriggerInfo) error {
	var cfg struct {
		ConfigurationID string   `json:"configuration_id"`
		EventTypes      []string `json:"event_types"`
	}
	if len(t.Config) > 0 {
		if err := json.Unmarshal(t.Config, &cfg); err != nil {
			return fmt.Errorf("invalid configuration trigger config: %v", err)
		}
	}
	f.mu.Lock()
	f.bindings[t.ID] = t
	f.mu.Unlock()
	return nil
}

// Unregister forgets a binding.
func (f *ConfigurationFake) Unregister(id string) {
	f.mu.Lock()
	delete(f.bindings, id)
	f.mu.Unlock()
}

func (f *ConfigurationFake) fireChange(event string, e *ConfigEntry, old json.RawMessage) {
	f.mu.Lock()
	var targets []TriggerInfo
	for _, b := range f.bindings {
		var cfg struct {
			ConfigurationID *string  `json:"configuration_id"`
			EventTypes      []string `json:"event_types"`
		}
		_ = json.Unmarshal(b.Config, &cfg)
		if cfg.ConfigurationID != nil && *cfg.ConfigurationID != e.ID {
			continue
		}
		if len(cfg.EventTypes) > 0 && !contains(cfg.EventTypes, event) {
			continue
		}
		targets = append(targets, b)
	}
	f.mu.Unlock()
	var oldV json.RawMessage
	if event != "configuration:registered" {
		oldV = rawOrNull(old)
	} else {
		oldV = json.RawMessage("null")
	}
	payload, _ := json.Marshal(map[string]any{"type": "configuration", "event_type": event, "id": e.ID, "name": e.Name,
		"description": e.Description, "schema": e.Schema, "old_value": oldV, "new_value": rawOrNull(e.Value), "metadata": e.Metadata})
	for _, t := range targets {
		go func(t TriggerInfo) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _, _ = f.e.fire(ctx, t.FunctionID, json.RawMessage(payload), t.Metadata)
		}(t)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

var placeholderRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\}`)

// expandJSON expands ${VAR} / ${VAR:default} in every string of v; a string
// that is only a placeholder becomes the JSON scalar its text spells.
func expandJSON(v json.RawMessage, env func(string) (string, bool)) (json.RawMessage, error) {
	var doc any
	if err := json.Unmarshal(v, &doc); err != nil {
		return nil, err
	}
	var walk func(any) (any, error)
	walk = func(x any) (any, error) {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				nv, err := walk(val)
				if err != nil {
					return nil, err
				}
				t[k] = nv
			}
			return t, nil
		case []any:
			for i, val := range t {
				nv, err := walk(val)
				if err != nil {
					return nil, err
				}
				t[i] = nv
			}
			return t, nil
		case string:
			var ferr error
			out := placeholderRe.ReplaceAllStringFunc(t, func(m string) string {
				sub := placeholderRe.FindStringSubmatch(m)
				if val, ok := env(sub[1]); ok {
					return val
				}
				if strings.Contains(m, ":") {
					return sub[2]
				}
				ferr = fmt.Errorf("variable %s is not set and has no default", sub[1])
				return m
			})
			if ferr != nil {
				return nil, ferr
			}
			if loc := placeholderRe.FindStringIndex(t); loc != nil && loc[0] == 0 && loc[1] == len(t) {
				var scalar any
				if json.Unmarshal([]byte(out), &scalar) == nil {
					return scalar, nil
				}
			}
			return out, nil
		}
		return x, nil
	}
	out, err := walk(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// ---------------------------------------------------------------------------
// Harness pre-generate hook (docs/behaviour.md#harness-pre-generate-hook)

// HookBinding is a recorded harness::hook::pre-generate binding.
type HookBinding struct {
	TriggerInfo
}

// HarnessFake provides the harness::hook::pre-generate trigger type,
// records bindings (refusing unknown config keys, as the harness does) and
// fires the hook on demand.
type HarnessFake struct {
	e        *Engine
	mu       sync.Mutex
	bindings map[string]TriggerInfo
}

// PreGenerateType is the harness's pre-generate hook trigger type.
const PreGenerateType = "harness::hook::pre-generate"

func newHarnessFake(e *Engine) *HarnessFake {
	h := &HarnessFake{e: e, bindings: map[string]TriggerInfo{}}
	e.registerBuiltinType(PreGenerateType, "Synchronous hook called before every generation.", h)
	return h
}

// Register parses the binding config strictly.
func (h *HarnessFake) Register(t TriggerInfo) error {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(t.Config, &cfg); err != nil {
		return fmt.Errorf("hook config must be an object: %v", err)
	}
	for k, v := range cfg {
		switch k {
		case "functions", "sessions", "priority", "timeout_ms":
		case "on_error":
			var s string
			if json.Unmarshal(v, &s) != nil || (s != "fail_open" && s != "fail_closed") {
				return fmt.Errorf("on_error must be \"fail_open\" or \"fail_closed\"")
			}
		default:
			return fmt.Errorf("unknown hook config key %q", k)
		}
	}
	h.mu.Lock()
	h.bindings[t.ID] = t
	h.mu.Unlock()
	return nil
}

// Unregister forgets a binding.
func (h *HarnessFake) Unregister(id string) {
	h.mu.Lock()
	delete(h.bindings, id)
	h.mu.Unlock()
}

// Bindings returns the live hook bindings, sorted by function id.
func (h *HarnessFake) Bindings() []TriggerInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]TriggerInfo, 0, len(h.bindings))
	for _, b := range h.bindings {
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FunctionID < out[j].FunctionID })
	return out
}

// HookResult is one bound function's answer.
type HookResult struct {
	FunctionID string
	Result     json.RawMessage
	Error      *iii.ErrorBody
}

// FireHook simulates one generation: every bound function is invoked with
// {"point":"pre_generate","generate":{"system_prompt":prompt}}.
func (h *HarnessFake) FireHook(ctx context.Context, prompt string) ([]HookResult, error) {
	payload, _ := json.Marshal(map[string]any{"point": "pre_generate", "session_id": "s_test", "turn_id": "t_test", "step": 1, "depth": 0,
		"generate": map[string]any{"system_prompt": prompt, "messages": []any{}, "model": "test-model", "provider": ""}})
	var out []HookResult
	for _, b := range h.Bindings() {
		res, eb, err := h.e.fire(ctx, b.FunctionID, json.RawMessage(payload), b.Metadata)
		if err != nil {
			return out, err
		}
		out = append(out, HookResult{FunctionID: b.FunctionID, Result: res, Error: eb})
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// Console asset provider (docs/behaviour.md#console-assets)

// Asset is a console asset fetched through a content function.
type Asset struct {
	Path        string
	TriggerID   string
	FunctionID  string
	Content     string
	ContentType string
}

// ConsoleFake provides console:script and console:style: each binding's
// asset is fetched through its content function at registration, and a
// failed fetch rejects the registration, as the console does.
type ConsoleFake struct {
	e      *Engine
	mu     sync.Mutex
	assets map[string]Asset // by path
	byID   map[string]string
}

var assetPathRe = regexp.MustCompile(`^[a-z0-9._-]+(/[a-z0-9._-]+)*$`)

func newConsoleFake(e *Engine) *ConsoleFake {
	c := &ConsoleFake{e: e, assets: map[string]Asset{}, byID: map[string]string{}}
	e.registerBuiltinType("console:script", "Injected console ES module.", consoleKind{c, ".js"})
	e.registerBuiltinType("console:style", "Injected console stylesheet.", consoleKind{c, ".css"})
	return c
}

type consoleKind struct {
	c   *ConsoleFake
	ext string
}

func (k consoleKind) Register(t TriggerInfo) error {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(t.Config, &cfg); err != nil || len(cfg) != 1 || cfg["path"] == nil {
		return errors.New(`config must be exactly {"path": "<worker>/<name>.<ext>"}`)
	}
	var path string
	if err := json.Unmarshal(cfg["path"], &path); err != nil || len(path) > 512 || !assetPathRe.MatchString(path) ||
		strings.Contains("/"+path+"/", "/../") || strings.Contains("/"+path+"/", "/./") || !strings.HasSuffix(path, k.ext) {
		return fmt.Errorf("invalid asset path %q", path)
	}
	// The console is a separate worker: it fetches asynchronously, so the
	// registrant's connection keeps being read while the content function
	// answers. A failed fetch rejects the registration afterwards.
	go func() {
		if err := k.fetch(t, path); err != nil {
			k.c.e.rejectBinding(t.ID, err.Error())
		}
	}()
	return nil
}

func (k consoleKind) fetch(t TriggerInfo, path string) error {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		res, eb, err := k.c.e.fire(ctx, t.FunctionID, map[string]string{"path": path}, t.Metadata)
		cancel()
		if err == nil && eb == nil {
			var out struct {
				Content     *string `json:"content"`
				ContentType string  `json:"content_type"`
			}
			if json.Unmarshal(res, &out) == nil && out.Content != nil {
				k.c.mu.Lock()
				k.c.assets[path] = Asset{Path: path, TriggerID: t.ID, FunctionID: t.FunctionID, Content: *out.Content, ContentType: out.ContentType}
				k.c.byID[t.ID] = path
				k.c.mu.Unlock()
				return nil
			}
			lastErr = errors.New("content function returned no string content")
		} else if eb != nil {
			lastErr = fmt.Errorf("%s: %s", eb.Code, eb.Message)
		} else {
			lastErr = err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("fetching %s failed: %v", path, lastErr)
}

func (k consoleKind) Unregister(id string) {
	k.c.mu.Lock()
	defer k.c.mu.Unlock()
	if p, ok := k.c.byID[id]; ok {
		delete(k.c.byID, id)
		if a, ok := k.c.assets[p]; ok && a.TriggerID == id {
			delete(k.c.assets, p)
		}
	}
}

// Asset returns the asset served for path.
func (c *ConsoleFake) Asset(path string) (Asset, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.assets[path]
	return a, ok
}
