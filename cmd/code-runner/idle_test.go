package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/procfs"
)

// TestTheWorkerGoesQuietSoonAfterABurst: whatever keeps a busy worker fast
// (spare Ps, pipe polls, the runtime's monitor, telemetry batches) must
// stop once calls stop, and the work calls leave behind (a pool growing
// to the burst's size, a host replacing the one a kept runtime took) must
// end. After 8 callers of python and node one-shots and a kept node
// runtime's turns, the worker gets 1.5 s; then its process tree's threads
// are counted as they wake, thread by thread, over 3 s windows one after
// another, and one of the first four must stay at or under ten wake-ups a
// second (issue 31's target 1 for an idle worker; the bench reads 1.3–1.9
// after boot, this test ~1 on this machine). Four windows, not one, so a
// slow machine's pool boots or a pool trimming back 10 s after the burst
// (warmpool's Burst) cannot fail it; a worker that keeps waking (its
// runtime monitor kept polling by GODEBUG=schedtrace: ~100 a second) fails
// every window. Telemetry is on, as by default; the test engine takes its
// frames.
func TestTheWorkerGoesQuietSoonAfterABurst(t *testing.T) {
	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), DiscardFrames: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cmd, stderr := startServe(t, e, "III_WORKER_NAME=cr-quiet")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	run := func(req map[string]any) (json.RawMessage, error) {
		out, eb, err := e.Invoke(ctx, "code-runner::run", req, nil)
		if err == nil && eb != nil {
			err = fmt.Errorf("%s: %s", eb.Code, eb.Message)
		}
		return out, err
	}

	oneShots := map[string]string{"python": "result = 2 + 2", "node": "return 2 + 2"}
	for _, lang := range []string{"python", "node"} {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 25 {
					if _, err := run(map[string]any{"lang": lang, "code": oneShots[lang]}); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("%s one-shot: %v\n%s", lang, err, stderr.String())
		}
	}
	out, err := run(map[string]any{"lang": "node", "code": "return 1", "keep": true})
	if err != nil {
		t.Fatal(err)
	}
	var kept struct {
		RuntimeID string `json:"runtime_id"`
	}
	if err := json.Unmarshal(out, &kept); err != nil || kept.RuntimeID == "" {
		t.Fatalf("no runtime id in %s", out)
	}
	for range 50 {
		if _, err := run(map[string]any{"runtime_id": kept.RuntimeID, "code": "return 2"}); err != nil {
			t.Fatal(err)
		}
	}

	time.Sleep(1500 * time.Millisecond)
	const window, windows = 3 * time.Second, 4
	limit := int64(10 * window / time.Second)
	var counts []string
	for i := range windows {
		before := procfs.TreeThreadWakeups(cmd.Process.Pid)
		time.Sleep(window)
		// Threads there at both ends count their difference, threads
		// born in the window all they did; one that ended took its
		// count along (the pools trim hosts only 10 s after the
		// burst, so at most one window loses them).
		var woke int64
		procs := map[int]int64{}
		for th, n := range procfs.TreeThreadWakeups(cmd.Process.Pid) {
			woke += n - before[th]
			procs[th.PID] += n - before[th]
		}
		t.Logf("window %d: %d wake-ups in %v (by process: %v)", i+1, woke, window, procs)
		if woke <= limit {
			break
		}
		counts = append(counts, fmt.Sprint(woke))
		if len(counts) == windows {
			t.Fatalf("the worker's process tree woke %v times in %d windows of %v each, the first 1.5 s after a burst (want one at most %d)", counts, windows, window, limit)
		}
	}
	// It still serves, kept runtime and one-shots, after the pause.
	var turn struct {
		Result json.RawMessage `json:"result"`
	}
	if out, err := run(map[string]any{"runtime_id": kept.RuntimeID, "code": "return 3"}); err != nil || json.Unmarshal(out, &turn) != nil || string(turn.Result) != "3" {
		t.Fatalf("a kept turn after the pause: %v %s", err, out)
	}
	if _, err := run(map[string]any{"lang": "python", "code": "result = 3"}); err != nil {
		t.Fatalf("a one-shot after the pause: %v", err)
	}
}
