package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
)

// options are the worker's flags after env and defaults are applied
// (docs/behaviour.md#process-cli: flag > env > default).
type options struct {
	URL          string
	Config       string // --config seed path, "" when unset
	Namespace    string // "" when unset
	ConfigSource string
	ConfigFile   string
	LogLevel     slog.Level
	Manifest     bool
}

// Defaults of docs/behaviour.md#process-cli.
const (
	defaultURL        = "ws://127.0.0.1:49134"
	defaultConfigFile = "./data/configuration/code-runner.yaml"
)

var configSources = []string{"engine", "file", "engine-or-file"}

// usageError is a bad invocation: exit status 2 with its message.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// envFunc looks up an environment variable.
type envFunc func(string) (string, bool)

// firstEnv returns the first non-blank value among names, and which name
// supplied it.
func firstEnv(env envFunc, names ...string) (string, string) {
	for _, n := range names {
		if v, ok := env(n); ok && strings.TrimSpace(v) != "" {
			return v, n
		}
	}
	return "", ""
}

// parseOptions parses the worker flags in args with env as fallback. Help
// (--help, -h) goes to stdout and returns flag.ErrHelp; a bad flag is a
// usageError whose text names the fix, and nothing else is printed.
func parseOptions(name string, args []string, env envFunc, stdout io.Writer) (*options, error) {
	fs := newFlagSet(name, topUsage, stdout)
	var o options
	var logLevel string
	fs.StringVar(&o.URL, "url", "", "engine WebSocket URL (env III_URL, then III_ENGINE_URL; default "+defaultURL+")")
	fs.StringVar(&o.Config, "config", "", "optional YAML seed for the configuration entry (env III_CONFIG)")
	fs.StringVar(&o.Namespace, "namespace", "", "namespace reported to the engine (env III_NAMESPACE)")
	fs.StringVar(&o.ConfigSource, "config-source", "", "engine | file | engine-or-file (env III_CODE_RUNNER_CONFIG_SOURCE; default engine)")
	fs.StringVar(&o.ConfigFile, "config-file", "", "local YAML configuration file (env III_CODE_RUNNER_CONFIG_FILE; default "+defaultConfigFile+")")
	fs.StringVar(&logLevel, "log-level", "", "debug | info | warn | error (env CODE_RUNNER_LOG_LEVEL; default info)")
	fs.BoolVar(&o.Manifest, "manifest", false, "print the manifest as JSON and exit without connecting")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usagef("%v; run `code-runner --help` for the flags", err)
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected argument %q; commands are serve, run and version, and flags start with --", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	src := map[string]string{}
	pick := func(flagName string, dst *string, def string, envs ...string) {
		if set[flagName] {
			src[flagName] = "--" + flagName
			return
		}
		if v, n := firstEnv(env, envs...); n != "" {
			*dst, src[flagName] = v, n
			return
		}
		*dst, src[flagName] = def, ""
	}
	pick("url", &o.URL, defaultURL, "III_URL", "III_ENGINE_URL")
	pick("config", &o.Config, "", "III_CONFIG")
	pick("namespace", &o.Namespace, "", "III_NAMESPACE")
	pick("config-source", &o.ConfigSource, "engine", "III_CODE_RUNNER_CONFIG_SOURCE")
	pick("config-file", &o.ConfigFile, defaultConfigFile, "III_CODE_RUNNER_CONFIG_FILE")
	pick("log-level", &logLevel, "info", "CODE_RUNNER_LOG_LEVEL")
	o.Namespace = strings.TrimSpace(o.Namespace)

	from := func(flagName string) string {
		if s := src[flagName]; s != "" {
			return s
		}
		return "--" + flagName
	}
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return nil, usagef("%s %q is not a WebSocket URL; pass something like %s", from("url"), o.URL, defaultURL)
	}
	if !contains(configSources, o.ConfigSource) {
		return nil, usagef("%s %q is not a configuration source; use one of engine, file, engine-or-file", from("config-source"), o.ConfigSource)
	}
	lvl, ok := parseLevel(logLevel)
	if !ok {
		return nil, usagef("%s %q is not a log level; use debug, info, warn or error", from("log-level"), logLevel)
	}
	o.LogLevel = lvl
	if set["config-file"] && strings.TrimSpace(o.ConfigFile) == "" {
		return nil, usagef("--config-file is empty; pass a path such as %s", defaultConfigFile)
	}
	return &o, nil
}

// newFlagSet returns a flag set that prints nothing on a bad flag (the
// caller says what to fix) and, on --help, usage and then the flags to
// stdout.
func newFlagSet(name, usage string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprint(stdout, usage)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

func parseLevel(s string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	}
	return 0, false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// topUsage is what `code-runner --help` prints before the serve flags.
const topUsage = `code-runner runs untrusted JavaScript and Python for the iii engine.

Usage:
  code-runner [serve] [flags]      connect to the engine and serve the code-runner::* functions (default)
  code-runner run FILE             run a .py, .js or .mjs file in-process, with no engine; print the response
  code-runner run --lang node|python (--code CODE | --file PATH | -)
                                   run code from the command line, a file or stdin (see code-runner run --help)
  code-runner version              print the versions of the binary and its engines
  code-runner --manifest           print the registry manifest as JSON and exit

Examples:
  code-runner run --lang node --code 'console.log("hi"); return 2 + 2'
  code-runner run script.py
  III_URL=ws://127.0.0.1:49134 code-runner serve

Flags of serve:
`
