package node

import (
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/internal/procfs"
)

// TestAnIdleKeptHostDoesNotWake: a kept runtime's host waits for its next
// message in a system call, holding one of its two Ps. Once turns stop,
// the runtime's monitor must take that P back and go to sleep: a host that
// kept waking (the monitor's 10 ms tick, say) would cost every idle kept
// runtime a hundred wake-ups a second.
func TestAnIdleKeptHostDoesNotWake(t *testing.T) {
	r := newRig(t, nil, nil, nil)
	k, err := r.run(t, map[string]any{"lang": "node", "keep": true, "code": "return 1"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 2"}); err != nil {
			t.Fatal(err)
		}
	}
	pid := keptHost(t, r, k.RuntimeID).host().pid
	// The monitor sleeps 10–20 ms after the last turn; give it
	// far more, then count.
	time.Sleep(500 * time.Millisecond)
	before := procfs.Wakeups(pid)
	time.Sleep(2 * time.Second)
	if woke := procfs.Wakeups(pid) - before; woke > 10 {
		t.Fatalf("the idle kept host's threads woke %d times in 2 s (want at most 10)", woke)
	}
	// It still serves turns after the pause.
	if res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "return 3"}); err != nil || string(res.Result) != "3" {
		t.Fatalf("a turn after the pause: %v %+v", err, res)
	}
}
