// Command iiitest-engine starts the in-process test engine on a port, for
// tests written in other languages (the Node e2e suite). It prints one line
// `url=<ws url>` on stdout once it listens, and runs until stdin closes or
// it receives SIGINT/SIGTERM.
//
// With --demo-worker it also connects a Go worker named "g" (package
// iiitest/demo) that the interop suite drives over the bus.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/iii/iiitest/demo"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	withDemo := flag.Bool("demo-worker", false, "also connect the Go demo worker \"g\"")
	enqueue := flag.Bool("in-memory-queue", false, "serve the enqueue action with an in-memory queue")
	verbose := flag.Bool("v", false, "log engine activity to stderr")
	noState := flag.Bool("no-state", false, "start without the state module (state::* answer function_not_found), as an engine whose state module is off")
	version := flag.String("engine-version", "0.22", "duplicate handling of which engine: 0.22 (the last writer of an id wins) or 0.23 (a second owner of an id, or of a worker name, is refused)")
	flag.Parse()

	level := slog.LevelError
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	opts := iiitest.Options{Logger: log, Addr: *addr, NoState: *noState}
	switch *version {
	case "0.22":
	case "0.23":
		opts.Refusing = true
	default:
		fmt.Fprintf(os.Stderr, "iiitest-engine: --engine-version %q is not one of 0.22, 0.23\n", *version)
		os.Exit(2)
	}
	if *enqueue {
		opts.Enqueue = iiitest.EnqueueInMemory
	}
	e, err := iiitest.New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "iiitest-engine:", err)
		os.Exit(1)
	}
	e.InstallControl()
	if *withDemo {
		g := demo.Start(e.URL(), log)
		defer g.Close()
	}
	fmt.Printf("url=%s\n", e.URL())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	<-ctx.Done()
	e.Close()
}
