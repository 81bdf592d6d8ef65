package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/iii"
)

// EntryDescription is the configuration entry's description (docs/behaviour.md#configuration-worker).
const EntryDescription = "Runtime limits for in-process Node.js/Python: output caps, timeouts, runtime count, memory, scratch and warm pools. Every setting applies without a restart."

// EntryID is III_CONFIG_NAME trimmed when non-blank, else code-runner.
func EntryID(lookup func(string) (string, bool)) string {
	if v, ok := lookup("III_CONFIG_NAME"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return "code-runner"
}

// Caller performs bus calls; *iii.Client satisfies it.
type Caller interface {
	Invoke(ctx context.Context, call iii.Call) (json.RawMessage, error)
}

// EngineSource reads configuration from the configuration worker
// (docs/behaviour.md#configuration-worker).
type EngineSource struct {
	Caller  Caller
	EntryID string
	// Seed is laid over the defaults as the initial value (nil = defaults).
	Seed *configsvc.Config
	Log  *slog.Logger

	// Attempts, Timeout and Backoff default to 3, 5 s and 250 ms × attempt.
	Attempts int
	Timeout  time.Duration
	Backoff  time.Duration
}

// ErrUnavailable is wrapped when the configuration worker is absent
// (function_not_found for both ensure and the legacy get, or every attempt
// timed out).
var ErrUnavailable = errors.New("configuration worker unavailable")

func (s *EngineSource) defaults() {
	if s.Attempts == 0 {
		s.Attempts = 3
	}
	if s.Timeout == 0 {
		s.Timeout = 5 * time.Second
	}
	if s.Backoff == 0 {
		s.Backoff = 250 * time.Millisecond
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
}

func code(err error) string {
	var ie *iii.InvocationError
	if errors.As(err, &ie) {
		return ie.Code
	}
	return ""
}

// call invokes fn with retries: up to Attempts, backoff × attempt, never
// retrying function_not_found or NOT_FOUND. timedOut reports whether every
// attempt timed out.
func (s *EngineSource) call(ctx context.Context, fn string, data any) (res json.RawMessage, timedOut bool, err error) {
	s.defaults()
	body, _ := json.Marshal(data)
	allTimeouts := true
	for attempt := 1; attempt <= s.Attempts; attempt++ {
		res, err = s.Caller.Invoke(ctx, iii.Call{FunctionID: fn, Data: body, Timeout: s.Timeout})
		if err == nil {
			return res, false, nil
		}
		c := code(err)
		if c == "function_not_found" || c == "NOT_FOUND" {
			return nil, false, err
		}
		if !errors.Is(err, iii.ErrTimeout) {
			allTimeouts = false
		}
		if attempt < s.Attempts {
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case <-time.After(s.Backoff * time.Duration(attempt)):
			}
		}
	}
	return nil, allTimeouts, fmt.Errorf("%s failed after %d attempts: %w", fn, s.Attempts, err)
}

func (s *EngineSource) registration(initial *configsvc.Config) map[string]any {
	p := map[string]any{"id": s.EntryID, "name": "code-runner", "description": EntryDescription,
		"schema": json.RawMessage(configsvc.Schema()), "metadata": map[string]string{"ui_form": "code-runner"}}
	if initial != nil {
		p["initial_value"] = initial.JSON()
	}
	return p
}

// Boot installs the entry (seeding only when nothing is stored) and returns
// the authoritative value. An invalid stored value is an error naming every
// problem; an absent configuration worker wraps ErrUnavailable.
func (s *EngineSource) Boot(ctx context.Context) (configsvc.Config, error) {
	s.defaults()
	seed := configsvc.Defaults()
	if s.Seed != nil {
		seed = *s.Seed
	}
	_, timedOut, err := s.call(ctx, "configuration::ensure", s.registration(&seed))
	switch {
	case err == nil:
	case code(err) == "function_not_found":
		s.Log.Warn("engine lacks configuration::ensure; using non-atomic legacy initialization; upgrade to >=0.24.1 for concurrent-write safety")
		if err := s.legacyInit(ctx, &seed); err != nil {
			return configsvc.Config{}, err
		}
	case timedOut:
		return configsvc.Config{}, fmt.Errorf("%w (%v)", ErrUnavailable, err)
	default:
		return configsvc.Config{}, err
	}
	cfg, err := s.Fetch(ctx)
	if err != nil {
		return configsvc.Config{}, err
	}
	return cfg, nil
}

func (s *EngineSource) legacyInit(ctx context.Context, seed *configsvc.Config) error {
	res, timedOut, err := s.call(ctx, "configuration::get", map[string]any{"id": s.EntryID, "raw": true})
	stored := false
	switch {
	case err == nil:
		var got struct {
			Value json.RawMessage `json:"value"`
		}
		_ = json.Unmarshal(res, &got)
		stored = len(got.Value) > 0 && string(got.Value) != "null"
	case code(err) == "NOT_FOUND":
	case code(err) == "function_not_found":
		return fmt.Errorf("%w (configuration::ensure and configuration::get are not registered)", ErrUnavailable)
	case timedOut:
		return fmt.Errorf("%w (%v)", ErrUnavailable, err)
	default:
		return err
	}
	var initial *configsvc.Config
	if !stored {
		initial = seed
	}
	_, _, err = s.call(ctx, "configuration::register", s.registration(initial))
	return err
}

// Fetch reads and validates the current value: nothing stored (NOT_FOUND
// or null) is the defaults.
func (s *EngineSource) Fetch(ctx context.Context) (configsvc.Config, error) {
	res, timedOut, err := s.call(ctx, "configuration::get", map[string]any{"id": s.EntryID})
	if err != nil {
		if code(err) == "NOT_FOUND" {
			s.Log.InfoContext(ctx, "no configuration value found; using built-in defaults")
			return configsvc.Defaults(), nil
		}
		if timedOut || code(err) == "function_not_found" {
			return configsvc.Config{}, fmt.Errorf("%w (%v)", ErrUnavailable, err)
		}
		return configsvc.Config{}, err
	}
	var got struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(res, &got); err != nil {
		return configsvc.Config{}, fmt.Errorf("configuration::get answered %s: %w", res, err)
	}
	if len(got.Value) == 0 || string(got.Value) == "null" {
		s.Log.InfoContext(ctx, "no configuration value found; using built-in defaults")
		return configsvc.Defaults(), nil
	}
	cfg, err := configsvc.FromJSON(got.Value)
	if err != nil {
		return configsvc.Config{}, fmt.Errorf("invalid code-runner config: %w", err)
	}
	return cfg, nil
}
