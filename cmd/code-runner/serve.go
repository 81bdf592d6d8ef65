package main

import (
	"context"
	"github.com/code-runner-go/code-runner/engines/standard"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/code-runner-go/code-runner/internal/buildinfo"
	"github.com/code-runner-go/code-runner/worker"
)

// workerName is III_WORKER_NAME when set, else code-runner.
func workerName(env envFunc) string {
	if v, ok := env("III_WORKER_NAME"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return "code-runner"
}

// serve runs the worker until SIGINT/SIGTERM and returns the exit status:
// 0 after a clean stop, 1 when boot fails or the engine rejects the
// worker. The first signal starts the drain (contract §26.6: new work
// refused, functions handed to the group, calls in flight given up to
// drain_secs); a second ends the drain at once; then the worker stops
// within the launchers' 10 s window (§20.2 step 10).
func serve(opts *options, env envFunc, log *slog.Logger) int {
	// One P while at most one call is in flight, the CPUs plus spare Ps
	// from the second on; a GOMAXPROCS the operator set is kept as set.
	_, procsSet := env("GOMAXPROCS")
	gov := tuning.ServeGovernor(procsSet)
	defer gov.Close()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	abort := make(chan struct{})
	go func() {
		if _, ok := <-sigs; !ok {
			return
		}
		stop()
		if _, ok := <-sigs; ok {
			close(abort)
		}
	}()
	done := make(chan error, 1)
	go func() {
		done <- worker.Serve(ctx, worker.ServeOptions{
			URL: opts.URL, Namespace: opts.Namespace, WorkerName: workerName(env), Version: buildinfo.Version,
			Description: description, ConfigSource: opts.ConfigSource, ConfigFile: opts.ConfigFile, SeedPath: opts.Config,
			Env: env, Log: log, Procs: gov, Engines: standard.Modules(standard.Options{}), Abort: abort,
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			log.Error("code-runner cannot serve", "err", err)
			return 1
		}
		return 0
	case <-ctx.Done():
	}
	// The drain bounds itself (drain_secs, at most 300 s, or the second
	// signal); what follows it is bounded here.
	grace := time.After(309 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				log.Error("code-runner stopped with an error", "err", err)
				return 1
			}
			return 0
		case <-abort:
			abort = nil
			grace = time.After(9 * time.Second)
		case <-grace:
			log.Warn("shutdown did not finish in time; exiting anyway")
			return 0
		}
	}
}
