package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/capsfilter"
)

// Ids that belong to others are never published by code-runner: on an
// engine where a duplicate id is last-writer-wins, publishing one would take
// another worker's function over for every caller of the engine. The rules
// apply to register_function (bus callers and guests alike) and to guest
// iii.registerFunction and registerTriggerType ids. The target of a guest
// registerTrigger binding is not published (the engine invokes it when the
// trigger fires, with no more authority than the guest's own iii.trigger),
// so it keeps only CheckOwnID's rules: a target another worker serves is
// bound (contract §22a.6, amended 2026-12-02).

// reservedPrefixes belong to the engine and the configuration worker.
var reservedPrefixes = []struct{ prefix, owner string }{
	{"engine::", "the engine"},
	{"configuration::", "the configuration worker"},
}

// CheckOwnID applies the rules that need no engine: ids under engine:: and
// configuration::, and ids on the bridge deny-list, are refused with
// code-runner::invalid_request naming the rule. what is "function id",
// "trigger type id" or "trigger target".
func CheckOwnID(what, id string) *Error {
	for _, r := range reservedPrefixes {
		if strings.HasPrefix(id, r.prefix) {
			return Errorf(CodeInvalidRequest, "%s %q is under %q, which belongs to %s; code-runner publishes only under namespaces of your own", what, id, r.prefix, r.owner)
		}
	}
	if capsfilter.CheckFunction(id) != nil {
		return Errorf(CodeInvalidRequest, "%s %q is an operator-only id (the bridge deny-list); code-runner never publishes it or binds to it", what, id)
	}
	return nil
}

// Owners tells which worker on the engine serves a function id or provides a
// trigger type. The worker in serve mode asks the engine; local mode has no
// engine and no Owners.
type Owners interface {
	// FunctionWorker returns the name of the worker serving id, "" if none
	// other than this worker.
	FunctionWorker(ctx context.Context, id string) (string, error)
	// TriggerTypeWorker returns the name of the worker providing the
	// trigger type id, "" if none other than this worker.
	TriggerTypeWorker(ctx context.Context, id string) (string, error)
}

// CheckNotServedElsewhere refuses id when another live worker already serves
// it (or provides it, for a trigger type). A failure to ask is a refusal too
// (code-runner::engine): publishing blind is what this check exists to
// prevent. A nil owners (no engine) allows everything.
func CheckNotServedElsewhere(ctx context.Context, owners Owners, what, id string) *Error {
	if owners == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ownerQueryTimeout)
	defer cancel()
	var worker string
	var err error
	if what == WhatTriggerType {
		worker, err = owners.TriggerTypeWorker(ctx, id)
	} else {
		worker, err = owners.FunctionWorker(ctx, id)
	}
	if err != nil {
		return &Error{Code: CodeEngine, Text: fmt.Sprintf("registration failed: could not ask the engine whether %s %q belongs to another worker; retry", what, id), Cause: err}
	}
	if worker != "" {
		return Errorf(CodeInvalidRequest, "%s %q is already served by another worker (%q); code-runner never takes over another worker's id — pick one in a namespace of your own", what, id, worker)
	}
	return nil
}

// What names the kind of id in the messages of CheckOwnID and
// CheckNotServedElsewhere.
const (
	WhatFunction    = "function id"
	WhatTriggerType = "trigger type id"
	WhatTarget      = "trigger target"
)

const ownerQueryTimeout = 5 * time.Second

// EngineOwners implements Owners by asking the engine
// (engine::functions::list, engine::triggers::list, internal ids included).
// Self is this worker's name: what it serves itself is not another's.
type EngineOwners struct {
	Transport Transport
	Self      string
	// Namespace is this worker's engine namespace ("" = "default"). A 0.23
	// engine keys functions by (namespace, id): a row of another namespace
	// is no clash and no owner (iii-wire §10); a 0.22 engine lists none.
	Namespace string
}

// FunctionRow is one row of engine::functions::list.
type FunctionRow struct {
	FunctionID string `json:"function_id"`
	WorkerName string `json:"worker_name"`
	Namespace  string `json:"namespace"` // 0.23 only
}

// FunctionRows reads an engine::functions::list answer, keeping the rows
// of engine namespace namespace ("" = "default"): a 0.23 engine lists
// every namespace, a 0.22 engine's rows have none and are everyone's.
func FunctionRows(res json.RawMessage, namespace string) ([]FunctionRow, error) {
	var out struct {
		Functions []FunctionRow `json:"functions"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		return nil, err
	}
	rows := out.Functions[:0]
	for _, f := range out.Functions {
		if SameNamespace(f.Namespace, namespace) {
			rows = append(rows, f)
		}
	}
	return rows, nil
}

// functions lists the functions in this worker's namespace whose ids start
// with prefix, internal ones included.
func (o *EngineOwners) functions(ctx context.Context, prefix string) ([]FunctionRow, error) {
	res, err := o.invokeList(ctx, "engine::functions::list", prefix)
	if err != nil {
		return nil, err
	}
	rows, err := FunctionRows(res, o.Namespace)
	if err != nil {
		return nil, fmt.Errorf("engine::functions::list answered %w", errors.Join(errors.New("an unreadable list"), err))
	}
	return rows, nil
}

// SameNamespace compares engine namespaces, "" being "default" (a row of a
// 0.22 engine has none: every row is in the one registry): row is a
// listing row's namespace, own the worker's.
func SameNamespace(row, own string) bool {
	if row == "" {
		return true
	}
	if own == "" {
		own = "default"
	}
	return row == own
}

// FunctionWorker implements Owners.
func (o *EngineOwners) FunctionWorker(ctx context.Context, id string) (string, error) {
	rows, err := o.functions(ctx, id)
	if err != nil {
		return "", err
	}
	for _, f := range rows {
		if f.FunctionID == id && f.WorkerName != o.Self {
			return f.WorkerName, nil
		}
	}
	return "", nil
}

// TriggerTypeWorker implements Owners.
func (o *EngineOwners) TriggerTypeWorker(ctx context.Context, id string) (string, error) {
	var out struct {
		Triggers []struct {
			ID         string `json:"id"`
			WorkerName string `json:"worker_name"`
		} `json:"triggers"`
	}
	if err := o.list(ctx, "engine::triggers::list", id, &out); err != nil {
		return "", err
	}
	for _, tt := range out.Triggers {
		if tt.ID == id && tt.WorkerName != o.Self {
			if tt.WorkerName == "" {
				return "the engine", nil // a built-in trigger type
			}
			return tt.WorkerName, nil
		}
	}
	return "", nil
}

func (o *EngineOwners) invokeList(ctx context.Context, fn, prefix string) (json.RawMessage, error) {
	data, _ := json.Marshal(map[string]any{"prefix": prefix, "include_internal": true})
	res, err := o.Transport.Invoke(ctx, Invocation{FunctionID: fn, Data: data, Timeout: ownerQueryTimeout})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return res, nil
}

func (o *EngineOwners) list(ctx context.Context, fn, prefix string, into any) error {
	res, err := o.invokeList(ctx, fn, prefix)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(res, into); err != nil {
		return fmt.Errorf("%s answered %w", fn, errors.Join(errors.New("an unreadable list"), err))
	}
	return nil
}

// ListedIDs returns the ids of the functions in this worker's engine
// namespace that start with prefix, internal ones included, whoever
// serves them.
func (o *EngineOwners) ListedIDs(ctx context.Context, prefix string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ownerQueryTimeout)
	defer cancel()
	rows, err := o.functions(ctx, prefix)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(rows))
	for _, f := range rows {
		if strings.HasPrefix(f.FunctionID, prefix) {
			ids = append(ids, f.FunctionID)
		}
	}
	return ids, nil
}
