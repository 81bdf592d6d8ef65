package worker

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/golden"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// setup connects a worker whose router answers every one of the six ids
// with a test handler (test-only: production registers an id only when its
// issue implements it).
func setup(t *testing.T) (*iiitest.Engine, *iii.Client) {
	t.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	c := iii.New(iii.Options{URL: e.URL(), Name: "code-runner", Version: "test", Logger: quiet()})
	t.Cleanup(func() { _ = c.Close() })
	r := core.NewRouter(configsvc.Defaults(), "defaults", Transport{Client: c}, quiet())
	for _, id := range core.WorkerFunctionIDs {
		id := id
		r.Handle(id, core.Route{Terminal: func(ctx context.Context, call *core.Call) (any, error) {
			if strings.Contains(string(call.Payload), "fail") {
				return nil, core.ErrTimeout()
			}
			if strings.Contains(string(call.Payload), "panic") {
				panic("test panic")
			}
			return map[string]string{"served": id}, nil
		}})
	}
	(&Publisher{Client: c, Router: r, Log: quiet()}).Publish(core.WorkerFunctionIDs...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(core.FnOnConfigChange) }); err != nil {
		t.Fatal(err)
	}
	return e, c
}

func TestSixFunctionsRoundTripThroughFunctionsInfo(t *testing.T) {
	e, _ := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// Registration order is the contract's.
	var order []string
	for _, r := range e.Frames() {
		if r.Inbound && r.Frame.Type == iii.TypeRegisterFunction {
			order = append(order, r.Frame.ID)
		}
	}
	if strings.Join(order, ",") != strings.Join(core.WorkerFunctionIDs, ",") {
		t.Fatalf("registration order %v", order)
	}

	res, eb, err := e.Invoke(ctx, "engine::functions::info", map[string]any{"function_ids": core.WorkerFunctionIDs}, nil)
	if err != nil || eb != nil {
		t.Fatalf("%v %+v", err, eb)
	}
	var info struct {
		Functions []struct {
			FunctionID     string          `json:"function_id"`
			Description    string          `json:"description"`
			RequestSchema  json.RawMessage `json:"request_schema"`
			ResponseSchema json.RawMessage `json:"response_schema"`
			Metadata       json.RawMessage `json:"metadata"`
		} `json:"functions"`
	}
	if err := json.Unmarshal(res, &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Functions) != 6 {
		t.Fatalf("%s", res)
	}
	for _, f := range info.Functions {
		t.Run(f.FunctionID, func(t *testing.T) {
			name := strings.TrimPrefix(f.FunctionID, "code-runner::")
			got, _ := json.MarshalIndent(map[string]any{"description": f.Description, "metadata": f.Metadata,
				"request_schema": f.RequestSchema, "response_schema": f.ResponseSchema}, "", "  ")
			golden.Check(t, "info."+name+".golden.json", got)

			var typed struct {
				Schema     string          `json:"$schema"`
				Type       string          `json:"type"`
				Properties json.RawMessage `json:"properties"`
				Ref        string          `json:"$ref"`
			}
			_ = json.Unmarshal(f.ResponseSchema, &typed)
			if typed.Type == "" && typed.Properties == nil && typed.Ref == "" {
				t.Fatal("response schema is untyped; the registry's interface capture rejects it")
			}
			if typed.Schema != "http://json-schema.org/draft-07/schema#" {
				t.Fatalf("response $schema %q", typed.Schema)
			}
			wantInternal := f.FunctionID == core.FnInjectGuidance || f.FunctionID == core.FnUIContent || f.FunctionID == core.FnOnConfigChange
			if (string(f.Metadata) == `{"internal":true}`) != wantInternal {
				t.Fatalf("metadata %s", f.Metadata)
			}
		})
	}
}

// TestSchemasCarryTheContractFacts checks titles, required lists and enums
// against docs/behaviour.md (run, register_function, teardown).
func TestSchemasCarryTheContractFacts(t *testing.T) {
	tests := []struct {
		id, which, title string
		required         []string
		props            []string
	}{
		{core.FnRun, "req", "RunRequest", []string{"code"}, []string{"code", "keep", "lang", "memory_mb", "runtime_id", "timeout_ms"}},
		{core.FnRun, "resp", "RunResponse", []string{"duration_ms", "exit_code", "result", "stderr", "stdout", "success"}, []string{"duration_ms", "exit_code", "result", "runtime_id", "stderr", "stdout", "success"}},
		{core.FnRegisterFunction, "req", "RegisterRequest", []string{"function_id", "lang", "source"}, []string{"description", "function_id", "lang", "request_format", "response_format", "source"}},
		{core.FnRegisterFunction, "resp", "RegisterResponse", []string{"function_id", "registered"}, []string{"function_id", "registered"}},
		{core.FnTeardown, "req", "TeardownRequest", nil, []string{"namespace", "runtime_id"}},
		{core.FnTeardown, "resp", "TeardownResponse", []string{"torn_down", "unregistered"}, []string{"namespace", "runtime_id", "torn_down", "unregistered"}},
		{core.FnInjectGuidance, "resp", "PreGenerateResponse", []string{"mutations"}, []string{"mutations"}},
		{core.FnUIContent, "req", "UiContentRequest", []string{"path"}, []string{"path"}},
		{core.FnUIContent, "resp", "UiContentResponse", []string{"content", "content_type"}, []string{"content", "content_type"}},
		{core.FnOnConfigChange, "resp", "ConfigChangeResponse", []string{"ok"}, []string{"ok"}},
	}
	for _, tc := range tests {
		t.Run(tc.id+" "+tc.which, func(t *testing.T) {
			d := DefOf(tc.id)
			raw := d.RequestFormat
			if tc.which == "resp" {
				raw = d.ResponseFormat
			}
			var s struct {
				Title      string                     `json:"title"`
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			var props []string
			for k := range s.Properties {
				props = append(props, k)
			}
			if s.Title != tc.title || strings.Join(s.Required, ",") != strings.Join(tc.required, ",") || !sameSet(props, tc.props) {
				t.Fatalf("title %q required %v props %v", s.Title, s.Required, props)
			}
		})
	}
	if !strings.Contains(string(DefOf(core.FnRun).RequestFormat), `"enum":["node","python"]`) {
		t.Fatal("run's Lang enum missing")
	}
}

func TestHandlerMapsErrorsToTheWire(t *testing.T) {
	e, _ := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, eb, err := e.Invoke(ctx, core.FnRun, map[string]any{"x": 1}, nil)
	if err != nil || eb != nil || string(res) != `{"served":"code-runner::run"}` {
		t.Fatalf("%s %+v %v", res, eb, err)
	}
	_, eb, _ = e.Invoke(ctx, core.FnRun, "fail", nil)
	if eb == nil || eb.Code != "code-runner::timeout" || eb.Message != "code-runner::timeout: execution exceeded its deadline" || eb.Stacktrace != "" {
		t.Fatalf("D14 wire shape: %+v", eb)
	}
	_, eb, _ = e.Invoke(ctx, core.FnTeardown, "panic", nil)
	if eb == nil || eb.Code != "code-runner::engine" || eb.Message != "code-runner::engine: internal error while handling code-runner::teardown; see the worker logs" {
		t.Fatalf("panic: %+v", eb)
	}
}

func TestTransportCarriesGuestCalls(t *testing.T) {
	e, c := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := Transport{Client: c}
	res, err := tr.Invoke(ctx, core.Invocation{FunctionID: core.FnRun, Data: json.RawMessage(`{}`), Timeout: time.Second})
	if err != nil || string(res) != `{"served":"code-runner::run"}` {
		t.Fatalf("%s %v", res, err)
	}
	_, err = tr.Invoke(ctx, core.Invocation{FunctionID: "nope::x", Timeout: time.Second})
	var re *core.RemoteError
	if !errors.As(err, &re) || re.Code != "function_not_found" || err.Error() != "function_not_found: Function nope::x not found" {
		t.Fatalf("%v", err)
	}
	// Messages that already carry their code are not prefixed twice
	// (docs/behaviour.md#guest-iii-trigger).
	if got := (&core.RemoteError{Code: "code-runner::timeout", Message: "code-runner::timeout: execution exceeded its deadline"}).Error(); got != "code-runner::timeout: execution exceeded its deadline" {
		t.Fatal(got)
	}
	_ = e
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}
