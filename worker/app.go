package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/hooks"
	"github.com/code-runner-go/code-runner/internal/tenantdirs"
	"github.com/code-runner-go/code-runner/ui"
)

// App is code-runner assembled: runtime registry, the engines it was given,
// the router (every route's chain and the live configuration), the hooks,
// and the idle sweeper. Serving and local mode both use it.
type App struct {
	Registry   *core.Registry
	Router     *core.Router
	Run        *core.RunService
	Namespaces *core.Namespaces
	// Engines are the language engines, by language; Langs their
	// languages in the order the worker built them.
	Engines map[core.Lang]core.LiveEngine
	Langs   []core.Lang
	Log     *slog.Logger
	// Dirs holds the worker's own directory under each temporary root;
	// every tenant directory is made inside it (internal/tenantdirs).
	Dirs *tenantdirs.Dirs

	// UI serves the console assets.
	UI *ui.Store
	// OnReload, when set, learns whether each configuration change was
	// applied (true) or refused (false) — telemetry counts them.
	OnReload func(accepted bool)
	// ConfigChanged is the config_changed hook: every configuration change
	// goes through it (ApplyConfig).
	ConfigChanged *hooks.ConfigChanged

	sweeper *core.Sweeper
}

// AppOptions configure NewApp.
type AppOptions struct {
	// Config is the configuration the worker starts on, read from Source
	// ("defaults", "config file", "configuration worker", …).
	Config configsvc.Config
	Source string
	// ReadConfig reads and validates the authoritative configuration for
	// the config_changed hook, served on the bus under ConfigIDs (nil: the
	// hook is not on the bus; ApplyConfig still applies changes).
	ReadConfig func(ctx context.Context) (configsvc.Config, error)
	ConfigIDs  []string
	Transport  core.Transport // guest calls; see LocalTransport for no engine
	// Door is the stage list every call passes first (core.DoorStages:
	// admission and telemetry; nil: none).
	Door []core.Stage
	Bus  core.Bus // guest registrations; nil keeps them in-process
	// Owners answers whether another worker serves an id before anything is
	// published (nil: no engine to ask, as in local mode).
	Owners core.Owners
	// Engines are the language engines to build, in order
	// (engines/standard.Modules: node and python).
	Engines []core.EngineModule
	Log     *slog.Logger
	// LocalLog gets guest-written text at debug (detached console output,
	// host stderr): the worker's own log, never telemetry (nil: Log).
	LocalLog *slog.Logger
	// OnPoolBoot, when set, learns how long each warm-pool boot took, by
	// language (telemetry records the refill time).
	OnPoolBoot func(lang string, d time.Duration)
	// Busy, when set, is told about the engines' CPU-heavy background
	// work (core.EngineDeps.Busy).
	Busy func(weight int) (done func())
	// Tag is the worker's routing tag (Tag): kept runtime ids begin with
	// it, and the run and teardown routes are also served under their
	// per-worker ids. "" (local mode): untagged ids, no per-worker ids.
	Tag string
	// Forward reaches the other workers on the engine: calls for runtimes
	// they hold are forwarded there (nil: none).
	Forward core.Forwarder
	// PeerSeen tells whether a worker with a routing tag was ever seen
	// (core.RunService.PeerSeen).
	PeerSeen func(tag string) bool
	// Spread names the other workers new work goes to when this one has
	// no free slot (core.RunService.Spread; nil: none).
	Spread core.Spreader
}

// NewApp builds the App.
func NewApp(o AppOptions) (*App, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	a := &App{Registry: core.NewRegistry(nil), Log: o.Log, Dirs: tenantdirs.New()}
	a.Router = core.NewRouter(o.Config, o.Source, o.Transport, o.Log, o.Door...)
	// Guest functions are routes too: published through the router, so a
	// bus invocation of one enters by the same door as the worker's own.
	var bus core.Bus
	if o.Bus != nil {
		bus = &core.GuestRoutes{Router: a.Router, Bus: o.Bus}
	}
	poolBoot := func(lang string) func(time.Duration) {
		if o.OnPoolBoot == nil {
			return nil
		}
		return func(d time.Duration) { o.OnPoolBoot(lang, d) }
	}
	a.Engines = map[core.Lang]core.LiveEngine{}
	engines := map[core.Lang]core.Engine{}
	committers := []core.Committer{}
	for _, m := range o.Engines {
		if _, dup := a.Engines[m.Lang]; dup {
			a.closeEngines()
			return nil, fmt.Errorf("two engines for language %q: give each language one module", m.Lang)
		}
		eng, err := m.New(core.EngineDeps{Registry: a.Registry, Bus: bus, Transport: o.Transport, Owners: o.Owners, Live: a.Router.Live,
			Log: o.Log, LocalLog: o.LocalLog, Dirs: a.Dirs, OnPoolBoot: poolBoot(string(m.Lang)), Busy: o.Busy})
		if err != nil {
			a.closeEngines()
			return nil, fmt.Errorf("%s engine: %w", m.Lang, err)
		}
		a.Engines[m.Lang] = eng
		a.Langs = append(a.Langs, m.Lang)
		engines[m.Lang] = eng
		committers = append(committers, eng)
	}
	a.Registry.Tag = o.Tag
	a.Run = &core.RunService{Registry: a.Registry, Engines: engines, Log: o.Log, Forward: o.Forward, PeerSeen: o.PeerSeen, Spread: o.Spread}
	a.Namespaces = &core.Namespaces{Registry: a.Registry, Engines: engines, Run: a.Run, Owners: o.Owners}
	if loc, ok := o.Owners.(core.NamespaceLocator); ok && o.Forward != nil {
		a.Namespaces.Locate = loc
	}
	a.sweeper = core.NewSweeper(a.Registry, a.Namespaces, a.Router.Live, o.Log)
	routes := core.Routes(a.Run, a.Namespaces)
	for id, route := range routes {
		a.Router.Handle(id, route)
	}
	if o.Tag != "" {
		// The same routes under this worker's own ids: a call that lands
		// there is served here, never forwarded again — but for a
		// registration whose namespace another worker claimed meanwhile
		// (core/claim.go), which goes on to the worker serving it.
		for _, id := range []string{core.FnRun, core.FnTeardown, core.FnRegisterFunction} {
			a.Router.Handle(core.WorkerID(id, o.Tag), routes[id])
		}
	}
	a.ConfigChanged = &hooks.ConfigChanged{Router: a.Router, Components: append(committers, a.sweeper),
		Read: o.ReadConfig, Source: o.Source, IDs: o.ConfigIDs, Live: a.liveCounts, Applied: a.reloaded, Log: o.Log}
	// The hooks, one line each (package hooks).
	for _, h := range []hooks.Hook{
		hooks.PreGenerate(),
		a.ConfigChanged.Hook(),
	} {
		h.Install(a.Router)
	}
	a.UI = ui.NewStore()
	a.install(core.FnUIContent, nil, a.uiContent)
	return a, nil
}

func (a *App) install(id string, dec core.Decoder, h core.Handler, stages ...core.Stage) {
	a.Router.Handle(id, core.Route{Decode: dec, Terminal: h, Stages: stages})
}

// ApplyConfig makes cfg, read from source, live through the config_changed
// hook (a config file that changed); the error is the hook's.
func (a *App) ApplyConfig(ctx context.Context, cfg configsvc.Config, source string) error {
	return a.ConfigChanged.Apply(ctx, cfg, source)
}

// closeEngines closes every engine built, in reverse order.
func (a *App) closeEngines() {
	for i := len(a.Langs) - 1; i >= 0; i-- {
		a.Engines[a.Langs[i]].Close()
	}
}

// liveCounts counts, for the configuration log line, the node runtimes a
// change of a node-only limit leaves as they are.
func (a *App) liveCounts() configsvc.LiveCounts {
	const node core.Lang = "node" // the per-runtime limits the line speaks of are node's (configsvc.Describe)
	n := 0
	for _, k := range a.Registry.Kept() {
		if k.Lang == node {
			n++
		}
	}
	return configsvc.LiveCounts{Node: n + a.Namespaces.CountLang(node)}
}

// reloaded tells OnReload about one configuration change.
func (a *App) reloaded(accepted bool) {
	if a.OnReload != nil {
		a.OnReload(accepted)
	}
}

// Sweeper returns the idle sweeper over this app's runtimes; a configuration
// change wakes it (the config_changed hook), so a lowered idle_ttl_secs
// applies at once.
func (a *App) Sweeper() *core.Sweeper { return a.sweeper }

// Close destroys every runtime and stops the engines.
func (a *App) Close() {
	for _, k := range a.Registry.Kept() {
		if a.Registry.Forget(k, false) {
			k.Runtime.Destroy()
		}
	}
	a.Namespaces.DestroyAll()
	a.closeEngines()
	if err := a.Dirs.Close(); err != nil {
		a.Log.Warn("could not remove the worker's tenant directories", "err", err)
	}
}

// SweepDeadWorkers removes the tenant directories of workers that are no
// longer running — killed, so they never removed their own — under the
// live scratch_root and the system's temporary directory, at once and then
// every interval until ctx ends. A live worker's directories are never
// touched (internal/tenantdirs).
func (a *App) SweepDeadWorkers(ctx context.Context, interval time.Duration) {
	for {
		a.Dirs.Touch()
		tenantdirs.Sweep(a.Log, a.Router.Live().Config.ScratchRootOrEmpty(), "")
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// ErrLocalOnly is the refusal of local mode for non code-runner functions.
var ErrLocalOnly = errors.New("no engine: only code-runner::* functions are available in local mode")

// LocalTransport answers guest calls with no engine (code-runner run):
// code-runner::* functions are served by the app itself, everything else is
// refused. The bridge deny-list runs before it, so its refusal wins.
type LocalTransport struct {
	App *App
}

// Invoke serves a guest call locally.
func (t *LocalTransport) Invoke(ctx context.Context, inv core.Invocation) (json.RawMessage, error) {
	if !strings.HasPrefix(inv.FunctionID, "code-runner::") {
		return nil, ErrLocalOnly
	}
	if inv.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, inv.Timeout)
		defer cancel()
	}
	data := inv.Data
	if data == nil {
		data = json.RawMessage("null")
	}
	res, err := t.App.Router.Invoke(ctx, inv.FunctionID, data, nil)
	if err != nil {
		w := core.WireOf(err, inv.FunctionID)
		return nil, &core.RemoteError{Code: w.Code, Message: w.Message}
	}
	if len(inv.Action) > 0 && strings.Contains(string(inv.Action), `"void"`) {
		return nil, nil
	}
	return jsonx.Marshal(res)
}

// uiContent serves code-runner::ui-content: {"path"} → {content, content_type};
// an unknown path is the UNKNOWN_UI_ASSET error.
func (a *App) uiContent(ctx context.Context, call *core.Call) (any, error) {
	var req struct {
		Path *string `json:"path"`
	}
	if err := json.Unmarshal(call.Payload, &req); err != nil || req.Path == nil {
		return nil, core.Errorf(core.CodeInvalidRequest, "invalid request: `path` is required")
	}
	c, err := a.UI.Get(*req.Path)
	if err != nil {
		return nil, &core.Error{Code: "UNKNOWN_UI_ASSET", Text: strings.TrimPrefix(err.Error(), "UNKNOWN_UI_ASSET: ")}
	}
	return c, nil
}
