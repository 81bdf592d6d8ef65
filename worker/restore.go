package worker

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/code-runner-go/code-runner/core"
)

// restorer publishes again the recorded namespaces no live worker serves
// (contract §26.2): once at start, before the worker reports ready, and
// again whenever it is poked — the engine's worker events (a worker left,
// so its namespaces may have no server), a reconnect — and, as a
// fallback, every interval.
type restorer struct {
	app      *App
	log      *slog.Logger
	pokes    chan struct{}
	interval time.Duration
}

// restoreAtStart bounds the pass a worker makes before it reports ready;
// what it has not restored by then comes back on the next pass.
const restoreAtStart = 30 * time.Second

// restoreConnectWait is how long a starting worker waits for the engine
// before its first pass; with no engine by then, the pass runs once it
// connects.
const restoreConnectWait = 5 * time.Second

// restoreDebounce gathers the events of one departure into one pass.
const restoreDebounce = 100 * time.Millisecond

// poke asks for a pass soon.
func (r *restorer) poke() {
	select {
	case r.pokes <- struct{}{}:
	default:
	}
}

// pass restores what it can now and logs what came back.
func (r *restorer) pass(ctx context.Context) {
	start := time.Now()
	n, err := r.app.Namespaces.Restore(ctx, func(ctx context.Context, payload json.RawMessage) error {
		_, err := r.app.Router.Invoke(ctx, core.FnRegisterFunction, payload, nil)
		return err
	})
	switch {
	case errors.Is(err, core.ErrNoStore) || ctx.Err() != nil:
	case err != nil:
		r.log.Warn("the registration records could not be read; the functions they keep come back at the next try", "err", err)
	case n > 0:
		r.log.Info("registered functions restored from the engine's state store", "functions", n, "took", time.Since(start).Round(time.Millisecond))
	}
}

// run passes on every poke (gathered over restoreDebounce) and every
// interval until ctx ends.
func (r *restorer) run(ctx context.Context) {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-r.pokes:
			select {
			case <-time.After(restoreDebounce):
			case <-ctx.Done():
				return
			}
		}
		r.pass(ctx)
	}
}
