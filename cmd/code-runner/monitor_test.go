package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
)

// TestTheBusIsHeardWhileAGuestComputesOnOneP: with GOMAXPROCS=1 from the
// operator (no governor, so nothing raises the Ps), a python guest that
// computes for seconds must not leave the bus unread: a second call is
// answered while the first still computes. On one busy P only the
// runtime's monitor polls the network, and bus reads no longer wake it
// when it has parked (internal/rawconn), so the tick's yields do
// (tuning.WakeMonitor). Without that, the second call waited for the
// monitor's next timer: 2.2 s in two runs, against a bar of a sixth of the
// 6 s computation (1 s) that a heard call meets many times over. It bounds
// how long the bus goes unread, not how fast anything runs. The built
// binary runs: race builds keep the standard reads.
func TestTheBusIsHeardWhileAGuestComputesOnOneP(t *testing.T) {
	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, stderr := startServe(t, e, "GOMAXPROCS=1", "III_WORKER_NAME=cr-one-p", "OTEL_ENABLED=false")
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	run := func(req map[string]any) (json.RawMessage, error) {
		req["lang"], req["timeout_ms"] = "python", 30000
		out, eb, err := e.Invoke(ctx, "code-runner::run", req, nil)
		if err == nil && eb != nil {
			t.Errorf("%s: %s", eb.Code, eb.Message)
		}
		return out, err
	}
	// A kept runtime computes: its turns take nothing from the pool, whose
	// refills would make system calls of their own meanwhile.
	out, err := run(map[string]any{"code": "result = 1", "keep": true})
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	var kept struct {
		RuntimeID string `json:"runtime_id"`
	}
	if err := json.Unmarshal(out, &kept); err != nil || kept.RuntimeID == "" {
		t.Fatalf("no runtime id in %s", out)
	}
	time.Sleep(2 * time.Second) // idle, the pool refilled: the monitor parks

	const compute = 6 * time.Second
	computed := make(chan time.Time, 1)
	go func() {
		_, _ = run(map[string]any{"runtime_id": kept.RuntimeID, "code": "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 6:\n    pass\nresult = 1"})
		computed <- time.Now()
	}()
	time.Sleep(300 * time.Millisecond) // the guest is computing
	asked := time.Now()
	if _, err := run(map[string]any{"code": "result = 2"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	took := time.Since(asked)
	<-computed
	if took > compute/6 {
		t.Fatalf("the second call took %v while a guest computed for %v on one P: the bus went unread meanwhile", took, compute)
	}
}
