package worker

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/internal/enginetest"
)

// TestAThirdLanguagePlugsIn: a test-only engine ("echo", internal/enginetest)
// is given to the worker as one more core.EngineModule — nothing in core or
// worker names it — and then it is a language like the others: runs,
// kept runtimes with their state, register_function and its guest function
// through the router, teardown, configuration commits, close; the refusal of
// an unknown language names it; node and python still run beside it.
func TestAThirdLanguagePlugsIn(t *testing.T) {
	var echo *enginetest.Echo
	bus := enginetest.NewBus()
	transport := &LocalTransport{}
	app, err := NewApp(AppOptions{Config: configsvc.Defaults(), Source: "test", Transport: transport, Bus: bus, Log: quiet(),
		Engines: append(testEngines(0), enginetest.EchoModule(func(e *enginetest.Echo) { echo = e }))})
	if err != nil {
		t.Fatal(err)
	}
	transport.App = app
	closed := false
	defer func() {
		if !closed {
			app.Close()
		}
	}()
	ctx := context.Background()
	call := func(fn, payload string) (json.RawMessage, error) {
		t.Helper()
		res, err := app.Router.Invoke(ctx, fn, json.RawMessage(payload), nil)
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(res)
		return b, nil
	}

	out, err := call(core.FnRun, `{"lang":"echo","code":"hello"}`)
	if err != nil || !strings.Contains(string(out), `"result":{"code":"hello","turn":1}`) || !strings.Contains(string(out), `"stdout":"hello\n"`) {
		t.Fatalf("an echo one-shot: %s %v", out, err)
	}
	out, err = call(core.FnRun, `{"lang":"echo","code":"a","keep":true}`)
	var kept core.RunResponse
	if err != nil || json.Unmarshal(out, &kept) != nil || kept.RuntimeID == "" {
		t.Fatalf("an echo kept runtime: %s %v", out, err)
	}
	out, err = call(core.FnRun, `{"runtime_id":"`+kept.RuntimeID+`","code":"b"}`)
	if err != nil || !strings.Contains(string(out), `"result":{"code":"b","turn":2}`) {
		t.Fatalf("the kept runtime's second turn: %s %v", out, err)
	}
	if _, err := call(core.FnTeardown, `{"runtime_id":"`+kept.RuntimeID+`"}`); err != nil {
		t.Fatal(err)
	}

	_, err = call(core.FnRun, `{"lang":"ruby","code":"x"}`)
	if want := "code-runner::invalid_request: invalid request: `lang` must be \"echo\", \"node\" or \"python\""; err == nil || err.Error() != want {
		t.Fatalf("an unknown language: %v, want %q", err, want)
	}

	if out, err := call(core.FnRegisterFunction, `{"function_id":"seam::greet","lang":"echo","source":"hi","description":"echoes"}`); err != nil || !strings.Contains(string(out), `"registered":true`) {
		t.Fatalf("register_function in echo: %s %v", out, err)
	}
	if !bus.Has("seam::greet") {
		t.Fatal("the echo function was not published")
	}
	res, err := bus.Invoke(t, "seam::greet", `{"n":1}`)
	if err != nil || string(res) != `{"payload":{"n":1},"source":"hi"}` {
		t.Fatalf("the echo function through its route: %s %v", res, err)
	}
	if out, err := call(core.FnTeardown, `{"namespace":"seam"}`); err != nil || !strings.Contains(string(out), `"seam::greet"`) {
		t.Fatalf("the namespace teardown: %s %v", out, err)
	}
	if bus.Has("seam::greet") {
		t.Fatal("the echo function outlived its namespace")
	}

	for _, lang := range []string{"node", "python"} {
		code := map[string]string{"node": "return 6 * 7", "python": "result = 6 * 7"}[lang]
		payload, _ := json.Marshal(map[string]string{"lang": lang, "code": code})
		if out, err := call(core.FnRun, string(payload)); err != nil || !strings.Contains(string(out), `"result":42`) {
			t.Fatalf("%s beside echo: %s %v", lang, out, err)
		}
	}

	before := echo.Commits.Load()
	c := configsvc.Defaults()
	c.MaxResultBytes = 4096
	if err := app.ApplyConfig(ctx, c, "test"); err != nil {
		t.Fatal(err)
	}
	if echo.Commits.Load() != before+1 {
		t.Fatalf("a configuration change committed the echo engine %d times", echo.Commits.Load()-before)
	}
	app.Close()
	closed = true
	if !echo.Closed.Load() {
		t.Fatal("closing the worker left the echo engine open")
	}
}
