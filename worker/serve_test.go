package worker

import (
	"context"
	"encoding/json"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/node"
	"github.com/code-runner-go/code-runner/engines/python"
	"github.com/code-runner-go/code-runner/engines/standard"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/configsvc/sources"
	"github.com/code-runner-go/code-runner/guidance"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/syncbuf"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"github.com/code-runner-go/code-runner/ui"
)

type served struct {
	app      *App
	logs     *syncbuf.Buffer
	stopOnce sync.Once
	cancel   context.CancelFunc
	done     chan error
}

func envFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// startServe runs Serve in-process against e and waits until it is ready.
func startServe(t testing.TB, e *iiitest.Engine, o ServeOptions) *served {
	t.Helper()
	logs := &syncbuf.Buffer{}
	o.URL = e.URL()
	if o.WorkerName == "" {
		o.WorkerName = "code-runner"
	}
	if o.ConfigSource == "" {
		o.ConfigSource = "engine"
	}
	if o.Env == nil {
		o.Env = envFrom(nil)
	}
	if o.Engines == nil {
		o.Engines = testEngines(0)
	}
	if o.Log == nil { // a caller's own logger (benchmarks: the production level) leaves logs empty
		o.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ready := make(chan *App, 1)
	o.Ready = func(a *App) { ready <- a }
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{logs: logs, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- Serve(ctx, o) }()
	select {
	case s.app = <-ready:
	case err := <-s.done:
		cancel()
		t.Fatalf("serve ended before ready: %v\n%s", err, logs.String())
	case <-time.After(180 * time.Second): // a cold python.wasm compile under -race is slow
		cancel()
		t.Fatalf("serve never became ready\n%s", logs.String())
	}
	t.Cleanup(s.stop)
	last := "code-runner::inject-guidance"
	if o.ConfigSource == "engine" {
		last = "code-runner::on-config-change@" + Tag(o.WorkerName)
	}
	if err := e.WaitUntil(ctxT(t), func() bool { return e.HasFunction(last) }); err != nil {
		t.Fatalf("functions never registered\n%s", logs.String())
	}
	return s
}

// stop stops the worker and waits (up to 10 s) for Serve to return; a
// second call returns at once.
func (s *served) stop() {
	s.stopOnce.Do(func() {
		s.cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
		}
	})
}

// waitLog waits until the worker's log contains want.
func (s *served) waitLog(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("log never contained %q:\n%s", want, s.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testCacheDir is the python compilation cache shared with the python
// engine's tests, so python.wasm compiles once per machine.
var testCacheDir = filepath.Join(os.TempDir(), "code-runner-test-cache")

// testEngines are the shipped engines as the tests run them: isolate hosts
// from the test binary, the shared compilation cache, and python's
// long-turn time (0: its default).
func testEngines(longTurn time.Duration) []core.EngineModule {
	return standard.Modules(standard.Options{NodeHost: []string{os.Args[0]}, NodeEnv: []string{"CODE_RUNNER_ISOLATE_HOST=1"},
		PythonCacheDir: testCacheDir, PythonLongTurn: longTurn})
}

// nodeOf and pythonOf are a's shipped engines (the tests look inside them).
func nodeOf(a *App) *node.Engine     { return a.Engines[node.Lang].(*node.Engine) }
func pythonOf(a *App) *python.Engine { return a.Engines[python.Lang].(*python.Engine) }

func newTestEngine(t *testing.T) *iiitest.Engine {
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func runNode(t *testing.T, e *iiitest.Engine, req map[string]any) (map[string]any, *iii.ErrorBody) {
	t.Helper()
	if req["lang"] == nil && req["runtime_id"] == nil {
		req["lang"] = "node"
	}
	res, eb, err := e.Invoke(ctxT(t), "code-runner::run", req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if eb != nil {
		return nil, eb
	}
	var out map[string]any
	_ = json.Unmarshal(res, &out)
	return out, nil
}

func writeSeed(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "seed.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFirstBootSeedsSecondBootKeepsOperatorValue(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{SeedPath: writeSeed(t, "max_runtimes: 8\nscratch_mb: 64\n")})
	entry, ok := e.Config.Entry("code-runner")
	if !ok {
		t.Fatal("entry not registered")
	}
	var v map[string]any
	_ = json.Unmarshal(entry.Value, &v)
	if v["max_runtimes"] != float64(8) || v["scratch_mb"] != float64(64) || v["heap_mb"] != float64(128) || len(v) != len(configsvc.Keys()) {
		t.Fatalf("seeded %s", entry.Value)
	}
	if string(entry.Metadata) != `{"ui_form":"code-runner"}` || entry.Description != sources.EntryDescription || entry.Name != "code-runner" {
		t.Fatalf("%+v", entry)
	}
	var calls []string
	for _, c := range e.Config.Calls() {
		calls = append(calls, c.Function)
	}
	if calls[0] != "configuration::ensure" {
		t.Fatalf("calls %v", calls)
	}
	// The operator changes a value, the worker restarts with the same seed.
	op := configsvc.Defaults()
	op.MaxRuntimes = 3
	if eb := e.Config.SetValue(ctxT(t), "code-runner", json.RawMessage(op.JSON())); eb != nil {
		t.Fatal(eb)
	}
	s.stop()
	s2 := startServe(t, e, ServeOptions{SeedPath: writeSeed(t, "max_runtimes: 8\n")})
	if got := s2.app.Router.Live().Config.MaxRuntimes; got != 3 {
		t.Fatalf("second boot overwrote the operator's value: max_runtimes %d", got)
	}
}

func TestLegacyPathWithoutEnsure(t *testing.T) {
	e := newTestEngine(t)
	e.Config.SetEnsureAvailable(false)
	s := startServe(t, e, ServeOptions{Env: envFrom(map[string]string{"III_CONFIG_NAME": "  cr-2 "})})
	if !strings.Contains(s.logs.String(), "engine lacks configuration::ensure; using non-atomic legacy initialization; upgrade to >=0.24.1 for concurrent-write safety") {
		t.Fatal("no legacy WARN")
	}
	entry, ok := e.Config.Entry("cr-2")
	if !ok || !strings.Contains(string(entry.Value), `"max_runtimes":32`) || string(entry.Metadata) != `{"ui_form":"code-runner"}` {
		t.Fatalf("%+v", entry)
	}
	s.stop()
	// A stored value is never overwritten by the legacy path.
	stored := configsvc.Defaults()
	stored.MaxRuntimes = 5
	e.Config.Store("cr-2", json.RawMessage(stored.JSON()))
	s2 := startServe(t, e, ServeOptions{Env: envFrom(map[string]string{"III_CONFIG_NAME": "cr-2"}), SeedPath: writeSeed(t, "max_runtimes: 9\n")})
	if got := s2.app.Router.Live().Config.MaxRuntimes; got != 5 {
		t.Fatalf("legacy path overwrote a stored value: %d", got)
	}
	for _, c := range e.Config.Calls() {
		if c.Function == "configuration::register" && strings.Contains(string(c.Data), `"initial_value"`) && strings.Contains(string(c.Data), `"max_runtimes":9`) {
			t.Fatal("register sent the seed over a stored value")
		}
	}
}

func TestEngineModeFailsWithoutConfigurationWorkerAndFallbackUsesFile(t *testing.T) {
	e := newTestEngine(t)
	e.Config.SetAvailable(false)
	err := Serve(ctxT(t), ServeOptions{URL: e.URL(), WorkerName: "code-runner", ConfigSource: "engine", Env: envFrom(nil), Log: quiet(),
		Engines: testEngines(0)})
	if err == nil || !strings.Contains(err.Error(), "configuration worker unavailable") {
		t.Fatalf("%v", err)
	}
	path := filepath.Join(t.TempDir(), "code-runner.yaml")
	_ = os.WriteFile(path, []byte("max_result_bytes: 77\n"), 0o600)
	s := startServe(t, e, ServeOptions{ConfigSource: "engine-or-file", ConfigFile: path})
	if got := s.app.Router.Live().Config.MaxResultBytes; got != 77 {
		t.Fatalf("fallback did not use the file: %d", got)
	}
	if !strings.Contains(s.logs.String(), "configuration worker unavailable (") || !strings.Contains(s.logs.String(), "using local config file "+path) {
		t.Fatalf("no fallback WARN:\n%s", s.logs.String())
	}
}

func TestSetOfEachKeyAppliesOnNextCall(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{})
	ctx := ctxT(t)
	set := func(mut func(*configsvc.Config)) {
		t.Helper()
		c := s.app.Router.Live().Config
		mut(&c)
		// The INFO line is written after the config_changed hook swapped the
		// pipelines; the store's sequence moves before that.
		applied := strings.Count(s.logs.String(), "configuration applied")
		if eb := e.Config.SetValue(ctx, "code-runner", json.RawMessage(c.JSON())); eb != nil {
			t.Fatal(eb)
		}
		if err := e.WaitUntil(ctx, func() bool { return strings.Count(s.logs.String(), "configuration applied") > applied }); err != nil {
			t.Fatalf("change never applied\n%s", s.logs.String())
		}
	}
	// Output caps.
	set(func(c *configsvc.Config) { c.MaxResultBytes = 10; c.MaxStreamBytes = 60 })
	out, _ := runNode(t, e, map[string]any{"code": `console.log("z".repeat(500)); return [1,2,3,4,5,6,7,8,9]`})
	if !strings.Contains(out["result"].(string), "(9 array elements)") || len(out["stdout"].(string)) > 60 {
		t.Fatalf("%v", out)
	}
	s.waitLog(t, "max_result_bytes 32768 → 10 (next call)")
	// Timeouts: default_timeout_ms 200 → a loop without timeout_ms times out;
	// max_timeout_ms 300 clamps timeout_ms 5000.
	set(func(c *configsvc.Config) { c.DefaultTimeoutMS = 200; c.MaxTimeoutMS = 300 })
	start := time.Now()
	if _, eb := runNode(t, e, map[string]any{"code": "for(;;){}"}); eb == nil || eb.Code != "code-runner::timeout" {
		t.Fatalf("%+v", eb)
	}
	if _, eb := runNode(t, e, map[string]any{"code": "for(;;){}", "timeout_ms": 5000}); eb == nil || eb.Code != "code-runner::timeout" {
		t.Fatalf("%+v", eb)
	}
	_ = start
	// max_runtimes 0 refuses new runtimes at once.
	set(func(c *configsvc.Config) { c.MaxRuntimes = 0; c.DefaultTimeoutMS = 5000; c.MaxTimeoutMS = 30000 })
	if _, eb := runNode(t, e, map[string]any{"code": "return 1"}); eb == nil || eb.Message != "code-runner::capacity: all 0 runtime slots are in use" {
		t.Fatalf("%+v", eb)
	}
	// inject_guidance false → the no-op on the next hook call.
	set(func(c *configsvc.Config) { c.MaxRuntimes = 32; c.InjectGuidance = false })
	res, _, _ := e.Invoke(ctx, "code-runner::inject-guidance", map[string]any{"generate": map[string]any{"system_prompt": "base"}}, nil)
	if string(res) != `{"mutations":{}}` {
		t.Fatalf("%s", res)
	}
	// heap_mb: existing kept runtimes keep theirs; the log says so.
	kept, _ := runNode(t, e, map[string]any{"code": "return 1", "keep": true})
	set(func(c *configsvc.Config) { c.HeapMB = 256 })
	s.waitLog(t, "heap_mb 128 → 256 (node runtimes created from now on; 1 live runtime keeps 128)")
	if out, eb := runNode(t, e, map[string]any{"runtime_id": kept["runtime_id"], "code": "return 2"}); eb != nil || out["result"] != float64(2) {
		t.Fatalf("%v %+v", out, eb)
	}
}

func TestInvalidStoredValueIsRejectedAndOldStays(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{})
	ctx := ctxT(t)
	s.waitLog(t, "configuration refreshed (configuration worker): no changes") // the boot-time refresh
	before := s.app.Router.Live()
	e.Config.Store("code-runner", map[string]any{"max_runtimes": -1, "bogus": true})
	res, eb, _ := e.Invoke(ctx, "code-runner::on-config-change", map[string]any{"forged": "payload"}, nil)
	if eb != nil || string(res) != `{"ok":true}` {
		t.Fatalf("%s %+v", res, eb)
	}
	if s.app.Router.Live() != before {
		t.Fatal("an invalid value replaced the live configuration")
	}
	// The configuration worker's own validation refuses the value on get
	// (SCHEMA_INVALID); either way the reload fails loudly and nothing changes.
	s.waitLog(t, "configuration reload failed; the previous configuration stays live")
	if s.app.Router.Live() != before {
		t.Fatal("live configuration changed")
	}
}

// TestConcurrentReloadsNeverServeAMixedSnapshot alternates two
// configurations while runs stream through; each response must be capped
// consistently (both caps of one snapshot or neither).
func TestConcurrentReloadsNeverServeAMixedSnapshot(t *testing.T) {
	e := newTestEngine(t)
	s := startServe(t, e, ServeOptions{})
	ctx := ctxT(t)
	a := configsvc.Defaults()
	a.MaxResultBytes, a.MaxStreamBytes = 10, 60
	b := configsvc.Defaults()
	stop := make(chan struct{})
	var flips atomic.Int64
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c := a
			if i%2 == 1 {
				c = b
			}
			_ = e.Config.SetValue(ctx, "code-runner", json.RawMessage(c.JSON()))
			flips.Add(1)
			time.Sleep(2 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				out, eb := runNode(t, e, map[string]any{"code": `console.log("q".repeat(200)); return "r".repeat(100)`})
				if eb != nil {
					t.Errorf("%+v", eb)
					return
				}
				resultCapped := strings.HasPrefix(out["result"].(string), "<omitted")
				streamCapped := strings.Contains(out["stdout"].(string), "truncated")
				if resultCapped != streamCapped {
					t.Errorf("mixed snapshot: result capped %v, stdout capped %v", resultCapped, streamCapped)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if flips.Load() < 5 {
		t.Fatalf("only %d reloads happened", flips.Load())
	}
	_ = s
}

func TestGuidanceHookBindingAndMutation(t *testing.T) {
	e := newTestEngine(t)
	startServe(t, e, ServeOptions{})
	ctx := ctxT(t)
	if err := e.WaitUntil(ctx, func() bool { return len(e.Harness.Bindings()) == 1 }); err != nil {
		t.Fatal("hook never bound")
	}
	b := e.Harness.Bindings()[0]
	if b.FunctionID != "code-runner::inject-guidance" || string(b.Config) != `{"on_error":"fail_open"}` || b.Metadata != nil {
		t.Fatalf("%+v", b)
	}
	out, err := e.Harness.FireHook(ctx, "You are helpful.")
	if err != nil || out[0].Error != nil {
		t.Fatalf("%+v %v", out, err)
	}
	var r guidance.Response
	_ = json.Unmarshal(out[0].Result, &r)
	if r.Mutations.SystemPrompt == nil || *r.Mutations.SystemPrompt != "You are helpful.\n\n"+guidance.Text {
		t.Fatalf("%s", out[0].Result)
	}
	out, _ = e.Harness.FireHook(ctx, "")
	if string(out[0].Result) != `{"mutations":{}}` {
		t.Fatalf("%s", out[0].Result)
	}
	res, eb, _ := e.Invoke(ctx, "code-runner::inject-guidance", "not an object", nil)
	if eb != nil || string(res) != `{"mutations":{}}` {
		t.Fatalf("undecodable payload: %s %+v", res, eb)
	}
	// The configuration trigger is bound with exactly the contract's config.
	// It targets this worker's own id: in a group, every worker applies
	// each change once (contract §24.4).
	tag := Tag("code-runner")
	cb := e.Bindings("configuration")
	if len(cb) != 1 || cb[0].FunctionID != "code-runner::on-config-change@"+tag || string(cb[0].Config) != `{"configuration_id":"code-runner","event_types":["configuration:updated"]}` {
		t.Fatalf("%+v", cb)
	}
	// Registration order: run, teardown, register_function, inject-guidance, …, on-config-change last.
	var order []string
	for _, r := range e.Frames() {
		if r.Inbound && r.Frame.Type == iii.TypeRegisterFunction && strings.HasPrefix(r.Frame.ID, "code-runner::") {
			order = append(order, r.Frame.ID)
		}
	}
	// Then the worker's own per-worker ids, its on-config-change last.
	if strings.Join(order, ",") != "code-runner::run,code-runner::teardown,code-runner::register_function,code-runner::inject-guidance,code-runner::ui-content,code-runner::on-config-change,code-runner::run@"+tag+",code-runner::teardown@"+tag+",code-runner::register_function@"+tag+",code-runner::workers-changed@"+tag+",code-runner::on-config-change@"+tag {
		t.Fatalf("%v", order)
	}
}

func TestFileModeEndToEnd(t *testing.T) {
	e := newTestEngine(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "code-runner.yaml")
	if err := os.WriteFile(path, []byte("max_result_bytes: 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, e, ServeOptions{ConfigSource: "file", ConfigFile: path})
	ctx := ctxT(t)
	if len(e.Config.Calls()) != 0 {
		t.Fatal("file mode talked to the configuration worker")
	}
	if s.app.Router.Live().Config.MaxResultBytes != 1000 {
		t.Fatal("file not loaded")
	}
	// A valid edit, written the way editors do (temp file + rename).
	replace := func(body string) {
		tmp := filepath.Join(dir, ".code-runner.yaml.swp")
		_ = os.WriteFile(tmp, []byte(body), 0o600)
		_ = os.Rename(tmp, path)
	}
	replace("max_result_bytes: 2000\nmax_runtimes: 7\n")
	if err := e.WaitUntil(ctx, func() bool { return s.app.Router.Live().Config.MaxResultBytes == 2000 }); err != nil {
		t.Fatalf("edit never applied\n%s", s.logs.String())
	}
	// An invalid edit: one WARN line listing both problems; nothing changes.
	seq := s.app.Router.Live().Seq
	replace("max_result_bytes: lots\ncolour: red\n")
	if err := e.WaitUntil(ctx, func() bool { return strings.Contains(s.logs.String(), "rejected (2 problem(s))") }); err != nil {
		t.Fatalf("no WARN\n%s", s.logs.String())
	}
	line := ""
	for _, l := range strings.Split(s.logs.String(), "\n") {
		if strings.Contains(l, "rejected (2 problem(s))") {
			line = l
		}
	}
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "/colour: unknown key") || !strings.Contains(line, "/max_result_bytes: invalid type") || !strings.Contains(line, "the previous configuration stays live") {
		t.Fatalf("%s", line)
	}
	if s.app.Router.Live().Seq != seq {
		t.Fatal("an invalid edit half-applied")
	}
	// Delete, then recreate.
	_ = os.Remove(path)
	time.Sleep(700 * time.Millisecond)
	if s.app.Router.Live().Config.MaxResultBytes != 2000 {
		t.Fatal("deleting the file changed the live configuration")
	}
	_ = os.WriteFile(path, []byte("max_result_bytes: 3000\n"), 0o600)
	if err := e.WaitUntil(ctx, func() bool { return s.app.Router.Live().Config.MaxResultBytes == 3000 }); err != nil {
		t.Fatalf("recreated file never applied\n%s", s.logs.String())
	}
	s.waitLog(t, "max_result_bytes 2000 → 3000 (next call)")
}

func TestConsoleFetchesAssetsThroughTheContentFunction(t *testing.T) {
	e := newTestEngine(t)
	startServe(t, e, ServeOptions{})
	ctx := ctxT(t)
	for _, a := range ui.Assets {
		if err := e.WaitUntil(ctx, func() bool { _, ok := e.Console.Asset(a.Path); return ok }); err != nil {
			t.Fatalf("%s never fetched", a.Path)
		}
		got, _ := e.Console.Asset(a.Path)
		if got.Content != string(ui.Embedded(a.File)) || got.ContentType != a.ContentType || got.FunctionID != "code-runner::ui-content" {
			t.Fatalf("%s: %q %q (%d bytes)", a.Path, got.FunctionID, got.ContentType, len(got.Content))
		}
	}
	for _, tt := range []string{"console:script", "console:style"} {
		b := e.Bindings(tt)
		if len(b) != 1 || !strings.HasPrefix(string(b[0].Config), `{"path":"code-runner/`) {
			t.Fatalf("%s bindings %+v", tt, b)
		}
	}
	_, eb, _ := e.Invoke(ctx, "code-runner::ui-content", map[string]string{"path": "code-runner/nope.js"}, nil)
	if eb == nil || eb.Code != "UNKNOWN_UI_ASSET" || eb.Message != "UNKNOWN_UI_ASSET: 'code-runner/nope.js' is not one of this worker's ui assets (expected one of: code-runner/page.js, code-runner/styles.css)" {
		t.Fatalf("%+v", eb)
	}
}

func TestUIHotReloadRegistersFreshTriggerThenDropsOld(t *testing.T) {
	e := newTestEngine(t)
	dir := t.TempDir()
	for _, a := range ui.Assets {
		_ = os.WriteFile(filepath.Join(dir, a.File), ui.Embedded(a.File), 0o644)
	}
	startServe(t, e, ServeOptions{Env: envFrom(map[string]string{"III_CODE_RUNNER_UI_WATCH": filepath.Join(dir, "page.js")})})
	ctx := ctxT(t)
	_ = e.WaitUntil(ctx, func() bool { _, ok := e.Console.Asset("code-runner/page.js"); return ok })
	before := e.Bindings("console:script")[0].ID
	v2 := "export default function setup(host) { /* v2 */ }\n"
	_ = os.WriteFile(filepath.Join(dir, "page.js"), []byte(v2), 0o644)
	if err := e.WaitUntil(ctx, func() bool { a, _ := e.Console.Asset("code-runner/page.js"); return a.Content == v2 }); err != nil {
		t.Fatal("the console never fetched the new bytes")
	}
	if err := e.WaitUntil(ctx, func() bool { b := e.Bindings("console:script"); return len(b) == 1 && b[0].ID != before }); err != nil {
		t.Fatalf("old trigger not replaced: %+v", e.Bindings("console:script"))
	}
}

// Lowering idle_ttl_secs wakes the sweeper: runtimes already idle longer than
// the new value are reaped within a couple of seconds of the change, not
// after the wait the sweeper began under the old value (60 s at the default
// 900). The wait below is only a failure bound, far under 60 s.
func TestLoweredIdleTTLReapsAtOnce(t *testing.T) {
	for _, mode := range []string{"engine", "file"} {
		t.Run(mode, func(t *testing.T) {
			e := newTestEngine(t)
			o := ServeOptions{}
			path := filepath.Join(t.TempDir(), "code-runner.yaml")
			if mode == "file" {
				if err := os.WriteFile(path, []byte("idle_ttl_secs: 900\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				o = ServeOptions{ConfigSource: "file", ConfigFile: path}
			}
			s := startServe(t, e, o)
			ctx := ctxT(t)
			var ids []string
			for _, lang := range []string{"node", "python"} {
				out, eb := runNode(t, e, map[string]any{"lang": lang, "code": "result = 1", "keep": true})
				if lang == "node" {
					out, eb = runNode(t, e, map[string]any{"lang": lang, "code": "return 1", "keep": true})
				}
				if eb != nil || out["runtime_id"] == nil {
					t.Fatalf("%s keep: %v %+v", lang, out, eb)
				}
				ids = append(ids, out["runtime_id"].(string))
			}
			if _, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": "ttl-app::f", "lang": "node", "source": "function handler(p) { return 1 }"}, nil); err != nil || eb != nil {
				t.Fatalf("register: %v %+v", err, eb)
			}
			if !e.HasFunction("ttl-app::f") {
				t.Fatal("registered function not on the engine")
			}
			// The sweeper ticked at start and now waits 60 s; lower the TTL.
			changed := time.Now()
			if mode == "engine" {
				c := s.app.Router.Live().Config
				c.IdleTTLSecs = 1
				if eb := e.Config.SetValue(ctx, "code-runner", json.RawMessage(c.JSON())); eb != nil {
					t.Fatal(eb)
				}
			} else {
				tmp := path + ".tmp"
				_ = os.WriteFile(tmp, []byte("idle_ttl_secs: 1\n"), 0o600)
				_ = os.Rename(tmp, path)
			}
			bound, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := e.WaitUntil(bound, func() bool { return !e.HasFunction("ttl-app::f") }); err != nil {
				t.Fatalf("the idle node namespace was not reaped %v after the change\n%s", time.Since(changed), s.logs.String())
			}
			for _, id := range ids {
				if err := e.WaitUntil(bound, func() bool { return len(s.app.Registry.Kept()) == 0 }); err != nil {
					t.Fatalf("kept runtimes not reaped %v after the change", time.Since(changed))
				}
				_, eb := runNode(t, e, map[string]any{"runtime_id": id, "code": "return 1"})
				want := "code-runner::expired: runtime " + id + " expired: it was reaped or killed and its functions unregistered — call run again without this runtime_id to get a fresh one (its scratch directory starts empty)"
				if eb == nil || eb.Code != "code-runner::expired" || eb.Message != want {
					t.Fatalf("after reap: %+v", eb)
				}
			}
		})
	}
}

// TestProcsLeavesRoomBesideComputingGuests: a served worker runs with
// tuning.ExtraProcs more Ps than the runtime's default, so guests computing on
// every CPU leave Ps for the bus (docs/architecture.md, "Why spare Ps?"); an
// operator's GOMAXPROCS is kept as set.
func TestProcsLeavesRoomBesideComputingGuests(t *testing.T) {
	for _, tc := range []struct {
		current int
		envSet  bool
		want    int
	}{
		{2, false, 4}, {1, false, 3}, {16, false, 18},
		{2, true, 2}, {7, true, 7},
	} {
		if got := tuning.ServeProcs(tc.current, tc.envSet); got != tc.want {
			t.Errorf("Procs(%d, GOMAXPROCS set=%v) = %d, want %d", tc.current, tc.envSet, got, tc.want)
		}
	}
}

// governed starts a served worker whose GOMAXPROCS a governor (1 to 3 Ps,
// 50 ms of calm) sizes on the real runtime, once its pools are full and the
// boot work is over; applied lists every value the governor set.
func governed(t *testing.T, longTurn time.Duration) (e *iiitest.Engine, s *served, applied func() []int) {
	t.Helper()
	prev := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(prev) })
	var mu sync.Mutex
	var sets []int
	gov := tuning.NewGovernor(1, 3, 50*time.Millisecond, func(n int) int {
		mu.Lock()
		sets = append(sets, n)
		mu.Unlock()
		return runtime.GOMAXPROCS(n)
	})
	t.Cleanup(gov.Close)
	e = newTestEngine(t)
	s = startServe(t, e, ServeOptions{Procs: gov, Engines: testEngines(longTurn)})
	if err := pythonOf(s.app).WaitReady(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	settle(t, e, s)
	return e, s, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sets...)
	}
}

// settle waits until the warm pools are full and the worker is back on one
// P: boot work (the python compile, the pools' boots beside a call) raises
// it.
func settle(t *testing.T, e *iiitest.Engine, s *served) {
	t.Helper()
	if err := e.WaitUntil(ctxT(t), func() bool { return pythonOf(s.app).Parked() >= 2 && nodeOf(s.app).Parked() >= 2 }); err != nil {
		t.Fatal("the warm pools never filled")
	}
	waitOneP(t, e)
}

func waitOneP(t *testing.T, e *iiitest.Engine) {
	t.Helper()
	if err := e.WaitUntil(ctxT(t), func() bool { return runtime.GOMAXPROCS(0) == 1 }); err != nil {
		t.Fatalf("never back to one P (GOMAXPROCS %d)", runtime.GOMAXPROCS(0))
	}
}

// TestOneCallerAtATimeKeepsOneP: a served worker answering one caller at a
// time — node and python one-shots, python kept turns — never changes
// GOMAXPROCS from one P; overlapping callers raise it to the high value,
// and it comes back to one P after the calm period. (Long python turns,
// which raise it too, are left out: the long-turn time is an hour here.)
func TestOneCallerAtATimeKeepsOneP(t *testing.T) {
	e, s, applied := governed(t, time.Hour)
	ctx := ctxT(t)
	kept, eb := runNode(t, e, map[string]any{"lang": "python", "code": "n = 0", "keep": true})
	if eb != nil {
		t.Fatalf("%+v", eb)
	}
	settle(t, e, s) // the kept runtime took a pooled interpreter: a boot refills the pool
	before := len(applied())
	for i := 0; i < 30; i++ {
		req := map[string]any{"lang": "node", "code": "return 1"}
		switch i % 3 {
		case 1:
			req = map[string]any{"lang": "python", "code": "result = 1"}
		case 2:
			req = map[string]any{"runtime_id": kept["runtime_id"], "code": "n += 1\nresult = 1"}
		}
		if out, eb := runNode(t, e, req); eb != nil || out["result"] != float64(1) {
			t.Fatalf("%v: %v %+v", req, out, eb)
		}
	}
	if got := applied()[before:]; len(got) != 0 || runtime.GOMAXPROCS(0) != 1 {
		t.Fatalf("one caller at a time changed GOMAXPROCS: applied %v, now %d", got, runtime.GOMAXPROCS(0))
	}

	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 3; j++ {
				if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "node", "code": "return 1"}, nil); err != nil || eb != nil {
					t.Errorf("overlapping node run: %v %+v", err, eb)
				}
			}
		}()
	}
	wg.Wait()
	if got := applied()[before:]; len(got) == 0 || got[0] != 3 {
		t.Fatalf("8 overlapping callers: applied %v, want a raise to 3", got)
	}
	waitOneP(t, e)
}

// TestAComputingGuestRaisesThePs: a python guest computing alone counts as
// work of its own once its turn has run for the long-turn time, so the
// worker leaves one P, and a node call beside it is answered while the
// guest still computes.
func TestAComputingGuestRaisesThePs(t *testing.T) {
	e, _, applied := governed(t, 0)
	ctx := ctxT(t)
	computing := make(chan *iii.ErrorBody, 1)
	go func() {
		_, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": "python", "timeout_ms": 20000,
			"code": "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 3: pass\nresult = 1"}, nil)
		if err != nil {
			eb = &iii.ErrorBody{Message: err.Error()}
		}
		computing <- eb
	}()
	if err := e.WaitUntil(ctx, func() bool { return runtime.GOMAXPROCS(0) == 3 || len(computing) > 0 }); err != nil {
		t.Fatal(err)
	}
	if len(computing) > 0 {
		t.Fatalf("the computing guest ended (%+v) without its turn raising GOMAXPROCS (applied %v)", <-computing, applied())
	}
	if out, eb := runNode(t, e, map[string]any{"code": "return 2"}); eb != nil || out["result"] != float64(2) {
		t.Fatalf("node beside a computing guest: %v %+v", out, eb)
	}
	select {
	case eb := <-computing:
		t.Fatalf("the guest finished before the node call was answered (%+v): nothing was beside it", eb)
	default:
	}
	if eb := <-computing; eb != nil {
		t.Fatalf("computing guest: %+v", eb)
	}
	waitOneP(t, e)
}
