package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/guidance"
)

// committer records what each Commit saw, and what the router served at
// that moment.
type committer struct {
	mu     sync.Mutex
	router *core.Router
	seen   []int64 // max_result_bytes of the snapshot handed to Commit
	live   []int64 // ... and of the router's live one at that moment
}

func (c *committer) Commit(s *configsvc.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, s.Config.MaxResultBytes)
	c.live = append(c.live, c.router.Live().Config.MaxResultBytes)
}

func withCap(n int64) configsvc.Config {
	c := configsvc.Defaults()
	c.MaxResultBytes = n
	return c
}

func newHook(t *testing.T, read func(context.Context) (configsvc.Config, error)) (*ConfigChanged, *committer, *bytes.Buffer, *[]bool) {
	t.Helper()
	r := core.NewRouter(withCap(1000), "test", nil, nil)
	r.Handle("x::probe", core.Route{Terminal: func(_ context.Context, c *core.Call) (any, error) { return c.Config.MaxResultBytes, nil }})
	logs := &bytes.Buffer{}
	com := &committer{router: r}
	var applied []bool
	h := &ConfigChanged{Router: r, Components: []core.Committer{com}, Read: read, Source: "configuration worker",
		IDs: []string{core.FnOnConfigChange}, Applied: func(ok bool) { applied = append(applied, ok) },
		Log: slog.New(slog.NewTextHandler(logs, nil))}
	h.Hook().Install(r)
	return h, com, logs, &applied
}

func probe(t *testing.T, r *core.Router) int64 {
	t.Helper()
	res, err := r.Invoke(context.Background(), "x::probe", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.(int64)
}

// TestAChangeIsSwappedThenCommittedAndSaidOnce: a good value is live on
// every route when the components hear of it, they hear once, and one
// INFO line names the changed key.
func TestAChangeIsSwappedThenCommittedAndSaidOnce(t *testing.T) {
	h, com, logs, applied := newHook(t, nil)
	if err := h.Apply(context.Background(), withCap(2000), "config file"); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, h.Router); got != 2000 {
		t.Fatalf("a route serves max_result_bytes %d after the change, want 2000", got)
	}
	if len(com.seen) != 1 || com.seen[0] != 2000 || com.live[0] != 2000 {
		t.Fatalf("the component was committed %v while the router served %v; want [2000] after the swap", com.seen, com.live)
	}
	if n := strings.Count(logs.String(), "configuration applied (config file): max_result_bytes 1000 → 2000"); n != 1 {
		t.Fatalf("the change was said %d times:\n%s", n, logs.String())
	}
	if len(*applied) != 1 || !(*applied)[0] {
		t.Fatalf("applied %v", *applied)
	}
}

// TestARefusedValueChangesNothing: a value the read refuses (invalid, or
// the configuration worker unreachable) swaps nothing and commits nothing;
// the bus call still answers {"ok": true} and the refusal is logged.
func TestARefusedValueChangesNothing(t *testing.T) {
	refusal := errors.New("invalid code-runner config: max_runtimes: must be >= 1")
	h, com, logs, applied := newHook(t, func(context.Context) (configsvc.Config, error) { return configsvc.Config{}, refusal })
	before := h.Router.Live()
	res, err := h.Router.Invoke(context.Background(), core.FnOnConfigChange, json.RawMessage(`{"anything":"ignored"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); string(b) != `{"ok":true}` {
		t.Fatalf("the hook answered %s", b)
	}
	if h.Router.Live() != before || probe(t, h.Router) != 1000 {
		t.Fatal("a refused value changed the live configuration")
	}
	if len(com.seen) != 0 {
		t.Fatalf("a refused value was committed: %v", com.seen)
	}
	if !strings.Contains(logs.String(), "configuration reload failed; the previous configuration stays live") || !strings.Contains(logs.String(), "max_runtimes: must be") {
		t.Fatalf("the refusal was not said with its reason:\n%s", logs.String())
	}
	if len(*applied) != 1 || (*applied)[0] {
		t.Fatalf("applied %v, want one refusal", *applied)
	}
}

// TestTheBusCallReadsTheValueItself: the payload of a bus call is never
// the configuration (a guest could send one); the hook reads the value.
func TestTheBusCallReadsTheValueItself(t *testing.T) {
	reads := 0
	h, _, _, _ := newHook(t, func(context.Context) (configsvc.Config, error) { reads++; return withCap(3000), nil })
	payload := json.RawMessage(`{"max_result_bytes": 1}`)
	if _, err := h.Router.Invoke(context.Background(), core.FnOnConfigChange, payload, nil); err != nil {
		t.Fatal(err)
	}
	if reads != 1 || probe(t, h.Router) != 3000 {
		t.Fatalf("reads=%d, route serves %d; want the read value 3000", reads, probe(t, h.Router))
	}
}

// TestChangesAreOneAtATime: two changes at once never interleave their
// stages (a slow older read cannot overwrite a newer value it started
// before), and Seq grows by one per change.
func TestChangesAreOneAtATime(t *testing.T) {
	var mu sync.Mutex
	inRead := 0
	maxInRead := 0
	h, com, _, _ := newHook(t, func(context.Context) (configsvc.Config, error) {
		mu.Lock()
		inRead++
		if inRead > maxInRead {
			maxInRead = inRead
		}
		mu.Unlock()
		defer func() { mu.Lock(); inRead--; mu.Unlock() }()
		return withCap(4000), nil
	})
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); _ = h.Refresh(context.Background()) }()
	}
	wg.Wait()
	if maxInRead != 1 {
		t.Fatalf("%d reads ran at once", maxInRead)
	}
	if got := h.Router.Live().Seq; got != 17 {
		t.Fatalf("Seq %d after 16 changes from 1", got)
	}
	if len(com.seen) != 16 {
		t.Fatalf("%d commits for 16 changes", len(com.seen))
	}
}

// TestPreGenerateFollowsInjectGuidance: with inject_guidance on the hook
// appends the guidance, once however often the prompt comes back; a
// change to off swaps the stage out and the hook answers "no change".
func TestPreGenerateFollowsInjectGuidance(t *testing.T) {
	r := core.NewRouter(configsvc.Defaults(), "defaults", nil, nil)
	PreGenerate().Install(r)
	ask := func(prompt string) guidance.Response {
		t.Helper()
		payload, _ := json.Marshal(map[string]any{"generate": map[string]any{"system_prompt": prompt}})
		res, err := r.Invoke(context.Background(), core.FnInjectGuidance, payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.(guidance.Response)
	}
	first := ask("You are helpful.")
	if first.Mutations.SystemPrompt == nil || *first.Mutations.SystemPrompt != "You are helpful.\n\n"+guidance.Text {
		t.Fatalf("with inject_guidance on: %+v", first)
	}
	if again := ask(*first.Mutations.SystemPrompt); again.Mutations.SystemPrompt != nil {
		t.Fatal("the guidance was appended to a prompt that already ends with it")
	}
	if empty := ask(""); empty.Mutations.SystemPrompt != nil {
		t.Fatal("an empty prompt was given the guidance")
	}
	off := configsvc.Defaults()
	off.InjectGuidance = false
	r.Swap(r.Provision(off, "test"))
	if res := ask("You are helpful."); res.Mutations.SystemPrompt != nil {
		t.Fatalf("with inject_guidance off the hook changed the prompt: %q", *res.Mutations.SystemPrompt)
	}
}
