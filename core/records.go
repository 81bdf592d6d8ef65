package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"
)

// Published functions outlive the worker that published them (contract
// §26): every register_function that succeeds has a record in the
// engine's state store; teardown and the idle reap of a node namespace
// delete a namespace's records; a worker that starts, or that sees the
// group lose a worker, restores every namespace with records that no live
// worker serves (Restore).

// RecordScope is the state scope of the records. Guests never reach it
// (capsfilter.ReservedScopePrefix).
const RecordScope = "code-runner::registrations"

// recordVersion is the version of the record's shape.
const recordVersion = 1

// Record is one published function, with all it takes to publish it again.
// The key is its function id (one record per (namespace, id)); the value
// names its own key, since state::list answers values only.
type Record struct {
	Version        int             `json:"v"`
	Key            string          `json:"key"`
	Namespace      string          `json:"namespace"`
	FunctionID     string          `json:"function_id"`
	Lang           Lang            `json:"lang"`
	Source         string          `json:"source"`
	Description    *string         `json:"description,omitempty"`
	RequestFormat  json.RawMessage `json:"request_format,omitempty"`
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	// Position is its place in the namespace's registration order (§13.8):
	// replay goes by it.
	Position int64     `json:"position"`
	Worker   string    `json:"worker"`
	At       time.Time `json:"registered_at"`
}

// RecordStore keeps the records: the engine's state store (worker), or
// nothing (nil: memory-only, as in local mode).
type RecordStore interface {
	// Put writes rec under its key, replacing what was there.
	Put(ctx context.Context, rec Record) error
	// Delete removes the record of key (none there is no error).
	Delete(ctx context.Context, key string) error
	// List answers every record's value as stored, unparsed: a value that
	// does not parse is skipped by the caller, never deleted.
	List(ctx context.Context) ([]json.RawMessage, error)
}

// ErrNoStore is a RecordStore's answer when the engine has no state store
// (its state module is off): registrations then live in memory only.
var ErrNoStore = errors.New("the engine has no state store")

// ParseRecord reads a stored value as a record, or says why it is not one.
func ParseRecord(raw json.RawMessage) (Record, error) {
	var r Record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Record{}, fmt.Errorf("not a registration record: %w", err)
	}
	switch {
	case r.Version != recordVersion:
		return r, fmt.Errorf("record version %d is not %d", r.Version, recordVersion)
	case r.FunctionID == "" || r.Key != r.FunctionID:
		return r, errors.New("the record names no function id, or a key that is not it")
	case r.Namespace == "" || len(r.FunctionID) <= len(r.Namespace) || r.FunctionID[:len(r.Namespace)] != r.Namespace:
		return r, errors.New("the record's function id is not in its namespace")
	case r.Lang == "":
		return r, errors.New("the record names no language")
	}
	return r, nil
}

// restoreKey marks a context as the replay of a record: Register then
// keeps the record as it is (no write), takes its position, and never
// forwards the registration to another worker.
type restoreKey struct{}

// WithRestore marks ctx as the replay of rec.
func WithRestore(ctx context.Context, rec Record) context.Context {
	return context.WithValue(ctx, restoreKey{}, &rec)
}

func restoring(ctx context.Context) *Record {
	r, _ := ctx.Value(restoreKey{}).(*Record)
	return r
}

// ErrServedElsewhere answers a replay whose namespace another worker
// serves (or won the claim for): nothing to restore here.
var ErrServedElsewhere = errors.New("another worker serves this namespace")

// nsRecords is what a worker knows of one namespace's records.
type nsRecords struct {
	seq  int64             // the last position given out
	byID map[string]Record // the records this worker wrote or replayed
}

// recordsOf answers the namespace's records, made on first use (n.mu held).
func (n *Namespaces) recordsOf(ns string) *nsRecords {
	if n.recs == nil {
		n.recs = map[string]*nsRecords{}
	}
	r := n.recs[ns]
	if r == nil {
		r = &nsRecords{byID: map[string]Record{}}
		n.recs[ns] = r
	}
	return r
}

// keepRecord writes the record of a registration about to be defined and
// answers a function that undoes it (the record that was there before put
// back, or none) should the definition fail. With no store (ErrNoStore)
// the registration goes on in memory only.
func (n *Namespaces) keepRecord(ctx context.Context, req *RegisterRequest, ns string) (commit func(), undo func(), err error) {
	noop := func() {}
	if rec := restoring(ctx); rec != nil {
		return func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			r := n.recordsOf(ns)
			r.byID[rec.FunctionID] = *rec
			r.seq = max(r.seq, rec.Position)
		}, noop, nil
	}
	if n.Records == nil {
		return noop, noop, nil
	}
	n.mu.Lock()
	r := n.recordsOf(ns)
	prev, hadPrev := r.byID[req.FunctionID]
	r.seq++
	rec := Record{Version: recordVersion, Key: req.FunctionID, Namespace: ns, FunctionID: req.FunctionID, Lang: req.Lang,
		Source: req.Source, Description: req.Description, RequestFormat: req.RequestFormat, ResponseFormat: req.ResponseFormat,
		Position: r.seq, Worker: n.WorkerName, At: n.now().UTC()}
	n.mu.Unlock()
	if err := n.Records.Put(ctx, rec); err != nil {
		if errors.Is(err, ErrNoStore) {
			return noop, noop, nil
		}
		return nil, nil, Errorf(CodeEngine, "the registration of %q was not kept: the engine's state store refused its record (%v), and a function it cannot keep is not published; retry, or ask the operator about the state store", req.FunctionID, err)
	}
	commit = func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.recordsOf(ns).byID[req.FunctionID] = rec
	}
	undo = func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		defer cancel()
		var err error
		if hadPrev {
			err = n.Records.Put(uctx, prev)
		} else {
			err = n.Records.Delete(uctx, rec.Key)
		}
		if err != nil && !errors.Is(err, ErrNoStore) {
			n.log().Warn("a failed registration's record could not be undone; it will be replayed, and fail again, after a restart",
				"namespace", ns, "function_id", rec.FunctionID, "err", err)
		}
	}
	return commit, undo, nil
}

// recordTimeout bounds one state store call made on the side (an undo,
// a namespace's deletion).
const recordTimeout = 5 * time.Second

// dropRecords deletes every record of ns in lang ("" for every language)
// — those this worker knows and those the store lists for it — at the
// end of life of the namespace (teardown) or of its runtime of lang (idle
// reap). It answers whether there were any.
func (n *Namespaces) dropRecords(ctx context.Context, ns string, lang Lang) bool {
	n.mu.Lock()
	keys := map[string]bool{}
	if r := n.recs[ns]; r != nil {
		for id, rec := range r.byID {
			if lang == "" || rec.Lang == lang {
				keys[id] = true
				delete(r.byID, id)
			}
		}
	}
	n.mu.Unlock()
	if n.Records == nil {
		return len(keys) > 0
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	values, err := n.Records.List(ctx)
	if err != nil && !errors.Is(err, ErrNoStore) {
		n.log().Warn("the namespace's records could not be listed; those this worker did not write may come back after a restart", "namespace", ns, "err", err)
	}
	for _, v := range values {
		if rec, err := ParseRecord(v); err == nil && rec.Namespace == ns && (lang == "" || rec.Lang == lang) {
			keys[rec.Key] = true
		}
	}
	for key := range keys {
		if err := n.Records.Delete(ctx, key); err != nil && !errors.Is(err, ErrNoStore) {
			n.log().Warn("a record of a namespace that ended could not be deleted; it may come back after a restart", "namespace", ns, "function_id", key, "err", err)
		}
	}
	return len(keys) > 0
}

// RecordedNamespaces reads the store and answers, per namespace, its
// records in registration order; what does not parse is logged at WARN
// (never with its source) and left where it is.
func (n *Namespaces) RecordedNamespaces(ctx context.Context) (map[string][]Record, error) {
	if n.Records == nil {
		return nil, nil
	}
	values, err := n.Records.List(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string][]Record{}
	for i, v := range values {
		rec, err := ParseRecord(v)
		if err != nil {
			n.log().Warn("a registration record was skipped", "namespace", rec.Namespace, "function_id", rec.FunctionID, "index", i, "reason", err.Error())
			continue
		}
		out[rec.Namespace] = append(out[rec.Namespace], rec)
	}
	for ns := range out {
		sort.SliceStable(out[ns], func(i, j int) bool { return out[ns][i].Position < out[ns][j].Position })
	}
	return out, nil
}

// Serves reports whether this worker serves namespace ns now.
func (n *Namespaces) Serves(ns string) bool { return n.servesNamespace(ns) }

func (n *Namespaces) log() *slog.Logger {
	if n.Log != nil {
		return n.Log
	}
	return slog.Default()
}

// RestoreInvoke is how Restore registers a record again: the router's
// code-runner::register_function with ctx (which carries WithRestore).
type RestoreInvoke func(ctx context.Context, payload json.RawMessage) error

// Restore publishes again every recorded namespace that no live worker
// serves (contract §26.2): its records, in registration order, each
// registered through invoke with the record kept as it is. A namespace
// another worker serves, or whose claim another worker wins, is left to
// it. A record of a language this worker lacks, or whose replay fails, is
// logged at WARN (namespace, id, reason — never the source) and skipped;
// the namespace's other ids come back. It answers how many came back.
func (n *Namespaces) Restore(ctx context.Context, invoke RestoreInvoke) (int, error) {
	recorded, err := n.RecordedNamespaces(ctx)
	if err != nil || len(recorded) == 0 {
		return 0, err
	}
	names := make([]string, 0, len(recorded))
	for ns := range recorded {
		names = append(names, ns)
	}
	sort.Strings(names)
	restored := 0
	for _, ns := range names {
		if ctx.Err() != nil {
			return restored, ctx.Err()
		}
		if n.servesNamespace(ns) {
			continue
		}
		for _, rec := range recorded[ns] {
			if _, ok := n.Engines[rec.Lang]; !ok {
				n.log().Warn("a registration record was skipped", "namespace", ns, "function_id", rec.FunctionID,
					"reason", fmt.Sprintf("this worker does not run %q", rec.Lang))
				continue
			}
			req := map[string]any{"function_id": rec.FunctionID, "lang": rec.Lang, "source": rec.Source}
			if rec.Description != nil {
				req["description"] = *rec.Description
			}
			if len(rec.RequestFormat) > 0 {
				req["request_format"] = rec.RequestFormat
			}
			if len(rec.ResponseFormat) > 0 {
				req["response_format"] = rec.ResponseFormat
			}
			payload, _ := json.Marshal(req)
			err := invoke(WithRestore(ctx, rec), payload)
			if errors.Is(err, ErrServedElsewhere) {
				break
			}
			if err != nil {
				n.log().Warn("a registration record was skipped", "namespace", ns, "function_id", rec.FunctionID, "reason", AsError(err, FnRegisterFunction).Error())
				continue
			}
			restored++
		}
	}
	return restored, nil
}
