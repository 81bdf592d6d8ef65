package python

import (
	"context"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// A kill that lands while the guest is inside a host call — or just as one
// returns — ends the turn as the kill (timeout, or the budget it crossed),
// never as an error the guest could catch and report (issue 48 item 5).
// Each guest below catches everything and then returns a result: any
// answer but the kill means the kill reached the guest as an error, or its
// envelope got through after the deadline.
func TestAKillInsideAHostCallIsTheKill(t *testing.T) {
	r := newRigWith(t, nil, nil)
	for name, body := range map[string]string{
		"write":   "os.write(1, b'x' * (1 << 20))",
		"writev":  "os.writev(1, [b'x' * (1 << 20)] * 8)",
		"pwrite":  "os.pwrite(fd, b'x' * (1 << 20), 0)",
		"read":    "os.pread(fd, 1 << 20, 0)",
		"readdir": "os.listdir('/work')",
		"sleep":   "time.sleep(0.05)",
		// A guest call times out 200 ms before its run does, in time for the
		// guest to handle that (§6.3): those are retried, so the kill lands
		// inside a call or between two.
		"trigger": "try:\n            iii.trigger({'function_id': 'test::never', 'payload': {}})\n        except RuntimeError as t:\n            if 'TIMEOUT' not in str(t):\n                raise",
	} {
		code := "import os, time\nfd = os.open('/work/f', os.O_RDWR | os.O_CREAT)\nos.pwrite(fd, b'y' * (1 << 20), 0)\n" +
			"result = 'no kill'\nwhile True:\n    try:\n        " + body + "\n    except BaseException as e:\n        result = 'caught ' + type(e).__name__ + ': ' + str(e)\n        break\n"
		for _, ms := range []int{150, 400} {
			res, err := r.run(t, map[string]any{"code": code, "timeout_ms": ms})
			if err == nil || err.Code != core.CodeTimeout {
				t.Fatalf("%s at %d ms: %+v %v, want code-runner::timeout", name, ms, res, err)
			}
		}
	}
	if res := r.mustRun(t, "result = 1"); string(res.Result) != "1" {
		t.Fatalf("after the kills: %s", res.Result)
	}
}

// A budget crossed inside a write ends the turn at that write: the guest
// does not get an OSError to catch and go on after.
func TestABudgetCrossingIsNotAnErrorToCatch(t *testing.T) {
	// A budget the loops cannot run out of under -race on a loaded machine
	// (the answer must be the budget error, never the deadline).
	r := newRigWith(t, func(c *configsvc.Config) { c.MaxTimeoutMS = 100000 }, nil)
	for _, code := range []string{
		"try:\n    with open('/out/big', 'wb') as f:\n        f.write(b'x' * (5 << 20))\nexcept BaseException as e:\n    iii.trigger({'function_id': 'probe::after-budget', 'payload': {}})",
		"import os\nos.mkdir('/work/d')\ntry:\n    for i in range(30000):\n        open('/work/d/f%d' % i, 'w').close()\nexcept BaseException as e:\n    iii.trigger({'function_id': 'probe::after-budget', 'payload': {}})",
	} {
		_, err := r.run(t, map[string]any{"code": code, "timeout_ms": 100000})
		if err == nil || err.Code != core.CodeResourceExhausted {
			t.Fatalf("%v, want the budget error", err)
		}
	}
	for _, inv := range r.lb.Seen() {
		if inv.FunctionID == "probe::after-budget" {
			t.Fatal("the guest went on after its write crossed the budget")
		}
	}
}

// One vectored call moves at most 0x7ffff000 bytes, as Linux does: the
// count WASI carries in 32 bits no longer wraps into a SystemError or a 0.
func TestVectoredIOCountsDoNotWrap(t *testing.T) {
	r := newRigWith(t, nil, nil)
	// (Past the stream cap stdout takes bytes short, so the counts are
	// bounded, not exact.)
	res := r.mustRun(t, "import os\nbuf = b'x' * (64 << 20)\nn = os.writev(1, [buf] * 40)\nresult = [0 < n <= 0x7ffff000, os.writev(1, [buf] * 2) > 0, os.writev.__name__]")
	if string(res.Result) != `[true,true,"writev"]` {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
}

// lateCtx is a turn's context whose deadline has passed (Err) while its
// Done has not been seen yet: the moment a guest's last word and the
// deadline arrive together, made to last.
type lateCtx struct {
	context.Context
	after time.Time
}

func (c lateCtx) Err() error {
	if time.Now().After(c.after) {
		return context.DeadlineExceeded
	}
	return nil
}

// Whatever the guest says once its deadline has passed — an envelope, a
// death, or the answer to a sleep — the turn is the timeout.
func TestNothingTheGuestSaysAfterTheDeadlineIsAnswered(t *testing.T) {
	r := newRigWith(t, nil, nil)
	k, err := r.run(t, map[string]any{"code": "result = 1", "keep": true})
	if err != nil {
		t.Fatal(err)
	}
	for name, code := range map[string]string{
		"an envelope":        "import time\nt = time.time()\nwhile time.time() - t < 0.3:\n    pass\nresult = 'late'",
		"a failure envelope": "import time\nt = time.time()\nwhile time.time() - t < 0.3:\n    pass\nraise ValueError('late')",
		"a sleep's answer":   "import time\ntry:\n    time.sleep(0.3)\nexcept BaseException as e:\n    result = repr(e)",
		"an exit":            "import os, time\nt = time.time()\nwhile time.time() - t < 0.3:\n    pass\nos._exit(3)",
	} {
		kept, state := r.reg.Lookup(k.RuntimeID)
		if state != core.StateLive {
			t.Fatalf("%s: the runtime is %v", name, state)
		}
		rt := kept.Runtime.(*pyRuntime)
		base, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := rt.Run(lateCtx{Context: base, after: time.Now().Add(100 * time.Millisecond)}, core.Exec{Code: code})
		cancel()
		if ce, ok := err.(*core.Error); !ok || ce.Code != core.CodeTimeout {
			t.Fatalf("%s after the deadline: %+v %v, want code-runner::timeout", name, out, err)
		}
	}
}

// Rewriting a file that exists is no new entry, even at the entries cap.
func TestRewritingAFileAtTheEntriesCapIsNoCrossing(t *testing.T) {
	r := newRigWith(t, nil, nil)
	res := r.mustRun(t, "import os\nfor i in range(64):\n    open('/out/f%d' % i, 'w').close()\nwith open('/out/f3', 'w') as f:\n    f.write('again')\nresult = [len(os.listdir('/out')), open('/out/f3').read()]")
	if string(res.Result) != `[64,"again"]` {
		t.Fatalf("%s %s", res.Result, res.Stderr)
	}
	if _, err := r.run(t, map[string]any{"code": "for i in range(65):\n    open('/out/g%d' % i, 'w').close()"}); err == nil || err.Code != core.CodeResourceExhausted {
		t.Fatalf("the 65th entry: %v", err)
	}
}
