package core

import (
	"context"
	"sort"

	"github.com/code-runner-go/code-runner/configsvc"
)

// IDs returns the routed function ids, sorted (only the tests use it).
func (r *Router) IDs() []string {
	t := r.table.Load()
	ids := make([]string, 0, len(t.routes))
	for id := range t.routes {
		ids = append(ids, id)
	}
	r.dynamic.Range(func(k, _ any) bool {
		if _, static := t.routes[k.(string)]; !static {
			ids = append(ids, k.(string))
		}
		return true
	})
	sort.Strings(ids)
	return ids
}

// reconfigure makes snap's configuration live on r, as the config_changed
// hook does (provision, then swap).
func reconfigure(r *Router, snap *configsvc.Snapshot) {
	r.Swap(r.Provision(snap.Config, snap.Source))
}

// Tombstone records id as expired (only the tests use it).
func (r *Registry) Tombstone(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addTombLocked(id)
}

// TombstoneCount returns how many tombstones are held, after pruning (only
// the tests use it).
func (r *Registry) TombstoneCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pruneTombsLocked()
	return len(r.tombs)
}

// Serve runs call through r's chain compiled for snap, with call.Config set
// to snap's configuration (only the tests use it; the Router keeps compiled
// chains).
func (r Route) Serve(ctx context.Context, snap *configsvc.Snapshot, call *Call) (any, error) {
	call.Config = &snap.Config
	return r.compile(snap)(ctx, call)
}
