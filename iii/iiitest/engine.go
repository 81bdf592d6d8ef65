// Package iiitest is an in-process iii engine for tests, faithful to the
// wire (docs/behaviour.md#test-engine): real npm iii-sdk workers, code-runner and
// Go test code connect to it over WebSocket, register functions, call each
// other, and bind trigger types. It also carries the fakes code-runner's
// tests need — the configuration worker, the harness pre-generate hook and
// the console's asset provider — with the semantics of docs/behaviour.md#integrations.
//
// Decisions (docs/behaviour.md#test-engine): 0.22 semantics — duplicate function ids overwrite (last
// writer wins), namespaces are ignored, an invokefunction without `data` is
// dropped and logged loudly; enqueue is configurable (Options.Enqueue).
// Production code must not import this package.
package iiitest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/google/uuid"

	"github.com/code-runner-go/code-runner/iii"
)

// EnqueueMode selects how the engine handles the enqueue action.
type EnqueueMode int

const (
	// EnqueueNoProvider answers enqueue_error, as an engine without a queue worker.
	EnqueueNoProvider EnqueueMode = iota
	// EnqueueInMemory replies a receipt at once and invokes the target asynchronously.
	EnqueueInMemory
)

// Options configure an Engine.
type Options struct {
	Logger  *slog.Logger
	Enqueue EnqueueMode
	// Addr is the listen address; "" picks a free loopback port.
	Addr string
	// DiscardFrames keeps no record of frames (Frames and WaitFrame see
	// none): a soak's millions of frames would otherwise grow the engine
	// without bound, inside the process whose memory the soak watches.
	DiscardFrames bool
	// NoOtel answers /otel with 404, as an engine without telemetry would.
	NoOtel bool
	// Refusing makes the engine behave as a 0.23 engine does with
	// duplicates (iii-wire §8.1, §10): a function id another live worker
	// owns is refused with registrationrejected FUNCTION_NAMESPACE_CONFLICT
	// and the first owner keeps it; a worker reporting a name another live
	// worker of the same namespace holds gets WORKER_NAMESPACE_CONFLICT and
	// its connection is closed. The default is 0.22's: the last writer wins
	// and names are not leased. (Function ids are not keyed by namespace
	// here in either mode.)
	Refusing bool
	// NoState starts the engine without its state module (state::* answer
	// function_not_found), as an engine whose state module is off.
	NoState bool
}

// Recorded is one frame seen by the engine.
type Recorded struct {
	Inbound  bool   // worker → engine
	WorkerID string // the connection
	Worker   string // its reported name, when known
	Frame    iii.Frame
	Raw      json.RawMessage
	At       time.Time
}

// Engine is the in-process test engine.
type Engine struct {
	opts Options
	log  *slog.Logger
	srv  *httptest.Server

	mu           sync.Mutex
	conns        map[string]*econn
	functions    map[string]*function
	pending      map[string]*pendingInv
	triggerTypes map[string]*triggerType
	triggers     map[string]*trigger
	frames       []Recorded
	otel         [][]byte // binary frames received on /otel, in order
	dropped      []string
	changed      chan struct{} // closed and replaced on every recorded change

	failNext map[string]int // builtin id → how many of its next calls fail (FailNext)

	Config  *ConfigurationFake
	Harness *HarnessFake
	Console *ConsoleFake
	// State is the state module (nil functions with Options.NoState).
	State *StateFake
}

// FailNext makes the next n calls a worker makes to the in-process
// function id (one of the engine's own, such as engine::functions::list)
// answer an error, as a busy or restarting engine might, to test how
// workers recover. The test's own calls (Invoke) are answered as usual.
func (e *Engine) FailNext(id string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failNext == nil {
		e.failNext = map[string]int{}
	}
	e.failNext[id] = n
}

// failing reports whether this call to builtin id is one FailNext asked to
// fail, counting it.
func (e *Engine) failing(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failNext[id] <= 0 {
		return false
	}
	e.failNext[id]--
	return true
}

type econn struct {
	e           *Engine
	id, token   string
	ws          *websocket.Conn
	connectedAt time.Time
	remote      string

	mu      sync.Mutex
	queue   [][]byte
	wake    chan struct{}
	closed  bool
	closeCh chan struct{}

	serving map[string]bool
	started map[string]bool
	meta    workerMeta

	cleanupOnce sync.Once
	cleaned     chan struct{}
}

type workerMeta struct {
	Name, Runtime, Version, Description, OS, Namespace string
	PID                                                *int64
}

type builtinFunc func(ctx context.Context, caller *econn, data json.RawMessage) (json.RawMessage, *iii.ErrorBody)

type function struct {
	id             string
	owner          *econn
	description    *string
	requestFormat  json.RawMessage
	responseFormat json.RawMessage
	metadata       json.RawMessage
	builtin        builtinFunc
	workerName     string
}

type pendingInv struct {
	caller     *econn          // nil for local or void callers
	local      chan *iii.Frame // for Engine.Invoke
	functionID string
	callee     *econn
	wantsReply bool
}

// BuiltinProvider is an in-process trigger type provider.
type BuiltinProvider interface {
	// Register validates and stores a binding; an error rejects it.
	Register(t TriggerInfo) error
	// Unregister forgets a binding.
	Unregister(id string)
}

// TriggerInfo is a binding as seen by a provider.
type TriggerInfo struct {
	ID          string
	TriggerType string
	FunctionID  string
	Config      json.RawMessage
	Metadata    json.RawMessage
	Owner       string // registrant's worker id
}

type triggerType struct {
	id, description string
	provider        *econn
	builtin         BuiltinProvider
}

type trigger struct {
	TriggerInfo
	owner *econn
	live  bool
}

// New starts an engine listening on loopback.
func New(opts Options) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	e := &Engine{opts: opts, log: opts.Logger.With("component", "iiitest"),
		conns: map[string]*econn{}, functions: map[string]*function{}, pending: map[string]*pendingInv{},
		triggerTypes: map[string]*triggerType{}, triggers: map[string]*trigger{}, changed: make(chan struct{})}
	e.installBuiltins()
	e.Config = newConfigurationFake(e)
	e.State = newStateFake(e, !opts.NoState)
	e.Harness = newHarnessFake(e)
	e.Console = newConsoleFake(e)

	mux := http.NewServeMux()
	mux.HandleFunc("/otel", e.serveOtel)
	mux.HandleFunc("/", e.serveWorker)
	srv := httptest.NewUnstartedServer(mux)
	if opts.Addr != "" {
		l, err := net.Listen("tcp", opts.Addr)
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", opts.Addr, err)
		}
		srv.Listener = l
	}
	srv.Start()
	e.srv = srv
	return e, nil
}

// URL is the WebSocket URL workers connect to.
func (e *Engine) URL() string { return "ws" + strings.TrimPrefix(e.srv.URL, "http") }

// Close drops every connection and stops the server.
func (e *Engine) Close() {
	e.mu.Lock()
	conns := make([]*econn, 0, len(e.conns))
	for _, c := range e.conns {
		conns = append(conns, c)
	}
	e.mu.Unlock()
	for _, c := range conns {
		c.close()
		c.cleanup()
	}
	e.srv.CloseClientConnections()
	e.srv.Close()
}

// serveOtel accepts the telemetry side channel and records every binary
// frame (a 4-byte signal prefix, then OTLP JSON) unless DiscardFrames.
func (e *Engine) serveOtel(w http.ResponseWriter, r *http.Request) {
	if e.opts.NoOtel {
		http.NotFound(w, r)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	ws.SetReadLimit(-1)
	for {
		typ, b, err := ws.Read(r.Context())
		if err != nil {
			return
		}
		if typ == websocket.MessageBinary && !e.opts.DiscardFrames {
			e.mu.Lock()
			e.otel = append(e.otel, b)
			e.mu.Unlock()
		}
	}
}

// OtelFrames returns the binary frames received on /otel so far.
func (e *Engine) OtelFrames() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]byte{}, e.otel...)
}

func (e *Engine) serveWorker(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	ws.SetReadLimit(-1)
	c := &econn{e: e, id: uuid.NewString(), token: uuid.NewString(), ws: ws, connectedAt: time.Now(), remote: r.RemoteAddr,
		wake: make(chan struct{}, 1), closeCh: make(chan struct{}), serving: map[string]bool{}, started: map[string]bool{}, cleaned: make(chan struct{})}
	e.mu.Lock()
	e.conns[c.id] = c
	e.mu.Unlock()
	go c.writeLoop()
	c.send(&iii.Frame{Type: iii.TypeWorkerRegistered, WorkerID: c.id, ReattachToken: c.token})
	e.fireWorkersAvailable("worker_connected", c.id)

	ctx := context.Background()
	for {
		typ, b, err := ws.Read(ctx)
		if err != nil {
			break
		}
		if typ == websocket.MessageBinary && (hasPrefix(b, "OTLP") || hasPrefix(b, "MTRC") || hasPrefix(b, "LOGS")) {
			continue
		}
		if strings.TrimSpace(string(b)) == "" {
			continue
		}
		c.handle(b)
	}
	c.close()
	c.cleanup()
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// --- outbound queue ---

func (c *econn) send(f *iii.Frame) {
	b := iii.EncodeFrame(f)
	c.sendRaw(b, f)
}

func (c *econn) sendRaw(b []byte, f *iii.Frame) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, b)
	c.mu.Unlock()
	c.e.record(Recorded{Inbound: false, WorkerID: c.id, Worker: c.name(), Frame: *f, Raw: b, At: time.Now()})
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *econn) writeLoop() {
	for {
		c.mu.Lock()
		batch := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, b := range batch {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := c.ws.Write(ctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				c.close()
				return
			}
		}
		select {
		case <-c.wake:
		case <-c.closeCh:
			return
		}
	}
}

// live reports whether the connection is open.
func (c *econn) live() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.closed
}

// closeAfterFlush closes the connection once what is queued for it was
// handed to the socket (at most a second): a rejection reaches the worker
// before the close.
func (c *econn) closeAfterFlush() {
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		empty := len(c.queue) == 0
		c.mu.Unlock()
		if empty {
			break
		}
	}
	time.Sleep(50 * time.Millisecond)
	c.close()
}

func (c *econn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.closeCh)
	c.mu.Unlock()
	_ = c.ws.CloseNow()
}

func (c *econn) name() string {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	return c.meta.Name
}

// --- recording ---

func (e *Engine) record(r Recorded) {
	e.mu.Lock()
	if !e.opts.DiscardFrames {
		e.frames = append(e.frames, r)
	}
	ch := e.changed
	e.changed = make(chan struct{})
	e.mu.Unlock()
	close(ch)
}

// Frames returns every recorded frame so far.
func (e *Engine) Frames() []Recorded {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Recorded{}, e.frames...)
}

// Dropped returns the reasons of every frame the engine dropped as malformed.
func (e *Engine) Dropped() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string{}, e.dropped...)
}

// WaitFrame waits until a recorded frame satisfies pred (frames recorded
// before the call count too) and returns it.
func (e *Engine) WaitFrame(ctx context.Context, pred func(Recorded) bool) (Recorded, error) {
	seen := 0
	for {
		e.mu.Lock()
		frames := e.frames[seen:]
		seen = len(e.frames)
		ch := e.changed
		e.mu.Unlock()
		for _, r := range frames {
			if pred(r) {
				return r, nil
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Recorded{}, fmt.Errorf("waiting for a frame: %w", ctx.Err())
		}
	}
}

// WaitUntil polls cond on every recorded change (and every 50 ms) until it
// holds or ctx ends.
func (e *Engine) WaitUntil(ctx context.Context, cond func() bool) error {
	for {
		if cond() {
			return nil
		}
		e.mu.Lock()
		ch := e.changed
		e.mu.Unlock()
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return fmt.Errorf("waiting for a condition: %w", ctx.Err())
		}
	}
}

func (e *Engine) drop(c *econn, reason string) {
	e.log.Warn("iiitest: DROPPED FRAME", "worker_id", c.id, "reason", reason)
	e.mu.Lock()
	e.dropped = append(e.dropped, reason)
	ch := e.changed
	e.changed = make(chan struct{})
	e.mu.Unlock()
	close(ch)
}

// --- inbound frames, processed strictly in order per connection ---

func (c *econn) handle(b []byte) {
	e := c.e
	f, err := iii.DecodeFrame(b)
	if err != nil {
		e.drop(c, err.Error())
		return
	}
	e.record(Recorded{Inbound: true, WorkerID: c.id, Worker: c.name(), Frame: *f, Raw: append(json.RawMessage{}, b...), At: time.Now()})
	switch f.Type {
	case iii.TypeRegisterFunction:
		e.mu.Lock()
		if old, ok := e.functions[f.ID]; ok && old.owner != nil && old.owner != c {
			if e.opts.Refusing && old.owner.live() {
				owner := old.owner.id
				e.mu.Unlock()
				c.send(&iii.Frame{Type: iii.TypeRegistrationRejected, Code: "FUNCTION_NAMESPACE_CONFLICT", FunctionID: f.ID,
					Namespace: "default", OwnerWorkerID: owner})
				return
			}
			e.log.Warn("iiitest: function id taken over by another worker (0.22: last writer wins)", "function_id", f.ID)
		}
		e.functions[f.ID] = &function{id: f.ID, owner: c, description: f.Description, requestFormat: nullToNil(f.RequestFormat),
			responseFormat: nullToNil(f.ResponseFormat), metadata: nullToNil(f.Metadata)}
		e.mu.Unlock()
	case iii.TypeUnregisterFunction:
		e.mu.Lock()
		if fn, ok := e.functions[f.ID]; ok && fn.owner == c {
			delete(e.functions, f.ID)
		}
		e.mu.Unlock()
	case iii.TypeRegisterTriggerType:
		c.registerTriggerType(f)
	case iii.TypeRegisterTrigger:
		c.registerTrigger(f)
	case iii.TypeUnregisterTrigger:
		e.unregisterTrigger(f.ID)
	case iii.TypeTriggerRegistrationResult:
		c.triggerResult(f)
	case iii.TypeInvokeFunction:
		e.route(c, nil, f)
	case iii.TypeInvocationResult:
		e.complete(c, f)
	case iii.TypeReattach:
		c.reattach(f)
	case iii.TypePing:
		c.send(&iii.Frame{Type: iii.TypePong})
	}
}

func nullToNil(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	return b
}

func (c *econn) reattach(f *iii.Frame) {
	e := c.e
	if f.PreviousWorkerID == c.id {
		return
	}
	e.mu.Lock()
	old := e.conns[f.PreviousWorkerID]
	e.mu.Unlock()
	if old == nil {
		return
	}
	if old.token != f.ReattachToken {
		e.log.Warn("iiitest: reattach with a wrong token ignored", "previous_worker_id", f.PreviousWorkerID)
		return
	}
	old.close()
	done := make(chan struct{})
	go func() { old.cleanup(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// cleanup runs once for a closed connection (docs/behaviour.md#test-engine).
func (c *econn) cleanup() {
	c.cleanupOnce.Do(func() {
		e := c.e
		var stopped []*pendingInv
		var stoppedIDs []string
		var unbind []*trigger
		e.mu.Lock()
		for id, fn := range e.functions {
			if fn.owner == c {
				delete(e.functions, id)
			}
		}
		for id := range c.serving {
			if p, ok := e.pending[id]; ok {
				delete(e.pending, id)
				stopped = append(stopped, p)
				stoppedIDs = append(stoppedIDs, id)
			}
		}
		for id := range c.started {
			delete(e.pending, id)
		}
		for id, t := range e.triggers {
			if t.owner == c {
				if t.live {
					unbind = append(unbind, t)
				}
				delete(e.triggers, id)
			}
		}
		for id, tt := range e.triggerTypes {
			if tt.provider == c {
				delete(e.triggerTypes, id)
				for _, t := range e.triggers {
					if t.TriggerType == id {
						t.live = false
					}
				}
			}
		}
		delete(e.conns, c.id)
		e.mu.Unlock()
		for i, p := range stopped {
			e.reply(p, &iii.Frame{Type: iii.TypeInvocationResult, InvocationID: stoppedIDs[i], FunctionID: p.functionID,
				Error: &iii.ErrorBody{Code: "invocation_stopped", Message: "Invocation stopped"}})
		}
		for _, t := range unbind {
			e.deliverUnregister(t)
		}
		e.fireWorkersAvailable("worker_disconnected", c.id)
		close(c.cleaned)
	})
}

// --- invocations ---

// route handles an invokefunction from caller (a worker) or from local (a
// test's Invoke; caller nil).
func (e *Engine) route(caller *econn, local chan *iii.Frame, f *iii.Frame) {
	void := actionType(f.Action) == "void"
	enqueue := actionType(f.Action) == "enqueue"
	wantsReply := !void && (f.InvocationID != "" || local != nil)
	data := f.Data
	if caller != nil {
		data = addCaller(data, caller.id)
	}
	replyTo := func(fr *iii.Frame) {
		if !wantsReply {
			return
		}
		if local != nil {
			local <- fr
			return
		}
		caller.send(fr)
	}
	invID := f.InvocationID
	if invID == "" {
		invID = uuid.NewString()
	}
	if enqueue {
		if e.opts.Enqueue == EnqueueNoProvider {
			replyTo(&iii.Frame{Type: iii.TypeInvocationResult, InvocationID: invID, FunctionID: f.FunctionID,
				Error: &iii.ErrorBody{Code: "enqueue_error", Message: "No queue provider is installed: add one with `iii worker add queue`"}})
			return
		}
		receipt, _ := json.Marshal(map[string]string{"messageReceiptId": uuid.NewString()})
		replyTo(&iii.Frame{Type: iii.TypeInvocationResult, InvocationID: invID, FunctionID: f.FunctionID, Result: receipt})
		go e.route(nil, nil, &iii.Frame{Type: iii.TypeInvokeFunction, FunctionID: f.FunctionID, Data: data, Action: json.RawMessage(`{"type":"void"}`)})
		return
	}
	e.mu.Lock()
	fn := e.functions[f.FunctionID]
	e.mu.Unlock()
	if fn == nil {
		replyTo(&iii.Frame{Type: iii.TypeInvocationResult, InvocationID: invID, FunctionID: f.FunctionID,
			Error: &iii.ErrorBody{Code: "function_not_found", Message: fmt.Sprintf("Function %s not found", f.FunctionID)}})
		return
	}
	if fn.builtin != nil {
		go func() {
			if caller != nil && e.failing(f.FunctionID) {
				replyTo(&iii.Frame{Type: iii.TypeInvocationResult, InvocationID: invID, FunctionID: f.FunctionID,
					Error: &iii.ErrorBody{Code: "engine_busy", Message: "iiitest: FailNext"}})
				return
			}
			res, eb := fn.builtin(context.Background(), caller, data)
			replyTo(&iii.Frame{Type: iii.TypeInvocationResult, InvocationID: invID, FunctionID: f.FunctionID, Result: res, Error: eb})
		}()
		return
	}
	p := &pendingInv{caller: caller, local: local, functionID: f.FunctionID, callee: fn.owner, wantsReply: wantsReply}
	e.mu.Lock()
	e.pending[invID] = p
	if caller != nil {
		caller.started[invID] = true
	}
	fn.owner.serving[invID] = true
	e.mu.Unlock()
	fn.owner.send(&iii.Frame{Type: iii.TypeInvokeFunction, InvocationID: invID, FunctionID: f.FunctionID, Data: data,
		Metadata: f.Metadata, Traceparent: f.Traceparent, Baggage: f.Baggage})
}

func actionType(a json.RawMessage) string {
	var v struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(a, &v)
	return v.Type
}

func addCaller(data json.RawMessage, id string) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &obj) != nil {
		return data
	}
	obj["_caller_worker_id"], _ = json.Marshal(id)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(obj)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (e *Engine) complete(callee *econn, f *iii.Frame) {
	e.mu.Lock()
	p, ok := e.pending[f.InvocationID]
	if ok {
		delete(e.pending, f.InvocationID)
		delete(callee.serving, f.InvocationID)
		if p.caller != nil {
			delete(p.caller.started, f.InvocationID)
		}
	}
	e.mu.Unlock()
	if !ok {
		return
	}
	res := &iii.Frame{Type: iii.TypeInvocationResult, InvocationID: f.InvocationID, FunctionID: f.FunctionID, Error: f.Error}
	if f.Error == nil {
		res.Result = f.Result
	}
	e.reply(p, res)
}

func (e *Engine) reply(p *pendingInv, fr *iii.Frame) {
	if !p.wantsReply {
		return
	}
	if p.local != nil {
		p.local <- fr
		return
	}
	if p.caller != nil {
		p.caller.send(fr)
	}
}

// Invoke calls functionID as a test caller (no connection) and returns the
// raw result or the raw error body. It waits until ctx ends.
func (e *Engine) Invoke(ctx context.Context, functionID string, data any, metadata any) (json.RawMessage, *iii.ErrorBody, error) {
	d, err := toRaw(data)
	if err != nil {
		return nil, nil, err
	}
	m, err := toRaw(metadata)
	if err != nil {
		return nil, nil, err
	}
	if d == nil {
		d = json.RawMessage("null")
	}
	ch := make(chan *iii.Frame, 1)
	id := uuid.NewString()
	e.route(nil, ch, &iii.Frame{Type: iii.TypeInvokeFunction, InvocationID: id, FunctionID: functionID, Data: d, Metadata: m})
	select {
	case fr := <-ch:
		return fr.Result, fr.Error, nil
	case <-ctx.Done():
		e.mu.Lock()
		delete(e.pending, id)
		e.mu.Unlock()
		return nil, nil, ctx.Err()
	}
}

// fire invokes a bound function the way the engine fires its own trigger
// types: a fresh invocation id, the binding's metadata, no _caller_worker_id.
func (e *Engine) fire(ctx context.Context, functionID string, payload any, metadata json.RawMessage) (json.RawMessage, *iii.ErrorBody, error) {
	return e.Invoke(ctx, functionID, payload, metadata)
}

func toRaw(v any) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		return x, nil
	case []byte:
		return x, nil
	}
	return json.Marshal(v)
}

// CloseConnection drops every connection of the worker named name without a
// close handshake, as an engine crash would. It returns how many it closed.
func (e *Engine) CloseConnection(name string) int {
	e.mu.Lock()
	var cs []*econn
	for _, c := range e.conns {
		if c.meta.Name == name {
			cs = append(cs, c)
		}
	}
	e.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
	return len(cs)
}

// WaitWorker waits until a worker named name has reported its metadata and
// returns its worker id.
func (e *Engine) WaitWorker(ctx context.Context, name string) (string, error) {
	var id string
	err := e.WaitUntil(ctx, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, c := range e.conns {
			if c.meta.Name == name && c.meta.PID != nil {
				id = c.id
				return true
			}
		}
		return false
	})
	return id, err
}

// HasFunction reports whether id is registered.
func (e *Engine) HasFunction(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.functions[id]
	return ok
}

// FunctionIDs returns every registered function id, sorted.
func (e *Engine) FunctionIDs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	ids := make([]string, 0, len(e.functions))
	for id := range e.functions {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// ConnectionCount returns the number of live worker connections.
func (e *Engine) ConnectionCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.conns)
}

var errNoProvider = errors.New("no provider")
