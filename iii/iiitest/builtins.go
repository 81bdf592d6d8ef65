package iiitest

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/code-runner-go/code-runner/iii"
)

// registerBuiltin installs (or, with fn nil, removes) an in-process function.
func (e *Engine) registerBuiltin(id string, fn builtinFunc) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if fn == nil {
		if f, ok := e.functions[id]; ok && f.builtin != nil {
			delete(e.functions, id)
		}
		return
	}
	e.functions[id] = &function{id: id, builtin: fn, workerName: "iii-engine"}
}

func (e *Engine) installBuiltins() {
	e.registerBuiltin("engine::workers::register", e.workersRegister)
	e.registerBuiltin("engine::functions::list", e.functionsList)
	e.registerBuiltin("engine::functions::info", e.functionsInfo)
	e.registerBuiltin("engine::workers::list", e.workersList)
	e.registerBuiltin("engine::triggers::list", e.triggersList)
	e.registerBuiltinType("engine::workers-available", "Fires when workers connect, disconnect or report metadata.", workersAvailable{e})
}

func deserializationError(id string, err error) *iii.ErrorBody {
	return &iii.ErrorBody{Code: "deserialization_error", Message: fmt.Sprintf("Failed to deserialize input for %s: %v", id, err)}
}

func cleanText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 280 {
		s = string(r[:280])
	}
	return strings.TrimSpace(s)
}

func (e *Engine) workersRegister(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	var in struct {
		Runtime     *string `json:"runtime"`
		Version     string  `json:"version"`
		Name        string  `json:"name"`
		Description string  `json:"description"`
		OS          string  `json:"os"`
		PID         *int64  `json:"pid"`
		Namespace   string  `json:"namespace"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, deserializationError("engine::workers::register", err)
	}
	if caller == nil {
		return nil, deserializationError("engine::workers::register", fmt.Errorf("missing field `_caller_worker_id`"))
	}
	rt := "unknown"
	if in.Runtime != nil && *in.Runtime != "" {
		rt = *in.Runtime
	}
	e.mu.Lock()
	name := cleanText(in.Name)
	if e.opts.Refusing && name != "" {
		for _, other := range e.conns {
			if other != caller && other.meta.Name == name && other.meta.Namespace == in.Namespace && other.live() {
				e.mu.Unlock()
				ns := in.Namespace
				if ns == "" {
					ns = "default"
				}
				caller.send(&iii.Frame{Type: iii.TypeRegistrationRejected, Code: "WORKER_NAMESPACE_CONFLICT", WorkerName: name, Namespace: ns, OwnerWorkerID: other.id})
				go caller.closeAfterFlush()
				return nil, &iii.ErrorBody{Code: "WORKER_NAMESPACE_CONFLICT", Message: fmt.Sprintf("worker name %q is already taken in namespace %q", name, ns)}
			}
		}
	}
	caller.meta = workerMeta{Name: name, Runtime: rt, Version: in.Version, Description: cleanText(in.Description), OS: in.OS, Namespace: in.Namespace, PID: in.PID}
	for _, f := range e.functions {
		if f.owner == caller {
			f.workerName = caller.meta.Name
		}
	}
	e.mu.Unlock()
	e.record(Recorded{Inbound: true, WorkerID: caller.id, Worker: caller.meta.Name, Frame: iii.Frame{Type: "metadata"}})
	e.fireWorkersAvailable("worker_metadata_updated", caller.id)
	return json.RawMessage(`{"success":true}`), nil
}

// FunctionSummary is a row of engine::functions::list.
type FunctionSummary struct {
	FunctionID  string          `json:"function_id"`
	WorkerName  string          `json:"worker_name"`
	Description *string         `json:"description,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
}

// FunctionDetail is engine::functions::info's answer for one function.
type FunctionDetail struct {
	FunctionID         string              `json:"function_id"`
	WorkerName         string              `json:"worker_name"`
	Description        *string             `json:"description,omitempty"`
	RequestSchema      json.RawMessage     `json:"request_schema,omitempty"`
	ResponseSchema     json.RawMessage     `json:"response_schema,omitempty"`
	Metadata           json.RawMessage     `json:"metadata,omitempty"`
	RegisteredTriggers []registeredTrigger `json:"registered_triggers"`
}

type registeredTrigger struct {
	ID          string          `json:"id"`
	TriggerType string          `json:"trigger_type"`
	Config      json.RawMessage `json:"config"`
}

func (e *Engine) workerNameLocked(f *function) string {
	if f.owner != nil && f.owner.meta.Name != "" {
		return f.owner.meta.Name
	}
	if f.workerName != "" {
		return f.workerName
	}
	ns, _, _ := strings.Cut(f.id, "::")
	return ns
}

func isInternal(meta json.RawMessage) bool {
	var m struct {
		Internal bool `json:"internal"`
	}
	return json.Unmarshal(meta, &m) == nil && m.Internal
}

func (e *Engine) functionsList(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	in, eb := decodeListFilter("engine::functions::list", data)
	if eb != nil {
		return nil, eb
	}
	e.mu.Lock()
	var rows []FunctionSummary
	for id, f := range e.functions {
		if !in.IncludeInternal && ((strings.HasPrefix(id, "engine::") && !strings.HasPrefix(id, "engine::queue::")) || isInternal(f.metadata)) {
			continue
		}
		if in.Prefix != "" && !strings.HasPrefix(id, in.Prefix) {
			continue
		}
		if in.Search != "" && !strings.Contains(id, in.Search) {
			continue
		}
		rows = append(rows, FunctionSummary{FunctionID: id, WorkerName: e.workerNameLocked(f), Description: f.description, Metadata: f.metadata})
	}
	e.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i].FunctionID < rows[j].FunctionID })
	if rows == nil {
		rows = []FunctionSummary{}
	}
	b, _ := json.Marshal(map[string]any{"functions": rows})
	return b, nil
}

func (e *Engine) detailLocked(id string) (*FunctionDetail, bool) {
	f, ok := e.functions[id]
	if !ok {
		return nil, false
	}
	d := &FunctionDetail{FunctionID: id, WorkerName: e.workerNameLocked(f), Description: f.description,
		RequestSchema: f.requestFormat, ResponseSchema: f.responseFormat, Metadata: f.metadata, RegisteredTriggers: []registeredTrigger{}}
	for _, t := range e.triggers {
		if t.FunctionID == id {
			d.RegisteredTriggers = append(d.RegisteredTriggers, registeredTrigger{ID: t.ID, TriggerType: t.TriggerType, Config: t.Config})
		}
	}
	sort.Slice(d.RegisteredTriggers, func(i, j int) bool { return d.RegisteredTriggers[i].ID < d.RegisteredTriggers[j].ID })
	return d, true
}

func (e *Engine) functionsInfo(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	var in struct {
		FunctionID  *string  `json:"function_id"`
		FunctionIDs []string `json:"function_ids"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, deserializationError("engine::functions::info", err)
	}
	if (in.FunctionID == nil) == (in.FunctionIDs == nil) {
		return nil, &iii.ErrorBody{Code: "INVALID_ARGUMENTS", Message: "pass exactly one of function_id or function_ids"}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if in.FunctionID != nil {
		d, ok := e.detailLocked(*in.FunctionID)
		if !ok {
			return nil, &iii.ErrorBody{Code: "NOT_FOUND", Message: fmt.Sprintf("Function '%s' is not registered.", *in.FunctionID)}
		}
		b, _ := json.Marshal(d)
		return b, nil
	}
	if len(in.FunctionIDs) == 0 || len(in.FunctionIDs) > 32 {
		return nil, &iii.ErrorBody{Code: "INVALID_ARGUMENTS", Message: "function_ids must hold 1 to 32 ids"}
	}
	rows := make([]any, 0, len(in.FunctionIDs))
	for _, id := range in.FunctionIDs {
		if d, ok := e.detailLocked(id); ok {
			rows = append(rows, d)
		} else {
			rows = append(rows, map[string]string{"function_id": id, "error": "not_found"})
		}
	}
	b, _ := json.Marshal(map[string]any{"functions": rows})
	return b, nil
}

// WorkerSummary is a row of engine::workers::list.
type WorkerSummary struct {
	Name              string  `json:"name"`
	Description       string  `json:"description"`
	Version           string  `json:"version"`
	ID                string  `json:"id"`
	Runtime           string  `json:"runtime"`
	OS                string  `json:"os"`
	Status            string  `json:"status"`
	FunctionCount     int     `json:"function_count"`
	ConnectedAtMS     int64   `json:"connected_at_ms"`
	ActiveInvocations int     `json:"active_invocations"`
	Isolation         *string `json:"isolation"`
	IPAddress         string  `json:"ip_address"`
	PID               int64   `json:"pid"`
	Namespace         string  `json:"namespace,omitempty"`
}

func (e *Engine) workersList(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	e.mu.Lock()
	var rows []WorkerSummary
	for _, c := range e.conns {
		if c.meta.PID == nil {
			continue // engine::workers::list omits sockets that never reported a pid
		}
		n := 0
		for _, f := range e.functions {
			if f.owner == c {
				n++
			}
		}
		ip, _, _ := strings.Cut(c.remote, ":")
		rows = append(rows, WorkerSummary{Name: c.meta.Name, Description: c.meta.Description, Version: c.meta.Version, ID: c.id,
			Runtime: c.meta.Runtime, OS: c.meta.OS, Status: "connected", FunctionCount: n, ConnectedAtMS: c.connectedAt.UnixMilli(),
			ActiveInvocations: len(c.serving), IPAddress: ip, PID: *c.meta.PID, Namespace: c.meta.Namespace})
	}
	e.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Name != rows[j].Name {
			return rows[i].Name < rows[j].Name
		}
		return rows[i].ID < rows[j].ID
	})
	if rows == nil {
		rows = []WorkerSummary{}
	}
	b, _ := json.Marshal(map[string]any{"workers": rows})
	return b, nil
}

// TriggerTypeSummary is one row of engine::triggers::list.
type TriggerTypeSummary struct {
	ID          string `json:"id"`
	WorkerName  string `json:"worker_name"`
	Description string `json:"description"`
}

// triggersList serves engine::triggers::list: trigger *types*, sorted by id,
// filtered by prefix and search. Built-in types have no worker name.
func (e *Engine) triggersList(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody) {
	in, eb := decodeListFilter("engine::triggers::list", data)
	if eb != nil {
		return nil, eb
	}
	e.mu.Lock()
	rows := []TriggerTypeSummary{}
	for id, tt := range e.triggerTypes {
		if in.Prefix != "" && !strings.HasPrefix(id, in.Prefix) {
			continue
		}
		if in.Search != "" && !strings.Contains(id, in.Search) {
			continue
		}
		name := ""
		if tt.provider != nil {
			name = tt.provider.meta.Name
		}
		rows = append(rows, TriggerTypeSummary{ID: id, WorkerName: name, Description: tt.description})
	}
	e.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool { return rows[i].ID < rows[j].ID })
	b, _ := json.Marshal(map[string]any{"triggers": rows})
	return b, nil
}

// listFilter is the input the engine's list functions share.
type listFilter struct {
	Prefix          string `json:"prefix"`
	Search          string `json:"search"`
	IncludeInternal bool   `json:"include_internal"`
}

func decodeListFilter(fn string, data json.RawMessage) (listFilter, *iii.ErrorBody) {
	var in listFilter
	if len(data) > 0 && string(data) != "null" {
		if err := json.Unmarshal(data, &in); err != nil {
			return in, deserializationError(fn, err)
		}
	}
	return in, nil
}
