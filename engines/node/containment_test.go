package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/procfs"
)

// echoTransport answers every guest call with its own payload, a little
// later (so refusals, which never reach it, are answered first).
type echoTransport struct{}

func (echoTransport) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	time.Sleep(100 * time.Millisecond)
	return inv.Data, nil
}

func keptHost(t *testing.T, r *rig, id string) *runtime {
	t.Helper()
	k, state := r.reg.Lookup(id)
	if state != core.StateLive {
		t.Fatalf("runtime %s is not live", id)
	}
	return k.Runtime.(*runtime)
}

// waitExpired waits (bounded) until the kept runtime was destroyed and its id
// answers code-runner::expired.
func waitExpired(t *testing.T, r *rig, id string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		if _, state := r.reg.Lookup(id); state == core.StateTombstoned {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime not destroyed within %v", bound)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := r.run(t, map[string]any{"runtime_id": id, "code": "return 1"}); err == nil || err.Code != core.CodeExpired {
		t.Fatalf("after the detached overrun: %v", err)
	}
}

// Guest code that runs after its call has ended (a callback settling later)
// runs under a deadline — the last call's budget — and the memory caps; past
// either, the runtime is destroyed and its id expires.
func TestDetachedGuestCodeIsBounded(t *testing.T) {
	r := newRig(t, nil, echoTransport{}, nil)
	t.Run("a callback that spins forever", func(t *testing.T) {
		k, err := r.run(t, map[string]any{"lang": "node", "keep": true, "timeout_ms": 1000,
			"code": `iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => { for (;;) {} }); return 1`})
		if err != nil || string(k.Result) != "1" {
			t.Fatalf("%v %+v", err, k)
		}
		waitExpired(t, r, k.RuntimeID, 20*time.Second)
	})
	t.Run("a callback that holds a gigabyte off-heap", func(t *testing.T) {
		k, err := r.run(t, map[string]any{"lang": "node", "keep": true, "timeout_ms": 20000,
			"code": `iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => { globalThis.keep = []; for (let i = 0; i < 16; i++) { const b = new Uint8Array(64 << 20); b.fill(1); keep.push(b) } }); return 1`})
		if err != nil || string(k.Result) != "1" {
			t.Fatalf("%v %+v", err, k)
		}
		waitExpired(t, r, k.RuntimeID, 20*time.Second)
	})
}

// A host whose guest spins while bridge replies pile up in its input pipe
// cannot hold the next call past that call's own deadline.
func TestFullPipeCannotWedgeTheNextCall(t *testing.T) {
	r := newRig(t, nil, echoTransport{}, nil)
	k, err := r.run(t, map[string]any{"lang": "node", "keep": true, "timeout_ms": 20000, "code": `
		const big = 'x'.repeat(512 * 1024);
		for (let i = 0; i < 31; i++) iii.trigger({ function_id: 'echo::x', payload: big }).catch(() => {});
		iii.trigger({ function_id: 'state::claim-namespace' }).catch(() => { for (;;) {} });
		return 1`})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the replies fill the pipe while the callback spins
	done := make(chan *core.Error, 1)
	go func() {
		_, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 2", "timeout_ms": 500})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a call into a spinning runtime succeeded")
		}
	case <-time.After(10 * time.Second): // far past the 500 ms budget, far before the 20 s spin ends
		t.Fatal("the call was still pending 10 s into a 500 ms budget")
	}
}

// Results and error texts bigger than a host frame are capped in the host,
// and a result that fits the heap cap comes back (capped as usual), however
// big the host's own copies of it are.
func TestBigResultsAreCappedNotKilled(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	// '\u0001' is six bytes of JSON: 6e6 of them make a 36 MB value, more
	// than a host frame may carry.
	res, err := r.run(t, map[string]any{"lang": "node", "memory_mb": 1024, "timeout_ms": 60000, "code": `return '\u0001'.repeat(6e6)`})
	if err != nil || !strings.Contains(string(res.Result), "<omitted: result was ~35156 KB (a 6000000-char string)") {
		t.Fatalf("%v %+v", err, res)
	}
	res, err = r.run(t, map[string]any{"lang": "node", "memory_mb": 1024, "timeout_ms": 60000, "code": `throw new Error('\u0001'.repeat(6e6))`})
	if err != nil || res.ExitCode != 1 || !strings.Contains(res.Stderr, "truncated") || len(res.Stderr) > 16384 {
		t.Fatalf("%v %.300v", err, res)
	}
	// A 30 MB and a 20 MB string under the default 128 MiB heap: the host's
	// own copies of them are not the guest's memory.
	for _, n := range []string{"30e6", "20e6"} {
		res, err = r.run(t, map[string]any{"lang": "node", "timeout_ms": 60000, "code": "return 'x'.repeat(" + n + ")"})
		if err != nil || !strings.Contains(string(res.Result), "-char string)") {
			t.Fatalf("%s: %v %+v", n, err, res)
		}
	}
}

// Native calls release what they receive: a kept runtime making hundreds of
// thousands of console.log calls per call keeps a flat resident set.
func TestNativeCallsDoNotLeak(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	k, err := r.run(t, map[string]any{"lang": "node", "keep": true, "code": "return 1"})
	if err != nil {
		t.Fatal(err)
	}
	spam := map[string]any{"runtime_id": k.RuntimeID, "timeout_ms": 60000, "code": `for (let i = 0; i < 250000; i++) console.log(i); return 1`}
	var rss []int64
	for i := 0; i < 6; i++ {
		if _, err := r.run(t, spam); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		rss = append(rss, procfs.RSSKB(keptHost(t, r, k.RuntimeID).host().pid))
	}
	if grew := (rss[len(rss)-1] - rss[1]) / 1024; grew > 24 {
		t.Fatalf("host RSS grew by %d MiB over %d calls of 250,000 console.log each: %v KiB", grew, len(rss)-2, rss)
	}
}

// Reading any file the quota allowed to be written succeeds, and bytes come
// back exactly.
func TestFilesReadCostsAboutItsSize(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	// Generous deadlines: the test is about bytes, and under the race
	// detector on a loaded machine a 8 MiB copy takes seconds.
	res, err := r.run(t, map[string]any{"lang": "node", "timeout_ms": 60000, "code": `
		iii.files.write('zeros', new Uint8Array(4 << 20));
		const z = iii.files.read('zeros');
		let nonzero = 0; for (let i = 0; i < z.length; i++) if (z[i] !== 0) nonzero++;
		const all = new Uint8Array(256 * 1024); for (let i = 0; i < all.length; i++) all[i] = i % 256;
		iii.files.write('all', all);
		const back = iii.files.read('all');
		let diff = 0; for (let i = 0; i < all.length; i++) if (back[i] !== all[i]) diff++;
		return [z.length, nonzero, back.length, diff]`})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Result) != "[4194304,0,262144,0]" {
		t.Fatalf("%s", res.Result)
	}
	res, err = r.run(t, map[string]any{"lang": "node", "timeout_ms": 60000, "code": `iii.files.write('full', new Uint8Array(8 << 20)); return iii.files.read('full').length`})
	if err != nil {
		t.Fatalf("a file of the whole quota: %v", err)
	}
	if string(res.Result) != "8388608" {
		t.Fatalf("a file of the whole quota: %v %s", err, res.Result)
	}
}

// Worker error text comes from the worker: a guest that edits the message
// of a quota refusal and rethrows it does not put words in the worker's mouth.
func TestQuotaErrorTextCannotBeForged(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.ScratchMB = 1 }, nil, nil)
	_, err := r.run(t, node(`try { iii.files.write("big.bin", "z".repeat(2 * 1048576)) } catch (e) { e.message = "forged by the guest"; throw e }`))
	if err == nil || err.Code != core.CodeResourceExhausted || strings.Contains(err.Error(), "forged") || !strings.Contains(err.Error(), `writing "big.bin" would exceed this runtime's scratch quota`) {
		t.Fatalf("%v", err)
	}
}
