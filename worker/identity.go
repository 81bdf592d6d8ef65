package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/code-runner-go/code-runner/iii"
)

// nameWait is how long a worker starting under a name another live worker
// reports waits for that worker to go before it refuses to serve: a
// restarted worker's predecessor may still be counted as connected for a
// moment after it died.
const nameWait = 10 * time.Second

// ErrDuplicateName is the refusal of a worker whose name another live
// worker on the engine already has (contract §24.1).
func ErrDuplicateName(name string) error {
	return fmt.Errorf("another live worker on this engine is already named %q: give every code-runner its own name with III_WORKER_NAME", name)
}

// nameTaken asks the engine (engine::workers::list) whether another live
// worker reports name, waiting up to wait for one that does to go. It
// reports true when one stays; an error means the engine could not say.
func nameTaken(ctx context.Context, client *iii.Client, name string, wait time.Duration) (bool, error) {
	deadline := time.Now().Add(wait)
	for {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		res, err := client.Invoke(lctx, iii.Call{FunctionID: "engine::workers::list", Data: json.RawMessage(`{}`), Timeout: 5 * time.Second})
		cancel()
		if err != nil {
			return false, fmt.Errorf("engine::workers::list: %w", err)
		}
		var out struct {
			Workers []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"workers"`
		}
		if err := json.Unmarshal(res, &out); err != nil {
			return false, fmt.Errorf("engine::workers::list answered %.200s: %w", res, err)
		}
		self, dup := client.WorkerID(), false
		for _, w := range out.Workers {
			if w.Name == name && w.ID != self {
				dup = true
			}
		}
		if !dup || time.Now().After(deadline) {
			return dup, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
