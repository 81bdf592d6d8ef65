package iiitest_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func setup(t *testing.T) (*iiitest.Engine, *iii.Client, context.Context) {
	t.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c := iii.New(iii.Options{URL: e.URL(), Name: "w", Logger: quiet()})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	if err := c.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return e, c, ctx
}

const schema = `{"type":"object","additionalProperties":false,"properties":{"n":{"type":"integer","minimum":0}}}`

func call(ctx context.Context, c *iii.Client, fn string, data string) (json.RawMessage, *iii.InvocationError) {
	res, err := c.Invoke(ctx, iii.Call{FunctionID: fn, Data: json.RawMessage(data), Timeout: 5 * time.Second})
	if err != nil {
		return nil, err.(*iii.InvocationError)
	}
	return res, nil
}

func TestConfigurationFakeSemantics(t *testing.T) {
	e, c, ctx := setup(t)
	// Nothing stored: NOT_FOUND, never function_not_found.
	if _, ie := call(ctx, c, "configuration::get", `{"id":"cr"}`); ie == nil || ie.Code != "NOT_FOUND" {
		t.Fatalf("%v", ie)
	}
	// ensure seeds when empty …
	if _, ie := call(ctx, c, "configuration::ensure", `{"id":"cr","name":"cr","description":"d","schema":`+schema+`,"initial_value":{"n":1}}`); ie != nil {
		t.Fatal(ie)
	}
	// … and never overwrites a stored value.
	if _, ie := call(ctx, c, "configuration::ensure", `{"id":"cr","name":"cr","description":"d","schema":`+schema+`,"initial_value":{"n":2}}`); ie != nil {
		t.Fatal(ie)
	}
	res, _ := call(ctx, c, "configuration::get", `{"id":"cr"}`)
	if string(res) != `{"id":"cr","value":{"n":1}}` {
		t.Fatalf("%s", res)
	}
	// register with initial_value overwrites.
	_, _ = call(ctx, c, "configuration::register", `{"id":"cr","name":"cr","description":"d","schema":`+schema+`,"initial_value":{"n":3}}`)
	res, _ = call(ctx, c, "configuration::get", `{"id":"cr"}`)
	if string(res) != `{"id":"cr","value":{"n":3}}` {
		t.Fatalf("%s", res)
	}
	// set validates; a change fires the bound trigger with the event.
	var mu sync.Mutex
	var events []string
	c.RegisterFunction(iii.FunctionDef{ID: "w::changed"}, func(ctx context.Context, r iii.Request) (any, error) {
		mu.Lock()
		events = append(events, string(r.Data))
		mu.Unlock()
		return map[string]bool{"ok": true}, nil
	})
	c.RegisterTrigger(iii.Trigger{TriggerType: "configuration", FunctionID: "w::changed", Config: json.RawMessage(`{"configuration_id":"cr","event_types":["configuration:updated"]}`)})
	_ = e.WaitUntil(ctx, func() bool { return len(e.Bindings("configuration")) == 1 && e.HasFunction("w::changed") })
	if _, ie := call(ctx, c, "configuration::set", `{"id":"cr","value":{"n":-1}}`); ie == nil || ie.Code != "SCHEMA_INVALID" {
		t.Fatalf("%v", ie)
	}
	if eb := e.Config.SetValue(ctx, "cr", map[string]int{"n": 4}); eb != nil {
		t.Fatal(eb)
	}
	if err := e.WaitUntil(ctx, func() bool { mu.Lock(); defer mu.Unlock(); return len(events) == 1 }); err != nil {
		t.Fatal("no configuration:updated event")
	}
	if !strings.Contains(events[0], `"event_type":"configuration:updated"`) || !strings.Contains(events[0], `"new_value":{"n":4}`) || strings.Contains(events[0], "_caller_worker_id") {
		t.Fatalf("event %s", events[0])
	}
	// raw:false expands placeholders; raw:true returns the template.
	e.Config.SetEnv(func(k string) (string, bool) { return map[string]string{"N": "9"}[k], k == "N" })
	e.Config.Store("cr", map[string]string{"n": "${N:5}"})
	res, _ = call(ctx, c, "configuration::get", `{"id":"cr"}`)
	if string(res) != `{"id":"cr","value":{"n":9}}` {
		t.Fatalf("expanded %s", res)
	}
	res, _ = call(ctx, c, "configuration::get", `{"id":"cr","raw":true}`)
	if string(res) != `{"id":"cr","value":{"n":"${N:5}"}}` {
		t.Fatalf("raw %s", res)
	}
	// Switches: without ensure (legacy engines), and without the worker.
	e.Config.SetEnsureAvailable(false)
	if _, ie := call(ctx, c, "configuration::ensure", `{"id":"cr"}`); ie == nil || ie.Code != "function_not_found" {
		t.Fatalf("%v", ie)
	}
	if _, ie := call(ctx, c, "configuration::get", `{"id":"cr","raw":true}`); ie != nil {
		t.Fatalf("get must stay: %v", ie)
	}
	e.Config.SetAvailable(false)
	if _, ie := call(ctx, c, "configuration::get", `{"id":"cr"}`); ie == nil || ie.Code != "function_not_found" {
		t.Fatalf("%v", ie)
	}
}

func TestHarnessFakeRecordsBindingAndFiresHook(t *testing.T) {
	e, c, ctx := setup(t)
	c.RegisterFunction(iii.FunctionDef{ID: "w::hook"}, func(ctx context.Context, r iii.Request) (any, error) {
		var in struct {
			Generate struct {
				SystemPrompt string `json:"system_prompt"`
			} `json:"generate"`
		}
		_ = json.Unmarshal(r.Data, &in)
		return map[string]any{"mutations": map[string]string{"system_prompt": in.Generate.SystemPrompt + "!"}}, nil
	})
	bad := c.RegisterTrigger(iii.Trigger{TriggerType: iiitest.PreGenerateType, FunctionID: "w::hook", Config: json.RawMessage(`{"fail_open":true}`)})
	if _, err := e.WaitFrame(ctx, func(r iiitest.Recorded) bool {
		return !r.Inbound && r.Frame.Type == iii.TypeTriggerRegistrationResult && r.Frame.ID == bad && r.Frame.Error != nil
	}); err != nil {
		t.Fatal("an unknown hook config key was not rejected")
	}
	c.RegisterTrigger(iii.Trigger{TriggerType: iiitest.PreGenerateType, FunctionID: "w::hook", Config: json.RawMessage(`{"on_error":"fail_open"}`)})
	_ = e.WaitUntil(ctx, func() bool { return len(e.Harness.Bindings()) == 1 && e.HasFunction("w::hook") })
	if b := e.Harness.Bindings()[0]; string(b.Config) != `{"on_error":"fail_open"}` {
		t.Fatalf("%s", b.Config)
	}
	out, err := e.Harness.FireHook(ctx, "base")
	if err != nil || len(out) != 1 || string(out[0].Result) != `{"mutations":{"system_prompt":"base!"}}` {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestConsoleFakeFetchesThroughContentFunction(t *testing.T) {
	e, c, ctx := setup(t)
	c.RegisterFunction(iii.FunctionDef{ID: "w::ui-content"}, func(ctx context.Context, r iii.Request) (any, error) {
		var in struct {
			Path string `json:"path"`
		}
		_ = json.Unmarshal(r.Data, &in)
		if in.Path != "w/page.js" {
			return nil, &iii.InvocationError{Code: "UNKNOWN_UI_ASSET", Message: "UNKNOWN_UI_ASSET: no"}
		}
		return map[string]string{"content": "export default function setup() {}", "content_type": "text/javascript; charset=utf-8"}, nil
	})
	_ = e.WaitUntil(ctx, func() bool { return e.HasFunction("w::ui-content") })
	c.RegisterTrigger(iii.Trigger{TriggerType: "console:script", FunctionID: "w::ui-content", Config: json.RawMessage(`{"path":"w/page.js"}`)})
	if err := e.WaitUntil(ctx, func() bool { _, ok := e.Console.Asset("w/page.js"); return ok }); err != nil {
		t.Fatal(err)
	}
	a, _ := e.Console.Asset("w/page.js")
	if a.Content != "export default function setup() {}" || a.ContentType != "text/javascript; charset=utf-8" {
		t.Fatalf("%+v", a)
	}
	id := c.RegisterTrigger(iii.Trigger{TriggerType: "console:style", FunctionID: "w::ui-content", Config: json.RawMessage(`{"path":"w/missing.css"}`)})
	if _, err := e.WaitFrame(ctx, func(r iiitest.Recorded) bool {
		return !r.Inbound && r.Frame.Type == iii.TypeTriggerRegistrationResult && r.Frame.ID == id && r.Frame.Error != nil
	}); err != nil {
		t.Fatal("a failed fetch did not reject the registration")
	}
}
