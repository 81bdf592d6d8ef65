package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/configsvc/sources"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"github.com/code-runner-go/code-runner/telemetry"
	"github.com/code-runner-go/code-runner/ui"
)

// ServeOptions configure Serve.
type ServeOptions struct {
	URL          string
	Namespace    string
	WorkerName   string
	Version      string
	Description  string
	ConfigSource string // engine | file | engine-or-file
	ConfigFile   string
	SeedPath     string // --config, "" when unset
	Env          func(string) (string, bool)
	// Engines are the language engines to build (engines/standard.Modules).
	Engines []core.EngineModule
	Log     *slog.Logger
	// Ready, when set, is called once the worker serves.
	Ready func(*App)
	// Telemetry, when set, is given the worker's telemetry once it starts
	// (tests flush it); TelemetryFlush overrides the 1 s batch interval and
	// TelemetryQueue the 256 frames waiting for the engine's /otel socket.
	Telemetry      func(*telemetry.Telemetry)
	TelemetryFlush time.Duration
	TelemetryQueue int
	// Procs, when set, sizes GOMAXPROCS to the work in flight: every
	// invocation enters it, and the python engine's CPU-heavy work — its
	// compile, pool boots and turns past the long-turn time (internal/tuning).
	Procs *tuning.Governor
	// NameWait overrides how long a worker whose name another live worker
	// reports waits for that one to go before refusing (tests).
	NameWait time.Duration
	// HoldInterval overrides how often the worker checks that the shared
	// ids still have a holder (holdInterval).
	HoldInterval time.Duration
	// Abort, closed on a second SIGTERM/SIGINT, ends a drain at once
	// (contract §26.6): Serve's ctx ending starts the drain.
	Abort <-chan struct{}
}

// NoEngineMessage is said once when the first attempt to reach the engine
// fails, before the client's retry lines: what the worker waits for and
// how to give it one.
func NoEngineMessage(url string) string {
	addr := "127.0.0.1:49134"
	if u, err := neturl.Parse(url); err == nil && u.Host != "" {
		addr = u.Host
	}
	return "no iii engine answers at " + url + ": code-runner keeps retrying and starts serving as soon as one does. " +
		"Start the engine there (from a checkout, the test engine: go build -o bin/iiitest-engine ./iii/iiitest/cmd/iiitest-engine && ./bin/iiitest-engine --addr " + addr + "), " +
		"or point --url (or III_URL) at one that runs. " +
		"To try code without an engine: code-runner run --lang python --code 'result = 1 + 1'"
}

// deadWorkerSweep is how often a worker looks for the tenant directories
// of workers that were killed (besides once at start).
const deadWorkerSweep = 10 * time.Minute

// preGenerateHook is the harness trigger type code-runner binds (docs/behaviour.md#harness-pre-generate-hook).
const preGenerateHook = "harness::hook::pre-generate"

// Serve runs the worker until ctx ends (docs/behaviour.md#process-startup). It returns an
// error for a boot failure (for example an unreachable configuration
// worker in engine mode) or a fatal rejection by the engine.
func Serve(ctx context.Context, o ServeOptions) error {
	// Whatever ends Serve — ctx, a fatal rejection, a watch error — ends
	// every goroutine it started.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	fatal := make(chan error, 1)
	var admit core.Stage
	var busy func(int) func()
	if o.Procs != nil {
		admit = core.Admit(func() func() { return o.Procs.Enter(1) })
		busy = o.Procs.Enter
	}
	// gate counts the calls in flight and refuses new ones once the worker
	// drains (contract §26.6).
	gate := &core.Gate{}
	// poke runs the shared-id check at once (holdSharedIDs): on the
	// engine's worker events and after each reconnect, which registers
	// everything but the shared ids again.
	poke := make(chan struct{}, 1)
	// connected ends a shared-id listing still waiting on a connection
	// that is gone: its answer will never come, and the check after the
	// reconnect should not wait for its timeout.
	connected := &signal{}
	// restore publishes again the recorded namespaces no live worker
	// serves (contract §26.2); poked with the hold check.
	restore := &restorer{log: log, pokes: make(chan struct{}, 1)}
	pokeHold := func() {
		select {
		case poke <- struct{}{}:
		default:
		}
		restore.poke()
	}
	client := iii.New(iii.Options{URL: o.URL, Name: o.WorkerName, Version: o.Version, Description: o.Description, Namespace: o.Namespace, Logger: log,
		Contested: isShared, OnConnected: func() { connected.Fire(); pokeHold() },
		OnRejected: func(code, detail string) {
			err := fmt.Errorf("the engine rejected this worker (%s): %s", code, detail)
			if code == "WORKER_NAMESPACE_CONFLICT" {
				err = fmt.Errorf("the engine rejected this worker (%s): %w", code, ErrDuplicateName(o.WorkerName))
			}
			select {
			case fatal <- err:
			default:
			}
		},
		OnDialFailed: func(failures int, everConnected bool, _ error) {
			if failures == 1 && !everConnected {
				log.Warn(NoEngineMessage(o.URL))
			}
		}})
	defer client.Close()

	seed := loadSeed(o, log)
	source := o.ConfigSource
	entryID := sources.EntryID(o.Env)
	engineSrc := &sources.EngineSource{Caller: client, EntryID: entryID, Seed: seed, Log: log}
	fileSrc := &sources.FileSource{Path: o.ConfigFile, Env: configsvc.LookupEnv(o.Env), Log: log}
	var cfg configsvc.Config
	label := "configuration worker"
	switch source {
	case "engine", "engine-or-file":
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_ = client.WaitConnected(wctx)
		cancel()
		c, err := engineSrc.Boot(ctx)
		switch {
		case err == nil:
			cfg = c
		case source == "engine-or-file" && errors.Is(err, sources.ErrUnavailable):
			log.Warn(fmt.Sprintf("configuration worker unavailable (%v); using local config file %s", err, o.ConfigFile))
			source = "file"
		case ctx.Err() != nil:
			return nil // stopped while booting
		default:
			return fmt.Errorf("configuration: %w", err)
		}
	}
	if source == "file" {
		fallback := configsvc.Defaults()
		if seed != nil {
			fallback = *seed
		}
		c, found, err := fileSrc.Load(fallback)
		if err != nil {
			return fmt.Errorf("configuration: %w", err)
		}
		if !found {
			log.Info("config file not found; using the seed or built-in defaults and watching for it", "path", o.ConfigFile)
		}
		cfg = c
		label = "config file"
	}

	otelOn, otelSet := o.Env("OTEL_ENABLED")
	otlpEndpoint, _ := o.Env("OTEL_EXPORTER_OTLP_ENDPOINT")
	tel, err := telemetry.Start(ctx, telemetry.Options{EngineURL: o.URL, Enabled: telemetry.EnabledFromEnv(otelOn, otelSet),
		OTLPEndpoint: otlpEndpoint, Service: "code-runner", Version: o.Version, InstanceID: o.WorkerName, FlushInterval: o.TelemetryFlush, MetricInterval: o.TelemetryFlush, QueueFrames: o.TelemetryQueue, Log: log})
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = tel.Shutdown(sctx)
	}()
	if o.Telemetry != nil {
		o.Telemetry(tel)
	}
	// From here on the worker's log records also go out as OTLP logs,
	// with the trace of the call they were written in — except what guests
	// wrote, which stays in the worker's own log (localLog).
	localLog := log
	log = slog.New(tel.LogHandler(log.Handler()))
	engineSrc.Log, fileSrc.Log = log, log
	transport := Transport{Client: client, Tel: tel}
	tag := Tag(o.WorkerName) // this worker's routing tag (core/route.go)
	peers := newPeerTags(tag)
	var readConfig func(context.Context) (configsvc.Config, error)
	var configIDs []string
	if source != "file" {
		// The config_changed hook on the bus: the shared id for callers,
		// this worker's own for its configuration trigger (below).
		readConfig = engineSrc.Fetch
		configIDs = []string{core.FnOnConfigChange, core.WorkerID(core.FnOnConfigChange, tag)}
	}
	owners := &core.EngineOwners{Transport: Transport{Client: client, Tel: tel, Internal: true}, Self: o.WorkerName, Namespace: o.Namespace}
	app, err := NewApp(AppOptions{Config: cfg, Source: label, ReadConfig: readConfig, ConfigIDs: configIDs, Transport: transport, Bus: Bus{Client: client}, Door: core.DoorStages(gate.Stage(), Trace(tel, log), admit),
		Owners:  owners,
		Engines: o.Engines, Log: log, LocalLog: localLog,
		Tag: tag, Forward: forwarder{t: Transport{Client: client, Tel: tel, Internal: true}, peers: peers}, PeerSeen: peers.Seen, Spread: &spreader{client: client, peers: peers, self: o.WorkerName},
		OnPoolBoot: func(lang string, d time.Duration) { tel.Metrics().PoolBoot(context.Background(), lang, d) }, Busy: busy})
	if err != nil {
		return err
	}
	defer app.Close()
	// One namespace never spans two workers: a namespace new to the group
	// is created by the worker whose claim stands alone (core/claim.go).
	app.Namespaces.Claims = &engineClaims{client: client, owners: owners, tag: tag}
	// Every published function is recorded in the engine's state store
	// (contract §26.1).
	app.Namespaces.Records = &stateRecords{client: client, log: log}
	app.Namespaces.WorkerName, app.Namespaces.Log = o.WorkerName, log
	app.OnReload = func(accepted bool) { tel.Metrics().Reload(context.Background(), accepted) }
	fileSrc.Rejected = func() { tel.Metrics().Reload(context.Background(), false) }
	if err := tel.ObserveRuntimes(func() map[string]int64 {
		ns := 0
		for _, lang := range app.Langs {
			ns += app.Namespaces.CountLang(lang)
		}
		return map[string]int64{"kept": int64(len(app.Registry.Kept())), "namespace": int64(ns)}
	}, func() map[string]int64 {
		parked := map[string]int64{}
		for _, lang := range app.Langs {
			if p, ok := app.Engines[lang].(core.Pooled); ok {
				parked[string(lang)] = int64(p.Parked())
			}
		}
		return parked
	}); err != nil {
		log.Warn("telemetry: the live-runtimes gauge is off", "err", err)
	}

	// An engine that boots in the background (python compiles or loads
	// its compilation cache) is not waited for: its requests wait for the
	// boot inside the engine, the others are served from the start.
	for _, lang := range app.Langs {
		if b, ok := app.Engines[lang].(core.Booting); ok {
			go func() {
				if err := b.WaitReady(ctx); err == nil {
					log.Info(string(lang) + " engine serving")
				}
			}()
		}
	}
	// A second worker under a name another live worker has would take its
	// ids over on a 0.22 engine: refused before anything is published
	// (a 0.23 engine refuses the name itself, OnRejected above).
	nameChecked := make(chan error, 1)
	go func() {
		if err := client.WaitConnected(ctx); err != nil {
			return
		}
		wait := o.NameWait
		if wait <= 0 {
			wait = nameWait
		}
		taken, err := nameTaken(ctx, client, o.WorkerName, wait)
		var collision *TagCollisionError
		if errors.As(err, &collision) {
			nameChecked <- err
			return
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("could not ask the engine whether another worker has this worker's name; serving", "name", o.WorkerName, "err", err)
		}
		if taken {
			nameChecked <- ErrDuplicateName(o.WorkerName)
		} else {
			nameChecked <- nil
		}
	}()
	if client.Connected() {
		select {
		case err := <-nameChecked:
			if err != nil {
				return err
			}
		case err := <-fatal:
			return err
		case <-ctx.Done():
			return nil
		}
	} else {
		go func() { // no engine yet: checked once it answers
			select {
			case err := <-nameChecked:
				if err != nil {
					select {
					case fatal <- err:
					default:
					}
				}
			case <-ctx.Done():
			}
		}()
	}
	pub := &Publisher{Client: client, Router: app.Router, Log: log, Tel: tel}
	// The shared ids are held on standby: holdSharedIDs registers them
	// when no live worker holds them (below), so a worker joining a group
	// never takes them from their holder.
	pub.PublishStandby(core.FnRun, core.FnTeardown, core.FnRegisterFunction, core.FnInjectGuidance)
	// The console UI's content function; its triggers, like the
	// pre_generate hook's, are bound by the worker holding the shared ids
	// (holderBindings).
	pub.PublishStandby(core.FnUIContent)
	bindings := &holderBindings{client: client, log: log}
	if dir, on := ui.WatchDir(envOr(o.Env, "III_CODE_RUNNER_UI_WATCH")); on {
		go func() {
			if err := ui.Watch(ctx, dir, app.UI, bindings.rebind, log); err != nil {
				log.Warn("console UI hot reload is off", "dir", dir, "err", err)
			}
		}()
	}

	var watchErr chan error
	if source == "file" {
		fileSrc.Apply = func(c configsvc.Config) { _ = app.ApplyConfig(context.Background(), c, "config file") } // a refusal is logged
		watchErr = make(chan error, 1)
		go func() { watchErr <- fileSrc.Watch(ctx) }()
	} else {
		pub.PublishStandby(core.FnOnConfigChange)
	}
	// The first check registers the shared ids (contract §20.2's order)
	// unless a live worker of the group holds them; the loop goes on.
	shared := []string{core.FnRun, core.FnTeardown, core.FnRegisterFunction, core.FnInjectGuidance, core.FnUIContent}
	if source != "file" {
		shared = append(shared, core.FnOnConfigChange)
	}
	holdEvery := o.HoldInterval
	if holdEvery <= 0 {
		holdEvery = holdInterval
	}
	holdSharedIDs(ctx, client, o.WorkerName, o.Namespace, shared, holdEvery, poke, connected.Next, peers, bindings.hold, log)
	// This worker's own ids, after the shared ones: other workers forward
	// the runtimes it holds here.
	pub.Publish(core.WorkerID(core.FnRun, tag), core.WorkerID(core.FnTeardown, tag), core.WorkerID(core.FnRegisterFunction, tag))
	// The engine says when a worker connects, leaves or reports itself
	// (after registering its functions): the hold check runs at once, so a
	// departed holder's ids are taken over and a new peer is known without
	// waiting for the timer, which stays as the fallback.
	changed := core.WorkerID(FnWorkersChanged, tag)
	app.install(changed, nil, func(context.Context, *core.Call) (any, error) {
		pokeHold()
		return map[string]bool{"ok": true}, nil
	})
	pub.Publish(changed)
	client.RegisterTrigger(iii.Trigger{TriggerType: "engine::workers-available", FunctionID: changed, Config: json.RawMessage(`{}`)})
	if source != "file" {
		// Every worker of a group applies each change once: its
		// configuration trigger targets its own id (contract §24.4), bound
		// last; the shared id stays for callers.
		own := core.WorkerID(core.FnOnConfigChange, tag)
		pub.Publish(own)
		cfgJSON, _ := json.Marshal(map[string]any{"configuration_id": entryID, "event_types": []string{"configuration:updated"}})
		client.RegisterTrigger(iii.Trigger{TriggerType: "configuration", FunctionID: own, Config: cfgJSON})
		go func() { _ = app.ConfigChanged.Refresh(ctx) }() // a refusal is logged
	}
	// The recorded namespaces no live worker serves come back before this
	// worker reports ready (contract §26.2); then on every worker event.
	restore.app, restore.interval = app, holdEvery
	cctx, cancel := context.WithTimeout(ctx, restoreConnectWait)
	if client.WaitConnected(cctx) == nil {
		rctx, cancelPass := context.WithTimeout(ctx, restoreAtStart)
		restore.pass(rctx)
		cancelPass()
	}
	cancel()
	rctx, stopRestore := context.WithCancel(ctx)
	defer stopRestore()
	go restore.run(rctx)
	// Everything is registered: reporting the metadata again makes the
	// engine tell the other workers (engine::workers-available), which then
	// know this one's ids at once.
	client.Announce()
	go app.Sweeper().Run(ctx)
	go app.SweepDeadWorkers(ctx, deadWorkerSweep)
	live := app.Router.Live().Config
	ready := []any{"max_runtimes", live.MaxRuntimes, "heap_mb", live.HeapMB, "scratch_mb", live.ScratchMB}
	for _, lang := range app.Langs {
		if b, ok := app.Engines[lang].(core.Booting); ok {
			ready = append(ready, string(lang), b.State())
		}
	}
	log.Info("code-runner ready", append(ready, "config", label)...)
	if o.Ready != nil {
		o.Ready(app)
	}
	select {
	case <-ctx.Done():
		stopRestore()
		drain(app, client, gate, shared, tag, o.Abort, log)
		log.Info("code-runner stopping")
		return nil
	case err := <-fatal:
		return err
	case err := <-watchErr:
		if err != nil {
			return err
		}
		<-ctx.Done()
		log.Info("code-runner stopping")
		return nil
	}
}

// isShared reports whether id is one of the ids every worker of a group
// registers (a 0.23 engine refuses all but the first holder's).
func isShared(id string) bool {
	for _, s := range core.WorkerFunctionIDs {
		if id == s {
			return true
		}
	}
	return false
}

func envOr(env func(string) (string, bool), key string) string {
	if env == nil {
		return ""
	}
	v, _ := env(key)
	return v
}

// loadSeed reads the --config seed; a parse or schema error is a WARN and
// the seed is dropped.
func loadSeed(o ServeOptions, log *slog.Logger) *configsvc.Config {
	if o.SeedPath == "" {
		return nil
	}
	c, err := configsvc.LoadFile(o.SeedPath, configsvc.LookupEnv(o.Env))
	if err != nil {
		log.Warn("failed to parse --config seed; ignoring it", "path", o.SeedPath, "err", err)
		return nil
	}
	return &c
}
