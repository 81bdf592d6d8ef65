package node

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// parkingTransport holds every guest call until its context ends, then
// reports that it ended.
type parkingTransport struct{ ended chan string }

func (p *parkingTransport) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	<-ctx.Done()
	p.ended <- inv.FunctionID
	return nil, ctx.Err()
}

// TestNoGuestCallOutlivesItsRuntime: a guest call still in flight when its
// run is killed (here for memory, long before any timeout) or when its
// one-shot runtime is destroyed (the host goes back to the pool for the
// next tenant) ends then — not at its own timeout, 30 s away.
func TestNoGuestCallOutlivesItsRuntime(t *testing.T) {
	tr := &parkingTransport{ended: make(chan string, 4)}
	r := newRig(t, func(c *configsvc.Config) { c.DefaultTimeoutMS, c.MaxTimeoutMS, c.HeapMB = 30000, 30000, 32 }, tr, nil)
	waitEnded := func(what, id string) {
		t.Helper()
		select {
		case got := <-tr.ended:
			if got != id {
				t.Fatalf("%s: the call to %s ended, want %s", what, got, id)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: the guest call to %s was still in flight 15 s after its runtime ended (its own timeout is 30 s)", what, id)
		}
	}

	_, err := r.run(t, map[string]any{"lang": "node", "code": `iii.trigger({ function_id: 'slow::memory', payload: {} }).catch(() => {});
const hoard = []; for (;;) hoard.push(new Array(1e6).fill(7))`})
	if err == nil || err.Code != core.CodeResourceExhausted {
		t.Fatalf("the hoarding run: %v, want the memory kill", err)
	}
	waitEnded("memory kill", "slow::memory")

	res, err := r.run(t, map[string]any{"lang": "node", "code": `iii.trigger({ function_id: 'slow::oneshot', payload: {} }).catch(() => {}); return 1`})
	if err != nil || string(res.Result) != "1" {
		t.Fatalf("the one-shot: %+v %v", res, err)
	}
	waitEnded("one-shot destroyed", "slow::oneshot")
}
