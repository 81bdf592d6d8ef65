package iiitest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/code-runner-go/code-runner/iii"
)

// StateFake is iii's state module (contract §26.7): state::get, set,
// delete, list and update over scopes of keys, with the shapes of the
// iii-sdk's StateSetResult, StateDeleteResult and StateUpdateResult, kept
// in memory for the engine's life — a worker that restarts finds what it
// wrote. It can be switched off (SetAvailable(false)), as an engine whose
// state module is off answers function_not_found.
type StateFake struct {
	e      *Engine
	mu     sync.Mutex
	scopes map[string]map[string]json.RawMessage
	order  map[string][]string // keys of a scope in the order they were first set
	calls  []StateCall
	failOn map[string]*iii.ErrorBody
}

// StateCall records one state::* call.
type StateCall struct {
	Function string
	Data     json.RawMessage
}

func newStateFake(e *Engine, on bool) *StateFake {
	f := &StateFake{e: e, scopes: map[string]map[string]json.RawMessage{}, order: map[string][]string{}, failOn: map[string]*iii.ErrorBody{}}
	f.SetAvailable(on)
	return f
}

// SetAvailable installs (true) or removes (false) every state::* function.
func (f *StateFake) SetAvailable(on bool) {
	pick := func(fn builtinFunc) builtinFunc {
		if on {
			return fn
		}
		return nil
	}
	f.e.registerBuiltin("state::get", pick(f.get))
	f.e.registerBuiltin("state::set", pick(f.set))
	f.e.registerBuiltin("state::delete", pick(f.delete))
	f.e.registerBuiltin("state::list", pick(f.list))
	f.e.registerBuiltin("state::update", pick(f.update))
}

// FailWith makes every later call of fn (e.g. "state::set") fail with err
// until it is called again with a nil err: a store that refuses.
func (f *StateFake) FailWith(fn string, err *iii.ErrorBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.failOn, fn)
		return
	}
	f.failOn[fn] = err
}

// Value answers the stored value of scope/key.
func (f *StateFake) Value(scope, key string) (json.RawMessage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.scopes[scope][key]
	return v, ok
}

// Put stores value (JSON, as every stored value is) under scope/key as
// state::set would: tests seed records with it, unreadable ones included.
func (f *StateFake) Put(scope, key string, value json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.put(scope, key, value)
}

// Keys answers the keys of scope, sorted.
func (f *StateFake) Keys(scope string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.scopes[scope] {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Calls answers the state::* calls so far.
func (f *StateFake) Calls() []StateCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]StateCall(nil), f.calls...)
}

func (f *StateFake) put(scope, key string, value json.RawMessage) {
	s := f.scopes[scope]
	if s == nil {
		s = map[string]json.RawMessage{}
		f.scopes[scope] = s
	}
	if _, ok := s[key]; !ok {
		f.order[scope] = append(f.order[scope], key)
	}
	s[key] = append(json.RawMessage(nil), value...)
}

func (f *StateFake) remove(scope, key string) {
	delete(f.scopes[scope], key)
	keys := f.order[scope]
	for i, k := range keys {
		if k == key {
			f.order[scope] = append(keys[:i:i], keys[i+1:]...)
			break
		}
	}
}

type stateInput struct {
	Scope *string         `json:"scope"`
	Key   *string         `json:"key"`
	Value json.RawMessage `json:"value"`
	Ops   []stateOp       `json:"ops"`
}

// begin records the call and decodes its input, answering the fault to
// return when the input lacks a field the function needs or the store was
// told to fail.
func (f *StateFake) begin(fn string, data json.RawMessage, needKey bool) (stateInput, *iii.ErrorBody) {
	f.calls = append(f.calls, StateCall{Function: fn, Data: append(json.RawMessage(nil), data...)})
	if eb := f.failOn[fn]; eb != nil {
		return stateInput{}, eb
	}
	var in stateInput
	if err := json.Unmarshal(data, &in); err != nil {
		return in, deserializationError(fn, err)
	}
	if in.Scope == nil {
		return in, deserializationError(fn, fmt.Errorf("missing field `scope`"))
	}
	if needKey && in.Key == nil {
		return in, deserializationError(fn, fmt.Errorf("missing field `key`"))
	}
	return in, nil
}

func (f *StateFake) get(_ context.Context, _ *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, eb := f.begin("state::get", data, true)
	if eb != nil {
		return nil, eb
	}
	if v, ok := f.scopes[*in.Scope][*in.Key]; ok {
		return v, nil
	}
	return json.RawMessage("null"), nil
}

func (f *StateFake) set(_ context.Context, _ *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, eb := f.begin("state::set", data, true)
	if eb != nil {
		return nil, eb
	}
	value := in.Value
	if len(value) == 0 {
		value = json.RawMessage("null")
	}
	old, had := f.scopes[*in.Scope][*in.Key]
	f.put(*in.Scope, *in.Key, value)
	return changeResult(old, had, value, nil), nil
}

func (f *StateFake) delete(_ context.Context, _ *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, eb := f.begin("state::delete", data, true)
	if eb != nil {
		return nil, eb
	}
	old, had := f.scopes[*in.Scope][*in.Key]
	f.remove(*in.Scope, *in.Key)
	out := map[string]json.RawMessage{}
	if had {
		out["old_value"] = old
	}
	b, _ := json.Marshal(out)
	return b, nil
}

func (f *StateFake) list(_ context.Context, _ *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, eb := f.begin("state::list", data, false)
	if eb != nil {
		return nil, eb
	}
	values := []json.RawMessage{}
	for _, k := range f.order[*in.Scope] {
		values = append(values, f.scopes[*in.Scope][k])
	}
	b, _ := json.Marshal(values)
	return b, nil
}

// stateOp is one of state::update's operations.
type stateOp struct {
	Type  string          `json:"type"`
	Path  json.RawMessage `json:"path"`
	Value json.RawMessage `json:"value"`
	By    *float64        `json:"by"`
}

type opError struct {
	OpIndex int    `json:"op_index"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (f *StateFake) update(_ context.Context, _ *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in, eb := f.begin("state::update", data, true)
	if eb != nil {
		return nil, eb
	}
	old, had := f.scopes[*in.Scope][*in.Key]
	var cur any
	if had {
		_ = json.Unmarshal(old, &cur)
	}
	var errs []opError
	for i, op := range in.Ops {
		next, err := applyOp(cur, op)
		if err != nil {
			errs = append(errs, opError{OpIndex: i, Code: op.Type + "." + err.code, Message: err.msg})
			continue
		}
		cur = next
	}
	value, _ := json.Marshal(cur)
	f.put(*in.Scope, *in.Key, value)
	return changeResult(old, had, value, errs), nil
}

func changeResult(old json.RawMessage, had bool, value json.RawMessage, errs []opError) json.RawMessage {
	out := map[string]any{"new_value": value}
	if had {
		out["old_value"] = old
	}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	b, _ := json.Marshal(out)
	return b
}

type opFault struct{ code, msg string }

// segments reads an op's path: omitted, "" or [] is the root; a string one
// first-level key; an array literal keys.
func segments(raw json.RawMessage) ([]string, *opFault) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return nil, &opFault{"path.invalid", "path must be a string or an array of strings"}
	}
	for _, s := range many {
		if s == "__proto__" || s == "constructor" || s == "prototype" {
			return nil, &opFault{"path.forbidden_segment", fmt.Sprintf("path segment %q is not allowed", s)}
		}
	}
	return many, nil
}

func applyOp(cur any, op stateOp) (any, *opFault) {
	path, fault := segments(op.Path)
	if fault != nil {
		return cur, fault
	}
	var value any
	if len(op.Value) > 0 {
		_ = json.Unmarshal(op.Value, &value)
	}
	switch op.Type {
	case "set":
		return setAt(cur, path, value), nil
	case "increment", "decrement":
		by := 0.0
		if op.By != nil {
			by = *op.By
		}
		if op.Type == "decrement" {
			by = -by
		}
		n, _ := getAt(cur, path).(float64)
		return setAt(cur, path, n+by), nil
	case "remove":
		if len(path) == 0 {
			return nil, nil
		}
		parent, ok := getAt(cur, path[:len(path)-1]).(map[string]any)
		if ok {
			delete(parent, path[len(path)-1])
		}
		return cur, nil
	case "append":
		switch at := getAt(cur, path).(type) {
		case nil:
			if s, ok := value.(string); ok && len(path) <= 1 {
				return setAt(cur, path, s), nil
			}
			return setAt(cur, path, []any{value}), nil
		case []any:
			return setAt(cur, path, append(at, value)), nil
		case string:
			s, ok := value.(string)
			if !ok {
				return cur, &opFault{"type_mismatch", "a string target takes only string values"}
			}
			return setAt(cur, path, at+s), nil
		default:
			return cur, &opFault{"type_mismatch", "the target is neither an array nor a string"}
		}
	case "merge":
		obj, ok := value.(map[string]any)
		if !ok {
			return cur, &opFault{"value.not_object", "merge takes an object value"}
		}
		target, _ := getAt(cur, path).(map[string]any)
		if target == nil {
			target = map[string]any{}
		}
		for k, v := range obj {
			if k == "__proto__" || k == "constructor" || k == "prototype" {
				return cur, &opFault{"value.forbidden_key", fmt.Sprintf("key %q is not allowed", k)}
			}
			target[k] = v
		}
		return setAt(cur, path, target), nil
	}
	return cur, &opFault{"unknown", "unknown op type " + strings.TrimSpace(op.Type)}
}

func getAt(cur any, path []string) any {
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// setAt answers cur with value at path, missing or non-object
// intermediates made objects.
func setAt(cur any, path []string, value any) any {
	if len(path) == 0 {
		return value
	}
	m, ok := cur.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	m[path[0]] = setAt(m[path[0]], path[1:], value)
	return m
}
