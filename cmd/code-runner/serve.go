package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/internal/buildinfo"
)

// workerName is III_WORKER_NAME when set, else code-runner.
func workerName(env envFunc) string {
	if v, ok := env("III_WORKER_NAME"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return "code-runner"
}

// serve connects to the engine and stays connected until SIGINT/SIGTERM,
// then closes within the launchers' 10 s window. It returns the exit status.
func serve(opts *options, env envFunc, log *slog.Logger) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fatal := make(chan string, 1)
	client := iii.New(iii.Options{
		URL: opts.URL, Name: workerName(env), Version: buildinfo.Version, Description: description,
		Namespace: opts.Namespace, Logger: log,
		OnRejected: func(code, detail string) {
			select {
			case fatal <- code + ": " + detail:
			default:
			}
		},
	})
	log.Info("code-runner connecting", "url", opts.URL, "worker", workerName(env))
	status := 0
	select {
	case <-ctx.Done():
		log.Info("code-runner stopping")
	case reason := <-fatal:
		log.Error("code-runner cannot serve under this name; exiting", "reason", reason)
		status = 1
	}
	done := make(chan struct{})
	go func() { _ = client.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(8 * time.Second):
		log.Warn("connection did not close in time; exiting anyway")
	}
	return status
}
