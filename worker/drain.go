package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
)

// drain is a stopping worker's last act before it closes (contract §26.6;
// docs/behaviour.md#process-drain): it refuses new work (the gate), hands
// the shared ids, its own ids and its namespaces to the rest of the group —
// unregistered, claims withdrawn, then its metadata reported again so that
// every other worker hears of it (engine::workers-available) and takes
// them over; a lone worker's callers get function_not_found, not a hang —
// and lets the calls already running finish for up to drain_secs, or
// until abort closes.
func drain(app *App, client *iii.Client, gate *core.Gate, shared []string, tag string, abort <-chan struct{}, log *slog.Logger) {
	start := time.Now()
	secs := app.Router.Live().Config.DrainSecs
	inFlight := gate.Close()
	for _, id := range shared {
		client.UnregisterFunction(id)
	}
	for _, id := range []string{core.FnRun, core.FnTeardown, core.FnRegisterFunction} {
		client.UnregisterFunction(core.WorkerID(id, tag))
	}
	nss := app.Namespaces.HandOver(client.UnregisterFunction)
	client.Announce()
	log.Info("code-runner draining: new work is refused, functions handed to the group", "in_flight", inFlight, "namespaces", len(nss), "drain_secs", secs)
	if inFlight == 0 || secs <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	go func() {
		select {
		case <-abort:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := gate.Wait(ctx); err != nil {
		reason := "drain_secs passed"
		select {
		case <-abort:
			reason = "a second signal"
		default:
		}
		log.Warn("code-runner stopping with calls still running", "reason", reason, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	log.Info("code-runner drained: every call in flight finished", "after", time.Since(start).Round(time.Millisecond))
}
