// Command code-runner is the code-runner worker for the iii engine: it runs
// untrusted JavaScript (V8) and Python (CPython on WASI) in-process behind the
// code-runner::* bus functions.
//
// Usage:
//
//	code-runner [serve] [flags] connect to the engine and serve (the default)
//	code-runner run --lang node|python [--code CODE | --file PATH | -]
//	                            run code in-process with no engine
//	code-runner --manifest      print the registry manifest and exit
//	code-runner version         print the versions of the binary and its engines
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	v8 "github.com/code-runner-go/code-runner/engines/node/v8"

	"github.com/code-runner-go/code-runner/engines/node"
	"github.com/code-runner-go/code-runner/engines/node/isolatehost"
	"github.com/code-runner-go/code-runner/engines/python/pywasm"
	"github.com/code-runner-go/code-runner/internal/buildinfo"
	_ "github.com/code-runner-go/code-runner/internal/v8compat"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == node.HostArg {
		// Hidden mode: this process is one supervised V8 isolate host.
		os.Exit(isolatehost.Serve())
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv))
}

// run executes the command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer, env envFunc) int {
	if len(args) > 0 && args[0] == "version" {
		if len(args) > 1 {
			fmt.Fprintf(stderr, "code-runner: version takes no arguments (got %q)\n", args[1])
			return 2
		}
		printVersion(stdout)
		return 0
	}
	if len(args) > 0 && args[0] == "run" {
		return runLocal(args[1:], os.Stdin, stdout, stderr, env)
	}
	if len(args) > 0 && args[0] == "serve" {
		args = args[1:]
	}
	opts, err := parseOptions("code-runner", args, env, stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "code-runner: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: opts.LogLevel}))
	if opts.Manifest {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(buildManifest()); err != nil {
			log.Error("write manifest", "err", err)
			return 1
		}
		return 0
	}
	return serve(opts, env, log)
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "code-runner %s\n", buildinfo.Version)
	fmt.Fprintf(w, "v8 %s\n", v8.Version())
	fmt.Fprintf(w, "python %s (wasi)\n", pywasm.PythonVersion)
	fmt.Fprintf(w, "wazero %s\n", buildinfo.ModuleVersion("github.com/tetratelabs/wazero"))
}
