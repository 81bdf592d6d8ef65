package jsenv

import (
	_ "embed"
	"errors"
	"fmt"
	"hash"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

//go:embed prelude.js
var preludeSource string

// preludeOrigin is the name stack traces give the prelude's frames.
const preludeOrigin = "node:internal/code-runner"

// Hint is what String(iii) returns (docs/behaviour.md#guest-iii-node).
const Hint = "[iii: code-runner host client. e.g. await iii.trigger({ function_id: 'worker::fn', payload: {} }); also iii.registerFunction(id, handler, options?), iii.registerTrigger(input), iii.registerTriggerType(triggerType, handler), iii.unregisterTriggerType(id), iii.namespace (the prefix this runtime may register under), iii.files (a private scratch directory when enabled) and iii.shutdown(), which throws by design]"

// Shared is what one isolate-host process keeps across the isolates it
// makes: V8's code caches of the prelude and of the units (compiled code
// only, never state), the startup snapshot it was given, and the
// transform's own isolate. It is used from the host's one goroutine.
type Shared struct {
	// Snapshot is the startup blob isolates are made from (nil: none, or
	// it failed to load).
	Snapshot *v8.Blob
	// EnvOff builds isolates without the environment (a bench baseline).
	EnvOff bool
	// NoCache turns the code caches off (a bench baseline).
	NoCache bool

	preludeCache  []byte
	unitCache     map[string][]byte
	unitCacheMade map[string]int
	packageList   string
	// tool is the transform's isolate (Terminate reads it from the
	// guard's goroutine).
	tool atomic.Pointer[transformer]
}

// NewShared is a process's shared state, with the startup snapshot given
// (nil for none).
func NewShared(snapshot *v8.Blob) *Shared {
	var names []string
	for _, p := range Packages() {
		names = append(names, p.Name)
	}
	return &Shared{Snapshot: snapshot, unitCache: map[string][]byte{}, unitCacheMade: map[string]int{},
		packageList: strings.Join(names, ",")}
}

// Close disposes of the transform's isolate.
func (s *Shared) Close() {
	if t := s.tool.Swap(nil); t != nil {
		t.close()
	}
}

// Terminate stops the transform if it is running (the entry's deadline
// passed): its isolate is part of every entry that transforms.
func (s *Shared) Terminate() {
	if t := s.tool.Load(); t != nil {
		t.iso.Terminate()
	}
}

// Env is one isolate's JavaScript environment: the prelude's host API and
// require, pinned for the isolate's life.
type Env struct {
	Iso     *v8.Isolate
	API     v8.Value
	Require v8.Value
	shared  *Shared
	// pending are the units first compiled in the current entry, whose
	// code caches are made once it ends.
	pending []pendingCache
	// making says the environment is being made for a startup snapshot:
	// nothing of the clock or of randomness may be read.
	making bool
	// preludeCached says the prelude was compiled from the process's code
	// cache (tests).
	preludeCached bool
	clock         clock
	hashes        map[int64]hash.Hash // digests being fed (crypto.hashOpen)
	hashSeq       int64
}

type pendingCache struct {
	name   string
	script v8.Script
}

// Snapshot data indexes: what the creator leaves for isolates made from
// its blob.
const (
	snapAPI = iota
	snapRequire
)

// New gives iso its environment: from the snapshot when iso was made from
// one, else by running the prelude (compiled from the process's code
// cache). Its hooks are installed either way. The isolate's native calls
// reach the environment through Op, which the host's answerer calls.
func New(iso *v8.Isolate, sh *Shared) (*Env, error) {
	e := NewUnmade(sh)
	if err := e.Make(iso); err != nil {
		return nil, err
	}
	return e, nil
}

// NewUnmade is an environment not yet given its isolate (Make): the
// isolate's native answerer can hold it before the isolate exists.
func NewUnmade(sh *Shared) *Env {
	now := time.Now()
	return &Env{shared: sh, clock: clock{origin: now, wall: now}, hashes: map[int64]hash.Hash{}}
}

// Make builds the environment in iso (see New).
func (e *Env) Make(iso *v8.Isolate) error {
	e.Iso = iso
	scope := iso.Mark()
	defer iso.Release(scope)
	if iso.FromSnapshot() {
		api, err := iso.SnapshotData(snapAPI)
		if err != nil {
			return fmt.Errorf("the snapshot holds no environment: %w", err)
		}
		req, err := iso.SnapshotData(snapRequire)
		if err != nil {
			return fmt.Errorf("the snapshot holds no require: %w", err)
		}
		e.API, e.Require = api.Pin(), req.Pin()
	} else if err := e.runPrelude(); err != nil {
		return err
	}
	return e.installHooks()
}

func (e *Env) runPrelude() error {
	iso, sh := e.Iso, e.shared
	src := v8.Source{Code: preludeSource, Origin: preludeOrigin}
	if !sh.NoCache {
		src.Cache = sh.preludeCache
	}
	script, rejected, err := iso.Compile(src)
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	if rejected {
		sh.preludeCache = nil
	}
	e.preludeCached = src.Cache != nil && !rejected
	factory, err := script.Run()
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	api, err := factory.Call(v8.Value{}, iso.NativeFunction(), iso.Intrinsics(), iso.String(Hint),
		iso.String(sh.packageList), iso.Bool(!sh.EnvOff))
	if err != nil {
		return fmt.Errorf("prelude: %w", err)
	}
	req, err := api.Get("require")
	if err != nil {
		return fmt.Errorf("prelude: no require: %w", err)
	}
	e.API, e.Require = api.Pin(), req.Pin()
	if sh.preludeCache == nil && !sh.NoCache {
		sh.preludeCache = script.CodeCache()
	}
	return nil
}

func (e *Env) installHooks() error {
	hooks, err := e.API.Get("hooks")
	if err != nil {
		return fmt.Errorf("prelude: no hooks: %w", err)
	}
	for _, h := range []struct {
		name string
		hook v8.Hook
	}{{"onReject", v8.HookReject}, {"onImport", v8.HookImport}, {"onImportMeta", v8.HookImportMeta}, {"cloneError", v8.HookCloneError}} {
		fn, err := hooks.Get(h.name)
		if err != nil {
			return err
		}
		if err := e.Iso.SetHook(h.hook, fn); err != nil {
			return fmt.Errorf("hook %s: %w", h.name, err)
		}
	}
	return nil
}

// Close lets go of the environment's values (its isolate moved to another
// context, or is going away).
func (e *Env) Close() {
	e.API.Unpin()
	e.Require.Unpin()
	e.MakeCaches()
}

// Configure finishes what differs between isolates made from one
// snapshot: iii.files where the runtime has a scratch directory.
func (e *Env) Configure(filesOn bool) error {
	_, err := e.API.Method("configure", e.Iso.Bool(filesOn))
	return err
}

// Call invokes a method of the host API.
func (e *Env) Call(method string, args ...v8.Value) (v8.Value, error) {
	return e.API.Method(method, args...)
}

// unitCacheRemakes is how many times a host process makes a unit's code
// cache: after the first use, and again after the next uses, so that the
// functions later tenants reach are in it too.
const unitCacheRemakes = 4

// loadUnit compiles the named unit (from the process's code cache when
// there is one) and answers its function, or a string saying why not.
func (e *Env) loadUnit(c *v8.Call, name string) {
	src, ok, err := Source(name)
	if err != nil {
		c.ReturnString(err.Error())
		return
	}
	if !ok {
		c.ReturnString("code-runner: no such module unit " + name)
		return
	}
	sh := e.shared
	origin := "node:" + strings.TrimPrefix(strings.TrimPrefix(name, "node/"), "internal/")
	source := v8.Source{Code: src, Origin: origin}
	cached := false
	if cd, ok := sh.unitCache[name]; ok && !sh.NoCache {
		source.Cache, cached = cd, true
	}
	script, rejected, err := e.Iso.Compile(source)
	if err != nil {
		c.ReturnString("code-runner: module unit " + name + " does not compile: " + err.Error())
		return
	}
	if rejected {
		delete(sh.unitCache, name)
	}
	if !cached || sh.unitCacheMade[name] < unitCacheRemakes {
		// The cache is made again after the next few tenants' use: each
		// adds the functions it compiled that the last cache lacked.
		e.pending = append(e.pending, pendingCache{name: name, script: script.Pin()})
	}
	v, err := script.Run()
	if err != nil {
		c.ReturnString("code-runner: module unit " + name + ": " + err.Error())
		return
	}
	c.ReturnValue(v)
}

// MakeCaches makes the code caches of the units first compiled in this
// entry, after it ran them (so the functions it ran are in them). The host
// calls it when an entry ends.
func (e *Env) MakeCaches() {
	sh := e.shared
	for _, p := range e.pending {
		if !sh.NoCache && sh.unitCacheMade[p.name] < unitCacheRemakes {
			if cd := p.script.CodeCache(); len(cd) > 0 {
				sh.unitCache[p.name] = cd
				sh.unitCacheMade[p.name]++
			}
		}
		p.script.Unpin()
	}
	e.pending = e.pending[:0]
}

// CommonJS's names, which a run's wrapper (the body of an async arrow,
// contract §4.2, §25.5) and a module file's pass.
var RunParams = []string{"exports", "require", "module", "__filename", "__dirname"}

// SourceParams are a register_function source's wrapper's parameters: a
// factory that leaves `handler` (or exports it).
var SourceParams = []string{"handler", "exports", "require", "module"}

// redeclared is V8's compile error for code that declares a name its
// wrapper passes as a parameter.
var redeclared = regexp.MustCompile(`^SyntaxError: Identifier '([\w$]+)' has already been declared`)

// CompileFunction compiles src as the body of a function taking params
// (V8's CompileFunction, as node's vm.compileFunction: the source keeps
// its own length, columns and "Unexpected end of input"). Code that
// declares one of the parameter names itself (const __dirname = … in an
// ES-module preamble, as node allows: its wrapper's parameters are not in
// the code's scope) keeps its own declaration: that parameter is renamed
// out of the way and the body compiled again, each at most once.
func CompileFunction(iso *v8.Isolate, params []string, src, origin string) (v8.Value, error) {
	names := slices.Clone(params)
	for {
		fn, err := iso.CompileFunction(v8.Source{Code: src, Origin: origin, Params: names})
		if err == nil {
			return fn, nil
		}
		m := redeclared.FindStringSubmatch(errorText(err))
		at := -1
		if m != nil {
			at = slices.Index(names, m[1])
		}
		if at < 0 || names[at] != params[at] {
			return v8.Value{}, err
		}
		names[at] = "__crUnused" + strconv.Itoa(at)
	}
}

// errorText is an error's stack when it has one, else its message.
func errorText(err error) string {
	var je *v8.Error
	if errors.As(err, &je) {
		return je.Text()
	}
	return err.Error()
}

// compileModule compiles a module file's code in its CommonJS wrapper and
// answers the function, or as a string the SyntaxError's text (without
// "SyntaxError: ") when it does not compile.
func (e *Env) compileModule(c *v8.Call, filename, src string) {
	fn, err := CompileFunction(e.Iso, RunParams, src, filename)
	if err != nil {
		c.ReturnString(strings.TrimPrefix(errorText(err), "SyntaxError: "))
		return
	}
	c.ReturnValue(fn)
}
