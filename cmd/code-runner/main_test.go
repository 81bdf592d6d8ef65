package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/syncbuf"
	"github.com/code-runner-go/code-runner/worker"

	"golang.org/x/sys/unix"
)

func envOf(m map[string]string) envFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestOptionsPrecedence(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want options
	}{
		{"defaults", nil, nil, options{URL: defaultURL, ConfigSource: "engine", ConfigFile: defaultConfigFile, LogLevel: slog.LevelInfo}},
		{"III_URL beats III_ENGINE_URL", nil, map[string]string{"III_URL": "ws://a:1", "III_ENGINE_URL": "ws://b:2"},
			options{URL: "ws://a:1", ConfigSource: "engine", ConfigFile: defaultConfigFile, LogLevel: slog.LevelInfo}},
		{"III_ENGINE_URL when III_URL is unset", nil, map[string]string{"III_ENGINE_URL": "ws://b:2"},
			options{URL: "ws://b:2", ConfigSource: "engine", ConfigFile: defaultConfigFile, LogLevel: slog.LevelInfo}},
		{"flag beats env", []string{"--url", "ws://flag:3", "--config-source=file", "--log-level", "debug"},
			map[string]string{"III_URL": "ws://a:1", "III_CODE_RUNNER_CONFIG_SOURCE": "engine-or-file", "CODE_RUNNER_LOG_LEVEL": "error"},
			options{URL: "ws://flag:3", ConfigSource: "file", ConfigFile: defaultConfigFile, LogLevel: slog.LevelDebug}},
		{"env for every other flag", nil, map[string]string{"III_CONFIG": "/s.yaml", "III_NAMESPACE": " prod ", "III_CODE_RUNNER_CONFIG_FILE": "/c.yaml", "CODE_RUNNER_LOG_LEVEL": "warn"},
			options{URL: defaultURL, Config: "/s.yaml", Namespace: "prod", ConfigSource: "engine", ConfigFile: "/c.yaml", LogLevel: slog.LevelWarn}},
		{"blank namespace is unset", nil, map[string]string{"III_NAMESPACE": "   "},
			options{URL: defaultURL, ConfigSource: "engine", ConfigFile: defaultConfigFile, LogLevel: slog.LevelInfo}},
		{"manifest", []string{"--manifest"}, nil,
			options{URL: defaultURL, ConfigSource: "engine", ConfigFile: defaultConfigFile, LogLevel: slog.LevelInfo, Manifest: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseOptions("code-runner", tc.args, envOf(tc.env), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", *got, tc.want)
			}
		})
	}
}

func TestBadInvocationsExit2NamingTheFix(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--bogus"}, nil, "flag provided but not defined: -bogus; run `code-runner --help` for the flags"},
		{[]string{"--url", "http://x"}, nil, `--url "http://x" is not a WebSocket URL; pass something like ws://127.0.0.1:49134`},
		{nil, map[string]string{"III_URL": "localhost:49134"}, `III_URL "localhost:49134" is not a WebSocket URL`},
		{[]string{"--config-source", "db"}, nil, `--config-source "db" is not a configuration source; use one of engine, file, engine-or-file`},
		{nil, map[string]string{"CODE_RUNNER_LOG_LEVEL": "loud"}, `CODE_RUNNER_LOG_LEVEL "loud" is not a log level; use debug, info, warn or error`},
		{[]string{"extra"}, nil, `unexpected argument "extra"`},
		{[]string{"version", "x"}, nil, `version takes no arguments`},
		{[]string{"run", "notes.txt"}, nil, `cannot tell the language of "notes.txt" from its extension (.py for python; .js, .mjs, .cjs, .ts, .mts or .cts for node); pass --lang node or --lang python`},
		{[]string{"run", "a.py", "b.py"}, nil, `unexpected argument "a.py"`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(tc.args, &out, &errb, envOf(tc.env)); code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %s)", code, errb.String())
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("stderr %q lacks %q", errb.String(), tc.want)
			}
		})
	}
}

// --help names every subcommand with a line each and shows examples before
// the flags, on stdout with exit 0 (help is the answer, not an error).
func TestHelpListsSubcommandsAndExamples(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb, envOf(nil)); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if errb.Len() != 0 {
		t.Fatalf("--help wrote to stderr: %q", errb.String())
	}
	help := out.String()
	for _, want := range []string{"code-runner [serve] [flags]", "code-runner run FILE", "code-runner run --lang node|python", "code-runner version", "code-runner --manifest", "Examples:", "code-runner run script.py", "-url string"} {
		if !strings.Contains(help, want) {
			t.Fatalf("--help lacks %q:\n%s", want, help)
		}
	}
}

// run --help goes to stdout too, and does not call --lang required: a
// FILE's extension tells the language.
func TestRunHelpSaysTheLanguageComesFromTheExtension(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--help"}, &out, &errb, envOf(nil)); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := out.String()
	if errb.Len() != 0 || strings.Contains(help, "(required)") || !strings.Contains(help, "code-runner run FILE") ||
		!strings.Contains(help, ".py, or .js .mjs .cjs .ts .mts .cts") || !strings.Contains(help, "Exit status: as the script's own") || !strings.Contains(help, "124 code-runner::timeout") || !strings.Contains(help, "-lang string") {
		t.Fatalf("stdout:\n%s\nstderr: %q", help, errb.String())
	}
}

// The no-engine message tells how to start an engine, not only where.
func TestNoEngineMessageNamesTheTestEngineCommand(t *testing.T) {
	msg := worker.NoEngineMessage("ws://127.0.0.1:49134")
	for _, want := range []string{"ws://127.0.0.1:49134", "go build -o bin/iiitest-engine ./iii/iiitest/cmd/iiitest-engine", "--addr 127.0.0.1:49134", "III_URL", "code-runner run"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("%q lacks %q", msg, want)
		}
	}
}

// TestManifestFromBuiltBinary builds the binary the way `make build` does
// and checks --manifest exits 0 without connecting (no engine is running)
// and prints the registry manifest.
func TestManifestFromBuiltBinary(t *testing.T) {
	version, err := os.ReadFile("../../VERSION")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "code-runner")
	ldflags := "-X github.com/code-runner-go/code-runner/internal/buildinfo.Version=" + strings.TrimSpace(string(version))
	if out, err := exec.Command("go", "build", "-ldflags", ldflags, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--manifest", "--url", "ws://127.0.0.1:1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("--manifest: %v", err)
	}
	var m struct {
		Name             string                     `json:"name"`
		Version          string                     `json:"version"`
		Description      string                     `json:"description"`
		DefaultConfig    map[string]json.RawMessage `json:"default_config"`
		SupportedTargets []string                   `json:"supported_targets"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("manifest is not JSON: %v\n%s", err, out)
	}
	if m.Name != "code-runner" || m.Version != strings.TrimSpace(string(version)) || m.Description != description {
		t.Fatalf("%+v", m)
	}
	if len(m.SupportedTargets) == 0 || m.SupportedTargets[0] == "" {
		t.Fatal("no supported_targets")
	}
	var keys []string
	for k := range m.DefaultConfig {
		keys = append(keys, k)
	}
	want := append([]string{}, configsvc.Keys()...)
	if len(keys) != len(want) || !sameSet(keys, want) {
		t.Fatalf("default_config keys %v != schema properties %v", keys, want)
	}
	if !strings.Contains(string(out), "—") {
		t.Fatal("description's em dash was escaped")
	}

	vout, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(vout), "code-runner "+strings.TrimSpace(string(version))) || !strings.Contains(string(vout), "v8 13.") {
		t.Fatalf("version output %q", vout)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// TestServeConnectsAndReportsMetadata starts the built binary against the
// test engine: it connects, reports runtime go / name / pid, and exits 0 on
// SIGTERM.
func TestServeConnectsAndReportsMetadata(t *testing.T) {
	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--url", e.URL(), "--namespace", "ns1")
	cmd.Env = append(os.Environ(), "III_WORKER_NAME=cr-test")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Generous: a cold python.wasm compile precedes registration on a new machine.
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	if _, err := e.WaitWorker(ctx, "cr-test"); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("worker never registered: %v\n%s", err, stderr.String())
	}
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("code-runner::on-config-change") }); err != nil {
		_ = cmd.Process.Kill()
		t.Fatalf("functions never registered: %v\n%s", err, stderr.String())
	}
	// A real run through the bus, served by an isolate host of this binary.
	out, eb, _ := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "node", "code": "return 2 + 2"}, nil)
	if eb != nil || !strings.Contains(string(out), `"result":4`) {
		t.Fatalf("%s %+v\n%s", out, eb, stderr.String())
	}
	res, _, _ := e.Invoke(ctx, "engine::workers::list", map[string]any{}, nil)
	var wl struct {
		Workers []iiitest.WorkerSummary `json:"workers"`
	}
	_ = json.Unmarshal(res, &wl)
	if len(wl.Workers) != 1 || wl.Workers[0].Runtime != "go" || wl.Workers[0].PID != int64(cmd.Process.Pid) || wl.Workers[0].Namespace != "ns1" || wl.Workers[0].Description != description {
		t.Fatalf("%+v", wl.Workers)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
	}
}

// buildBinary builds this command into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "code-runner")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// startServe builds the binary and starts `serve --log-level warn` against
// e, with env added to this process's environment and a TMPDIR of the
// test's own, and waits until it has registered code-runner::run. The
// process is killed when the test ends; its standard error is returned for
// failure messages.
func startServe(t *testing.T, e *iiitest.Engine, env ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	cmd := exec.Command(buildBinary(t), "serve", "--url", e.URL(), "--log-level", "warn")
	cmd.Env = append(append(os.Environ(), env...), "TMPDIR="+t.TempDir())
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("code-runner::run") }); err != nil {
		t.Fatalf("never registered: %v\n%s", err, stderr.String())
	}
	return cmd, stderr
}

// TestServeWithoutAnEngineSaysWhatItWaitsFor: with nothing listening at
// the engine URL, serve says once, in plain words, what it waits for and
// how to start one — before the client's retry lines, and not again with
// each retry.
func TestServeWithoutAnEngineSaysWhatItWaitsFor(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "ws://" + ln.Addr().String()
	_ = ln.Close() // nothing answers there now
	bin := buildBinary(t)
	cmd := exec.Command(bin, "serve", "--url", url, "--config-source", "file", "--config-file", filepath.Join(t.TempDir(), "none.yaml"))
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(stderr.String(), "iii: connect failed") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two retries in 60 s:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := stderr.String()
	plain := "no iii engine answers at " + url + ": code-runner keeps retrying and starts serving as soon as one does."
	if n := strings.Count(out, plain); n != 1 {
		t.Fatalf("the plain-words line appears %d times, want once:\n%s", n, out)
	}
	if strings.Index(out, plain) > strings.Index(out, "iii: connect failed") {
		t.Fatalf("the plain-words line comes after the first retry line:\n%s", out)
	}
	for _, hint := range []string{"--url", "III_URL", "code-runner run"} {
		if !strings.Contains(out, hint) {
			t.Errorf("the line does not mention %s", hint)
		}
	}
}

// serve runs in the process it was started as, with the environment it was
// given: no re-exec adds a GODEBUG setting (a scheduler trace kept the
// runtime's monitor polling 100 times a second while idle; issue 31), and
// an operator's own GODEBUG reaches the runtime as set.
func TestServeKeepsTheEnvironmentItWasGiven(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "ws://" + ln.Addr().String()
	_ = ln.Close() // nothing answers there: serve keeps retrying, which is all this needs
	bin := buildBinary(t)
	for _, godebug := range []string{"", "madvdontneed=1", "schedtrace=2147483647"} {
		cmd := exec.Command(bin, "serve", "--url", url, "--config-source", "file", "--config-file", filepath.Join(t.TempDir(), "none.yaml"))
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GODEBUG=") })
		cmd.Env = append(cmd.Env, "TMPDIR="+t.TempDir())
		if godebug != "" {
			cmd.Env = append(cmd.Env, "GODEBUG="+godebug)
		}
		var stderr syncbuf.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for !strings.Contains(stderr.String(), "iii: connect failed") {
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				t.Fatalf("no retry line in 60 s:\n%s", stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cmd.Process.Pid))
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, kv := range strings.Split(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
				got = append(got, v)
			}
		}
		want := []string{godebug}
		if godebug == "" {
			want = nil
		}
		if !slices.Equal(got, want) {
			t.Errorf("started with GODEBUG %q: the serving process has %q", godebug, got)
		}
	}
}

// `code-runner run` exits as the script does — 0 when it succeeded, 1
// when it failed, as `node file.js` and `python3 file.py` exit — so
// `code-runner run t.py && next` works in a shell; a code-runner error has
// a status of its own (124 for a timeout, as timeout(1)); a TypeScript
// file is node's, whichever of its three extensions it has.
func TestRunExitsAsTheScriptDoes(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		args       []string
		status     int
		want       string
	}{
		{"ok.js", "return 6 * 7", nil, 0, `"result":42`},
		{"ok.py", "result = 6 * 7", nil, 0, `"result":42`},
		{"t.ts", "const n: number = 6 * 7; return n", nil, 0, `"result":42`},
		{"t.mts", "import _ from \"lodash\"; const n: number = _.sum([40, 2]); return n", nil, 0, `"result":42`},
		{"t.cts", "const _ = require(\"lodash\"); const n: number = _.sum([40, 2]); return n", nil, 0, `"result":42`},
		{"t.cjs", "return require(\"lodash\").sum([40, 2])", nil, 0, `"result":42`},
		{"throws.js", "throw new Error(\"boom\")", nil, 1, `Error: boom`},
		{"rejects.js", "async function main() { throw new Error(\"boom\") } main(); console.log(\"after\")", nil, 1, `Error: boom`},
		{"fails.py", "raise ValueError('boom')", nil, 1, `ValueError: boom`},
		{"exits.py", "import sys\nsys.exit(3)", nil, 1, `"exit_code":1`},
		{"loops.js", "for (;;) {}", []string{"--timeout-ms", "300"}, 124, `"code":"code-runner::timeout"`},
		{"big.js", "return 1 //" + strings.Repeat("x", 1<<20), nil, 3, `"code":"code-runner::invalid_request"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name)
			if err := os.WriteFile(path, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, append(append([]string{"run"}, tc.args...), path)...)
			cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
			out, err := cmd.Output()
			status := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tc.status || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %d, want %d; output %s (want it to hold %s)", status, tc.status, out, tc.want)
			}
		})
	}
}

// No directory the worker creates outlives it: after `code-runner run`
// exits, and after `serve` stops on SIGTERM, $TMPDIR holds what it held
// before — in either language, whatever the guests wrote, kept runtimes
// included.
func TestNoTenantFilesOutliveTheProcess(t *testing.T) {
	bin := buildBinary(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "TMPDIR="+tmp)
	listTmp := func() []string { return listTree(tmp) }
	for _, tc := range []struct{ lang, code string }{
		{"python", "import os\nos.makedirs('/work/d')\nopen('/work/d/x', 'wb').write(b'x' * 1000000)\nresult = os.listdir('/work')"},
		{"node", "iii.files.write('x.txt', 'x'.repeat(100000)); return iii.files.list()"},
	} {
		cmd := exec.Command(bin, "run", "--lang", tc.lang, "--code", tc.code)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"success": true`) && !strings.Contains(string(out), `"success":true`) {
			t.Fatalf("%s run: %v\n%s", tc.lang, err, out)
		}
		if left := listTmp(); len(left) != 0 {
			t.Fatalf("after `code-runner run --lang %s`: %v left in $TMPDIR", tc.lang, left)
		}
	}

	// A file runs with the language its extension names.
	scripts := t.TempDir()
	for name, body := range map[string]string{"s.py": "result = 6 * 7", "s.js": "return 6 * 7", "s.mjs": "return 6 * 7"} {
		path := filepath.Join(scripts, name)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", path)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"result": 42`) && !strings.Contains(string(out), `"result":42`) {
			t.Fatalf("code-runner run %s: %v\n%s", name, err, out)
		}
	}

	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cmd := exec.Command(bin, "serve", "--url", e.URL(), "--config-source", "file", "--config-file", filepath.Join(t.TempDir(), "none.yaml"))
	cmd.Env = append(env, "III_WORKER_NAME=cr-tmp")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction("code-runner::inject-guidance") }); err != nil {
		t.Fatalf("functions never registered: %v\n%s", err, stderr.String())
	}
	for _, req := range []map[string]any{
		{"lang": "python", "keep": true, "code": "open('/work/kept', 'w').write('k' * 100000)"},
		{"lang": "python", "code": "open('/work/once', 'w').write('o')"},
		{"lang": "node", "keep": true, "code": "iii.files.write('kept.txt', 'k')"},
		{"lang": "node", "code": "iii.files.write('once.txt', 'o')"},
	} {
		out, eb, err := e.Invoke(ctx, "code-runner::run", req, nil)
		if err != nil || eb != nil || !strings.Contains(string(out), `"success":true`) {
			t.Fatalf("%v: %s %+v %v\n%s", req, out, eb, err, stderr.String())
		}
	}
	if err := e.WaitUntil(ctx, func() bool { return len(listTmp()) >= 3 }); err != nil { // the worker's own directory and the kept runtimes' inside it
		t.Fatalf("the kept runtimes' directories never appeared in $TMPDIR: %v", listTmp())
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, stderr.String())
	}
	if left := listTmp(); len(left) != 0 {
		t.Fatalf("after serve stopped: %v left in $TMPDIR", left)
	}
}

// listTree lists the paths under dir, two levels deep, relative to it.
func listTree(dir string) []string {
	var names []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		names = append(names, e.Name())
		if e.IsDir() {
			inner, _ := os.ReadDir(filepath.Join(dir, e.Name()))
			for _, i := range inner {
				names = append(names, filepath.Join(e.Name(), i.Name()))
			}
		}
	}
	return names
}

// A worker killed with SIGKILL cannot remove its tenants' files; the next
// worker that starts on the same temporary directory removes them, and
// never the files of a worker that is still running.
func TestAKilledWorkersTenantFilesAreRemovedByTheNext(t *testing.T) {
	bin := buildBinary(t)
	tmp := t.TempDir()
	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	start := func(name string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "serve", "--url", e.URL(), "--config-source", "file", "--config-file", filepath.Join(t.TempDir(), "none.yaml"))
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp, "III_WORKER_NAME="+name)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if err := e.WaitUntil(ctx, func() bool {
			_, err := e.WaitWorker(ctx, name)
			return err == nil && e.HasFunction("code-runner::inject-guidance")
		}); err != nil {
			t.Fatalf("%s never registered: %v\n%s", name, err, stderr.String())
		}
		return cmd, &stderr
	}
	workerDirs := func() []string {
		var dirs []string
		for _, n := range listTree(tmp) {
			if !strings.Contains(n, string(filepath.Separator)) {
				dirs = append(dirs, n)
			}
		}
		return dirs
	}
	a, aErr := start("cr-killed")
	for _, req := range []map[string]any{
		{"lang": "python", "keep": true, "code": "open('/work/kept', 'w').write('k' * 100000)"},
		{"lang": "node", "keep": true, "code": "iii.files.write('kept.txt', 'k')"},
	} {
		if out, eb, err := e.Invoke(ctx, "code-runner::run", req, nil); err != nil || eb != nil {
			t.Fatalf("%v: %s %+v %v\n%s", req, out, eb, err, aErr.String())
		}
	}
	killed := workerDirs()
	if len(killed) != 1 || len(listTree(tmp)) < 3 {
		t.Fatalf("the worker's files: %v", listTree(tmp))
	}
	_ = a.Process.Signal(syscall.SIGKILL)
	_ = a.Wait()
	if got := workerDirs(); len(got) != 1 || got[0] != killed[0] {
		t.Fatalf("after SIGKILL: %v", got)
	}
	// A second worker starts: the killed one's files go, its own stay.
	b, bErr := start("cr-next")
	if err := e.WaitUntil(ctx, func() bool { d := workerDirs(); return len(d) >= 1 && !contains(d, killed[0]) }); err != nil {
		t.Fatalf("the killed worker's files were never removed: %v\n%s", listTree(tmp), bErr.String())
	}
	if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python", "keep": true, "code": "open('/work/b', 'w').write('b')"}, nil); err != nil || eb != nil {
		t.Fatalf("%+v %v", eb, err)
	}
	live := workerDirs()
	// A third worker's start-up sweep leaves the running second one alone.
	c, cErr := start("cr-third")
	if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python", "keep": true, "code": "open('/work/c', 'w').write('c')"}, nil); err != nil || eb != nil {
		t.Fatalf("%+v %v\n%s", eb, err, cErr.String())
	}
	for _, d := range live {
		if !contains(workerDirs(), d) {
			t.Fatalf("a live worker's directory %s was removed: %v", d, listTree(tmp))
		}
	}
	for _, cmd := range []*exec.Cmd{b, c} {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	if left := listTree(tmp); len(left) != 0 {
		t.Fatalf("after both stopped: %v left", left)
	}
}

// TestWorkerFileAdvertisesWhatWeBuild: iii.worker.yaml lists exactly the
// targets this worker builds for, and says what the manifest says about
// itself.
func TestWorkerFileAdvertisesWhatWeBuild(t *testing.T) {
	b, err := os.ReadFile("../../iii.worker.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	var desc string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "targets: "); ok {
			for _, t := range strings.Split(strings.Trim(v, "[]"), ",") {
				targets = append(targets, strings.TrimSpace(t))
			}
		}
		if v, ok := strings.CutPrefix(line, "description: "); ok {
			desc = v
		}
	}
	var built []string
	for _, triple := range targetTriples {
		built = append(built, triple)
	}
	if !sameSet(targets, built) {
		t.Fatalf("iii.worker.yaml targets %v, but the worker builds for %v", targets, built)
	}
	if desc != description {
		t.Fatalf("iii.worker.yaml description %q differs from the manifest's", desc)
	}
}

// An isolate host started with a regular file as stdout (not what the
// worker gives it: a pipe) refuses to run, saying why, and leaves the
// file's shared description blocking, as it came.
func TestAHostOnAFileExitsAndLeavesItBlocking(t *testing.T) {
	bin := buildBinary(t)
	f, err := os.CreateTemp(t.TempDir(), "stdout")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, pw, err := os.Pipe() // stdin must be pollable for the host to reach its stdout
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "__isolate-host")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, f, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 5 || !strings.Contains(stderr.String(), "not pollable") {
		t.Fatalf("host on a file: %v, stderr %q; want exit 5 saying it is not pollable", err, stderr.String())
	}
	var flags int
	rc, _ := f.SyscallConn()
	_ = rc.Control(func(fd uintptr) { flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_NONBLOCK != 0 {
		t.Fatal("the host left its stdout's file description non-blocking")
	}
}
