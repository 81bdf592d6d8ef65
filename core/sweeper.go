package core

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

// ReapIdleKept destroys kept runtimes idle for at least ttl with no call in
// flight, tombstoning their ids (docs/behaviour.md#runtimes-idle-reaping). It returns how many it
// reaped.
func (r *Registry) ReapIdleKept(ttl time.Duration) int {
	now := r.now()
	n := 0
	for _, k := range r.Kept() {
		idle, ok := k.Idle(now)
		if !ok || idle < ttl {
			continue
		}
		if r.Forget(k, true) {
			k.Runtime.Destroy()
			n++
		}
	}
	return n
}

// SweepInterval is clamp(idle_ttl_secs, 1, 60) seconds.
func SweepInterval(cfg *configsvc.Config) time.Duration {
	s := cfg.IdleTTLSecs
	if s < 1 {
		s = 1
	}
	if s > 60 {
		s = 60
	}
	return time.Duration(s) * time.Second
}

// Sweeper reaps idle kept runtimes and unpinned namespace runtimes against
// idle_ttl_secs. Its interval is recomputed every tick, and Commit (or
// Wake) makes a configuration change take effect at once instead of
// after the wait begun under the old value.
type Sweeper struct {
	Registry   *Registry
	Namespaces *Namespaces
	Log        *slog.Logger

	live func() *configsvc.Snapshot
	wake chan struct{}
}

// NewSweeper returns a sweeper over reg and ns that reads the live
// configuration from live (Router.Live).
func NewSweeper(reg *Registry, ns *Namespaces, live func() *configsvc.Snapshot, log *slog.Logger) *Sweeper {
	return &Sweeper{Registry: reg, Namespaces: ns, Log: log, live: live, wake: make(chan struct{}, 1)}
}

// Wake ends the current wait: the sweeper sweeps now under the live
// configuration and waits the interval that configuration gives. Calls made
// while a wake is pending coalesce; Wake never blocks.
func (s *Sweeper) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run ticks until ctx ends; the first tick is at start. A panic in a sweep
// is recovered and logged, and the sweeper continues.
func (s *Sweeper) Run(ctx context.Context) {
	for {
		cfg := &s.live().Config
		s.sweep(cfg)
		t := time.NewTimer(SweepInterval(cfg))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

func (s *Sweeper) sweep(cfg *configsvc.Config) {
	defer func() {
		if p := recover(); p != nil && s.Log != nil {
			s.Log.Error("idle sweeper panicked; continuing", "panic", fmt.Sprint(p))
		}
	}()
	ttl := time.Duration(cfg.IdleTTLSecs) * time.Second
	kept := s.Registry.ReapIdleKept(ttl)
	ns := 0
	if s.Namespaces != nil {
		ns = s.Namespaces.ReapIdle(ttl)
	}
	if (kept > 0 || ns > 0) && s.Log != nil {
		s.Log.Info("reaped idle runtimes", "kept", kept, "namespaces", ns)
	}
}
