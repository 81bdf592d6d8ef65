package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
)

// stateRecords keeps the registration records (contract §26.1) in the
// engine's state store, scope core.RecordScope: state::set, state::delete
// and state::list in the engine's default namespace (where its built-ins
// are, whatever namespace this worker serves). An engine without a state
// module (function_not_found) is core.ErrNoStore.
type stateRecords struct {
	client  *iii.Client
	timeout time.Duration
	log     *slog.Logger
	noStore sync.Once
}

// recordCallTimeout bounds one state store call.
const recordCallTimeout = 10 * time.Second

func (s *stateRecords) call(ctx context.Context, fn string, in any) (json.RawMessage, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	timeout := s.timeout
	if timeout <= 0 {
		timeout = recordCallTimeout
	}
	out, err := s.client.Invoke(ctx, iii.Call{FunctionID: fn, Data: data, Namespace: "default", Timeout: timeout})
	var ie *iii.InvocationError
	if errors.As(err, &ie) && ie.Code == "function_not_found" {
		s.noStore.Do(func() {
			if s.log != nil {
				s.log.Warn("the engine has no state store (" + fn + " is not found): functions published through code-runner::register_function live in this worker's memory only and will not survive its restart")
			}
		})
		return nil, core.ErrNoStore
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return out, nil
}

// Put writes rec under its key.
func (s *stateRecords) Put(ctx context.Context, rec core.Record) error {
	_, err := s.call(ctx, "state::set", map[string]any{"scope": core.RecordScope, "key": rec.Key, "value": rec})
	return err
}

// Delete removes the record of key.
func (s *stateRecords) Delete(ctx context.Context, key string) error {
	_, err := s.call(ctx, "state::delete", map[string]any{"scope": core.RecordScope, "key": key})
	return err
}

// List answers every record's value as stored.
func (s *stateRecords) List(ctx context.Context) ([]json.RawMessage, error) {
	out, err := s.call(ctx, "state::list", map[string]any{"scope": core.RecordScope})
	if err != nil {
		return nil, err
	}
	var values []json.RawMessage
	if len(out) == 0 || string(out) == "null" {
		return nil, nil
	}
	if err := json.Unmarshal(out, &values); err != nil {
		return nil, fmt.Errorf("state::list answered something that is not a list: %w", err)
	}
	return values, nil
}
