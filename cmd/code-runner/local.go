package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/code-runner-go/code-runner/engines/standard"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/worker"
)

// runUsage is what `code-runner run --help` prints before the flags.
const runUsage = `code-runner run runs one piece of code in-process, with no engine, and prints the code-runner::run response.

Usage:
  code-runner run FILE                               the language from FILE's extension (.py; .js .mjs .cjs .ts .mts .cts)
  code-runner run --lang node|python --code CODE     code from the command line
  code-runner run --lang node|python --file PATH     code from a file of any name
  code-runner run --lang node|python -               code from stdin

Exit status: as the script's own (0 it succeeded, 1 it failed, as node and python3 exit), 2 on bad
usage, and for a code-runner error one of its own: 124 code-runner::timeout, 3 invalid_request,
4 runtime_not_found, 5 expired, 6 capacity, 7 resource_exhausted, 8 engine, 9 handler_error.

Flags:
`

// runLocal is `code-runner run`: one run in-process with no engine, through
// the same pipeline, printing the code-runner::run response
// (docs/behaviour.md#process-cli). It exits as the script did (the
// response's exit_code), 2 on bad usage, and errorStatus's status on a
// code-runner error.
func runLocal(args []string, stdin io.Reader, stdout, stderr io.Writer, env envFunc) int {
	fs := newFlagSet("code-runner run", runUsage, stdout)
	lang := fs.String("lang", "", "node or python (needed with --code, --file or -; a FILE argument's extension tells it: .py, or .js .mjs .cjs .ts .mts .cts)")
	code := fs.String("code", "", "the code to run")
	file := fs.String("file", "", "read the code from this file")
	timeout := fs.Uint64("timeout-ms", 0, "run budget in ms (0 = configured default)")
	memory := fs.Uint64("memory-mb", 0, "memory cap for the runtime in MiB (0 = default)")
	pretty := fs.Bool("pretty", false, "indent the JSON response")
	configFile := fs.String("config-file", "", "local configuration file (env III_CODE_RUNNER_CONFIG_FILE; default "+defaultConfigFile+")")
	logLevel := fs.String("log-level", "", "debug | info | warn | error (env CODE_RUNNER_LOG_LEVEL; default warn)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "code-runner run: %v; run `code-runner run --help` for the flags\n", err)
		return 2
	}
	fromStdin := false
	switch rest := fs.Args(); {
	case len(rest) == 1 && rest[0] == "-":
		fromStdin = true
	case len(rest) == 1 && *file == "":
		// code-runner run script.py: the file, its language from its
		// extension unless --lang says otherwise.
		*file = rest[0]
		if *lang == "" {
			l, ok := langOf(rest[0])
			if !ok {
				fmt.Fprintf(stderr, "code-runner run: cannot tell the language of %q from its extension (.py for python; .js, .mjs, .cjs, .ts, .mts or .cts for node); pass --lang node or --lang python\n", rest[0])
				return 2
			}
			*lang = l
		}
	case len(rest) > 0:
		fmt.Fprintf(stderr, "code-runner run: unexpected argument %q; pass code as a FILE, with --code, --file or - (stdin)\n", rest[0])
		return 2
	}
	if *lang != "node" && *lang != "python" {
		fmt.Fprintln(stderr, `code-runner run: --lang must be "node" or "python"`)
		return 2
	}
	sources := 0
	for _, b := range []bool{*code != "", *file != "", fromStdin} {
		if b {
			sources++
		}
	}
	if sources != 1 {
		fmt.Fprintln(stderr, "code-runner run: pass the code exactly one way: --code CODE, --file PATH, or - to read stdin")
		return 2
	}
	src := *code
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			fmt.Fprintf(stderr, "code-runner run: read --file: %v\n", err)
			return 2
		}
		src = string(b)
	}
	if fromStdin {
		b, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "code-runner run: read stdin: %v\n", err)
			return 2
		}
		src = string(b)
	}
	lvlText := *logLevel
	if lvlText == "" {
		lvlText, _ = firstEnv(env, "CODE_RUNNER_LOG_LEVEL")
	}
	lvl := slog.LevelWarn
	if lvlText != "" {
		l, ok := parseLevel(lvlText)
		if !ok {
			fmt.Fprintf(stderr, "code-runner run: log level %q is not one of debug, info, warn, error\n", lvlText)
			return 2
		}
		lvl = l
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))

	path := *configFile
	if path == "" {
		if v, n := firstEnv(env, "III_CODE_RUNNER_CONFIG_FILE"); n != "" {
			path = v
		} else {
			path = defaultConfigFile
		}
	}
	cfg, source, err := loadLocalConfig(path, env)
	if err != nil {
		fmt.Fprintf(stderr, "code-runner run: %v\n", err)
		return 2
	}
	cfg.WarmPoolNode, cfg.WarmPoolPython = 0, 0 // one run: nothing to keep warm

	transport := &worker.LocalTransport{}
	app, err := worker.NewApp(worker.AppOptions{Config: cfg, Source: source, Transport: transport, Log: log,
		Engines: standard.Modules(standard.Options{})})
	if err != nil {
		fmt.Fprintf(stderr, "code-runner run: %v\n", err)
		return 1
	}
	transport.App = app
	defer app.Close()

	req := map[string]any{"lang": *lang, "code": src}
	if *timeout > 0 {
		req["timeout_ms"] = *timeout
	}
	if *memory > 0 {
		req["memory_mb"] = *memory
	}
	payload, _ := jsonx.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(cfg.MaxTimeoutMS)*time.Millisecond+30*time.Second)
	defer cancel()
	res, runErr := app.Router.Invoke(ctx, core.FnRun, payload, nil)
	var out any = res
	status := 0
	if r, ok := res.(*core.RunResponse); ok && runErr == nil {
		status = int(r.ExitCode)
	}
	if runErr != nil {
		ce := core.AsError(runErr, core.FnRun)
		out = map[string]any{"error": ce.Wire()}
		status = errorStatus(ce.Code)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if *pretty {
		enc.SetIndent("", "  ")
	}
	_ = enc.Encode(out)
	return status
}

// loadLocalConfig reads the local configuration file when it exists, else
// the defaults.
func loadLocalConfig(path string, env envFunc) (configsvc.Config, string, error) {
	cfg, err := configsvc.LoadFile(path, configsvc.LookupEnv(env))
	switch {
	case err == nil:
		return cfg, "config file " + path, nil
	case errors.Is(err, os.ErrNotExist):
		return configsvc.Defaults(), "defaults", nil
	}
	return configsvc.Config{}, "", fmt.Errorf("invalid config file %s (%d problem(s)): %s", path, len(configsvc.Problems(err)), strings.Join(configsvc.Problems(err), "; "))
}

// errorStatus is `code-runner run`'s exit status for a code-runner error:
// one per code, none of them a status a script's outcome (0, 1) or bad
// usage (2) gives; a timeout exits 124, as timeout(1) does.
func errorStatus(c core.Code) int {
	switch c {
	case core.CodeTimeout:
		return 124
	case core.CodeInvalidRequest:
		return 3
	case core.CodeRuntimeNotFound:
		return 4
	case core.CodeExpired:
		return 5
	case core.CodeCapacity:
		return 6
	case core.CodeResourceExhausted:
		return 7
	case core.CodeHandlerError:
		return 9
	}
	return 8 // code-runner::engine, and anything the worker could not name
}

// langOf names the language of a source file by its extension.
func langOf(path string) (string, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".py":
		return "python", true
	case ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts":
		return "node", true
	}
	return "", false
}
