package worker

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Two register_function calls for one new namespace that arrive at two
// workers at once never split it: one worker creates the namespace, the
// other forwards its call there (contract §24.2) — 100 races on a
// last-writer (0.22) and on a refusing (0.23) engine. Each call lands on a
// worker's own id, as a spread or a forward does, so each worker meets the
// race itself. Teardowns withdraw the claims: none is left at the end.
func TestTwoWorkersNeverSplitANewNamespace(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		startServe(t, e, ServeOptions{WorkerName: "cr-b"})
		ctx := ctxT(t)
		ids := []string{"code-runner::register_function@" + Tag("cr-a"), "code-runner::register_function@" + Tag("cr-b")}
		if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(ids[0]) && e.HasFunction(ids[1]) }); err != nil {
			t.Fatal(err)
		}
		list := func(prefix string) map[string]string { return listedFunctions(t, e, prefix) }
		for round := range 100 {
			ns := fmt.Sprintf("race%d", round)
			var wg sync.WaitGroup
			errs := make([]string, 2)
			for i, fn := range ids {
				wg.Add(1)
				go func() {
					defer wg.Done()
					id := fmt.Sprintf("%s::f%d", ns, i)
					res, eb, err := e.Invoke(ctx, fn, map[string]any{"function_id": id, "lang": "node", "source": fmt.Sprintf("function handler() { return %d }", i)}, nil)
					if err != nil || eb != nil || !strings.Contains(string(res), `"registered":true`) {
						errs[i] = fmt.Sprintf("%s via %s: %s %+v %v", id, fn, res, eb, err)
					}
				}()
			}
			wg.Wait()
			if errs[0] != "" || errs[1] != "" {
				t.Fatalf("refusing=%v round %d: %v", refusing, round, errs)
			}
			fns := list(ns + "::")
			if len(fns) != 2 || fns[ns+"::f0"] != fns[ns+"::f1"] {
				t.Fatalf("refusing=%v round %d: the namespace spans workers: %v", refusing, round, fns)
			}
			td, eb, err := e.Invoke(ctx, "code-runner::teardown", map[string]any{"namespace": ns}, nil)
			if err != nil || eb != nil || !strings.Contains(string(td), `"torn_down":true`) {
				t.Fatalf("refusing=%v round %d: teardown: %s %+v %v", refusing, round, td, eb, err)
			}
		}
		if err := e.WaitUntil(ctx, func() bool { return len(list(claimPrefix)) == 0 }); err != nil {
			t.Fatalf("refusing=%v: claims outlived their namespaces: %v", refusing, list(claimPrefix))
		}
	}
}
