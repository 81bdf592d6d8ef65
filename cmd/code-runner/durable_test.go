package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/syncbuf"
	"github.com/code-runner-go/code-runner/worker"
)

// durableWorker starts the real binary as worker name against e with a
// configuration file of its own (max_runtimes for many namespaces), and
// waits until it serves its own register_function id.
func durableWorker(t *testing.T, bin string, e *iiitest.Engine, name string, yaml ...string) (*exec.Cmd, *syncbuf.Buffer) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "code-runner.yaml")
	if err := os.WriteFile(cfg, []byte("max_runtimes: 96\nwarm_pool_node: 1\nwarm_pool_python: 1\n"+strings.Join(yaml, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "--url", e.URL(), "--config-source", "file", "--config-file", cfg, "--log-level", "info")
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir(), "III_WORKER_NAME="+name)
	logs := &syncbuf.Buffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	own := core.WorkerID(core.FnRegisterFunction, worker.Tag(name))
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(own) }); err != nil {
		t.Fatalf("%s never registered: %v\n%s", name, err, logs.String())
	}
	return cmd, logs
}

// durableFunction is one registered function and what it answers.
type durableFunction struct {
	id, lang, source, description string
	want                          string
}

// durableSet is 50 namespaces of 5 ids each: 40 in node, 10 in python,
// each with a description and a request_format.
func durableSet() []durableFunction {
	var out []durableFunction
	for ns := 0; ns < 50; ns++ {
		for i := 0; i < 5; i++ {
			f := durableFunction{id: fmt.Sprintf("dur%02d::f%d", ns, i), description: fmt.Sprintf("f%d of namespace %d", i, ns),
				want: fmt.Sprintf("%d", ns*100+i+21)}
			if ns < 40 {
				f.lang, f.source = "node", fmt.Sprintf("export function handler(p) { return p.n + %d }", ns*100+i)
			} else {
				f.lang, f.source = "python", fmt.Sprintf("def handler(p):\n    return p['n'] + %d", ns*100+i)
			}
			out = append(out, f)
		}
	}
	return out
}

// each runs fn for every function, eight at a time.
func each(fs []durableFunction, fn func(durableFunction)) {
	var wg sync.WaitGroup
	work := make(chan durableFunction)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				fn(f)
			}
		}()
	}
	for _, f := range fs {
		work <- f
	}
	close(work)
	wg.Wait()
}

// answer calls id with {"n":21}: its result, or the error's code.
func answer(ctx context.Context, e *iiitest.Engine, id string) string {
	out, eb, err := e.Invoke(ctx, id, map[string]any{"n": 21}, nil)
	switch {
	case err != nil:
		return "error " + err.Error()
	case eb != nil:
		return "error " + eb.Code
	}
	return string(out)
}

// A worker SIGKILLed and started again: every function registered before
// — node and python, 50 namespaces of 5 ids with request_formats — answers
// as before within 10 s of the start, and the engine lists them with their
// descriptions and formats again.
func TestRegisteredFunctionsOutliveASIGKILL(t *testing.T) {
	bin := buildBinary(t)
	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	fs := durableSet()
	a, aLogs := durableWorker(t, bin, e, "cr-durable")
	format := map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "number"}}, "required": []string{"n"}}
	var mu sync.Mutex
	var failures []string
	each(fs, func(f durableFunction) {
		_, eb, err := e.Invoke(ctx, core.FnRegisterFunction, map[string]any{"function_id": f.id, "lang": f.lang, "source": f.source,
			"description": f.description, "request_format": format}, nil)
		if err != nil || eb != nil {
			mu.Lock()
			failures = append(failures, fmt.Sprintf("%s: %+v %v", f.id, eb, err))
			mu.Unlock()
		}
	})
	if len(failures) > 0 {
		t.Fatalf("registrations failed: %v\n%s", failures, aLogs.String())
	}
	each(fs, func(f durableFunction) {
		if got := answer(ctx, e, f.id); got != f.want {
			mu.Lock()
			failures = append(failures, f.id+" answered "+got)
			mu.Unlock()
		}
	})
	if len(failures) > 0 {
		t.Fatalf("before the kill: %v", failures)
	}
	_ = a.Process.Signal(syscall.SIGKILL)
	_ = a.Wait()
	// Once the engine has seen the connection go, nothing serves them.
	if err := e.WaitUntil(ctx, func() bool { return !e.HasFunction(fs[0].id) }); err != nil {
		t.Fatal(err)
	}
	if got := answer(ctx, e, fs[0].id); got != "error function_not_found" {
		t.Fatalf("after the kill: %s", got)
	}

	started := time.Now() // the process's start, not its ready line
	_, bLogs := durableWorker(t, bin, e, "cr-durable")
	pending := fs
	for len(pending) > 0 && time.Since(started) < 10*time.Second {
		var next []durableFunction
		for _, f := range pending {
			if answer(ctx, e, f.id) != f.want {
				next = append(next, f)
			}
		}
		pending = next
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if len(pending) > 0 {
		t.Fatalf("%d of %d functions did not answer within 10 s of the start (first %s)\n%s", len(pending), len(fs), pending[0].id, bLogs.String())
	}
	t.Logf("every function answered %v after the worker started again", time.Since(started).Round(time.Millisecond))
	// Their descriptions and formats, as the engine shows them.
	seen := 0
	for i := 0; i < len(fs); i += 32 {
		var ids []string
		for _, f := range fs[i:min(i+32, len(fs))] {
			ids = append(ids, f.id)
		}
		res, eb, err := e.Invoke(ctx, "engine::functions::info", map[string]any{"function_ids": ids}, nil)
		if err != nil || eb != nil {
			t.Fatalf("%+v %v", eb, err)
		}
		var info struct {
			Functions []struct {
				FunctionID    string          `json:"function_id"`
				Description   string          `json:"description"`
				RequestSchema json.RawMessage `json:"request_schema"`
			} `json:"functions"`
		}
		if err := json.Unmarshal(res, &info); err != nil {
			t.Fatal(err)
		}
		for _, f := range info.Functions {
			if strings.HasPrefix(f.Description, "f") && strings.Contains(string(f.RequestSchema), `"required"`) {
				seen++
			}
		}
	}
	if seen != len(fs) {
		t.Fatalf("the engine shows %d of %d functions with their description and format", seen, len(fs))
	}
}

// Two workers: the one serving a namespace is SIGKILLed; the survivor
// serves it within 10 s, on a last-writer (0.22) and a refusing (0.23)
// engine, and every namespace stays on one worker.
func TestASurvivorServesAKilledWorkersNamespaces(t *testing.T) {
	bin := buildBinary(t)
	for _, refusing := range []bool{false, true} {
		t.Run(map[bool]string{false: "0.22", true: "0.23"}[refusing], func(t *testing.T) {
			e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Refusing: refusing})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			a, _ := durableWorker(t, bin, e, "cr-victim")
			_, bLogs := durableWorker(t, bin, e, "cr-survivor")
			on := func(name, id, lang, src string) {
				t.Helper()
				if _, eb, err := e.Invoke(ctx, core.WorkerID(core.FnRegisterFunction, worker.Tag(name)),
					map[string]any{"function_id": id, "lang": lang, "source": src}, nil); err != nil || eb != nil {
					t.Fatalf("%s on %s: %+v %v", id, name, eb, err)
				}
			}
			on("cr-victim", "victim-ns::a", "node", "export function handler(p) { return p.n + 1 }")
			on("cr-victim", "victim-ns::b", "python", "def handler(p):\n    return p['n'] + 2")
			on("cr-survivor", "survivor-ns::c", "node", "export function handler(p) { return p.n + 3 }")
			_ = a.Process.Signal(syscall.SIGKILL)
			_ = a.Wait()
			killed := time.Now()
			for id, want := range map[string]string{"victim-ns::a": "22", "victim-ns::b": "23", "survivor-ns::c": "24"} {
				got := answer(ctx, e, id)
				for got != want && time.Since(killed) < 10*time.Second {
					time.Sleep(100 * time.Millisecond)
					got = answer(ctx, e, id)
				}
				if got != want {
					t.Fatalf("%s answered %s 10 s after the kill\n%s", id, got, bLogs.String())
				}
			}
			t.Logf("the survivor served everything %v after the kill", time.Since(killed).Round(time.Millisecond))
			res, _, _ := e.Invoke(ctx, "engine::functions::list", map[string]any{"prefix": ""}, nil)
			for _, id := range []string{"victim-ns::a", "victim-ns::b", "survivor-ns::c"} {
				if !strings.Contains(string(res), `"function_id":"`+id+`"`) {
					t.Fatalf("%s is not listed", id)
				}
			}
			if strings.Contains(string(res), `"worker_name":"cr-victim"`) {
				t.Fatal("the killed worker is still listed")
			}
		})
	}
}

// SIGTERM drains: the run in flight answers, the process exits 0 once it
// has; with a long drain_secs a second SIGTERM ends the drain at once.
func TestSIGTERMDrainsAndASecondEndsIt(t *testing.T) {
	bin := buildBinary(t)
	e, err := iiitest.New(iiitest.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	slow := func() <-chan string {
		out := make(chan string, 1)
		go func() {
			res, eb, err := e.Invoke(ctx, core.FnRun, map[string]any{"lang": "node", "timeout_ms": 30000,
				"code": "await new Promise((r) => setTimeout(r, 3000)); return 7"}, nil)
			switch {
			case err != nil:
				out <- err.Error()
			case eb != nil:
				out <- eb.Code
			default:
				out <- string(res)
			}
		}()
		return out
	}
	exited := func(cmd *exec.Cmd) <-chan error {
		ch := make(chan error, 1)
		go func() { ch <- cmd.Wait() }()
		return ch
	}

	cmd, logs := durableWorker(t, bin, e, "cr-term", "drain_secs: 30\n")
	running := slow()
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := exited(cmd)
	if got := <-running; !strings.Contains(got, `"result":7`) {
		t.Fatalf("the run in flight answered %s\n%s", got, logs.String())
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, logs.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the worker did not exit once its call had answered\n%s", logs.String())
	}
	t.Logf("drained and exited %v after SIGTERM", time.Since(start).Round(time.Millisecond))

	cmd, logs = durableWorker(t, bin, e, "cr-term2", "drain_secs: 300\n")
	go func() {
		_, _, _ = e.Invoke(ctx, core.FnRun, map[string]any{"lang": "node", "timeout_ms": 30000, "code": "await new Promise((r) => setTimeout(r, 25000)); return 1"}, nil)
	}()
	time.Sleep(500 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done = exited(cmd)
	select {
	case err := <-done:
		t.Fatalf("the worker exited (%v) with a call in flight and drain_secs 300\n%s", err, logs.String())
	case <-time.After(2 * time.Second):
	}
	start = time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(12 * time.Second):
		t.Fatalf("a second SIGTERM did not end the drain\n%s", logs.String())
	}
	t.Logf("exited %v after the second SIGTERM", time.Since(start).Round(time.Millisecond))
}
