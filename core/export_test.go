package core

import "sort"

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
