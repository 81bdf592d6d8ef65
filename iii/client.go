package iii

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/internal/gopool"
	"github.com/code-runner-go/code-runner/internal/jsonx"
	"github.com/code-runner-go/code-runner/internal/rawconn"

	"github.com/coder/websocket"
	"github.com/google/uuid"
)

// Options configure a Client. Zero values take the defaults of the wire
// protocol (docs/behaviour.md#wire-keepalive-and-reconnect).
type Options struct {
	URL         string            // engine WebSocket URL, e.g. ws://127.0.0.1:49134
	Headers     map[string]string // optional HTTP headers on the upgrade
	Name        string            // worker name reported to the engine
	Version     string            // worker version reported to the engine
	Description string            // worker description reported to the engine
	Namespace   string            // reported only when non-empty
	Logger      *slog.Logger

	DialTimeout    time.Duration // default 10 s
	PingInterval   time.Duration // default 20 s
	IdleTimeout    time.Duration // default 60 s without any inbound frame
	CallTimeout    time.Duration // default 30 s for outbound calls
	BackoffInitial time.Duration // default 1 s
	BackoffMax     time.Duration // default 30 s
	BackoffJitter  float64       // default 0.3

	// Contested, when set, names function ids other workers may hold too
	// (a group's shared ids, contract §24): a 0.23 engine's refusal of one
	// is expected and logged at INFO, not as an ERROR.
	Contested func(functionID string) bool
	// OnRejected is called for a WORKER_NAMESPACE_CONFLICT rejection, which
	// is fatal for the worker (docs/behaviour.md#wire-namespace-rejection).
	OnRejected func(code, detail string)
	// OnDialFailed, when set, is called after each failed connection
	// attempt, before the client logs it: failures counts the consecutive
	// failures so far (1 for the first), everConnected says whether any
	// attempt ever succeeded.
	OnDialFailed func(failures int, everConnected bool, err error)
	// OnConnected, when set, is called (on a goroutine of its own) each
	// time a connection is up and everything but the standby functions has
	// been registered on it again.
	OnConnected func()
}

func (o *Options) defaults() {
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.PingInterval == 0 {
		o.PingInterval = 20 * time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.BackoffInitial == 0 {
		o.BackoffInitial = time.Second
	}
	if o.BackoffMax == 0 {
		o.BackoffMax = 30 * time.Second
	}
	if o.BackoffJitter == 0 {
		o.BackoffJitter = 0.3
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// Request is one inbound invocation handed to a Handler.
type Request struct {
	InvocationID string
	FunctionID   string
	Data         json.RawMessage
	Metadata     json.RawMessage
	// Traceparent and Baggage are the caller's W3C trace context, as the
	// engine forwarded them ("" when absent).
	Traceparent string
	Baggage     string
}

// Handler serves a registered function. It returns a JSON-encodable result
// (json.RawMessage is sent as is; nil omits `result`) or an error; an
// *InvocationError keeps its code and message, any other error is sent as
// code invocation_failed.
type Handler func(ctx context.Context, req Request) (any, error)

// FunctionDef describes a function registration.
type FunctionDef struct {
	ID             string
	Description    string
	RequestFormat  json.RawMessage
	ResponseFormat json.RawMessage
	Metadata       json.RawMessage
}

// TriggerTypeDef describes a trigger type this worker provides.
type TriggerTypeDef struct {
	ID                   string
	Description          string
	TriggerRequestFormat json.RawMessage
	CallRequestFormat    json.RawMessage
}

// Binding is a trigger binding delivered to a provider.
type Binding struct {
	ID          string
	TriggerType string
	FunctionID  string
	Config      json.RawMessage
	Metadata    json.RawMessage
}

// Provider serves a trigger type: the engine delivers bindings of the type
// to it. A RegisterTrigger error is answered as trigger_registration_failed.
type Provider interface {
	RegisterTrigger(ctx context.Context, b Binding) error
	UnregisterTrigger(ctx context.Context, b Binding) error
}

// Trigger is a binding this worker registers.
type Trigger struct {
	ID          string // minted (UUID v4) when empty
	TriggerType string
	FunctionID  string
	Config      json.RawMessage // {} when nil
	Metadata    json.RawMessage
}

// Call is an outbound invocation.
type Call struct {
	FunctionID string
	Data       json.RawMessage // sent as null when nil
	// Action is nil for request/response, or a wire action such as
	// {"type":"void"} or {"type":"enqueue","queue":"q"}.
	Action   json.RawMessage
	Metadata json.RawMessage
	Timeout  time.Duration // 0 = Options.CallTimeout
	// Traceparent and Baggage carry the caller's W3C trace context to the
	// callee (omitted when "").
	Traceparent string
	Baggage     string
	// Namespace is where a 0.23 engine resolves FunctionID: "" means the
	// worker's own (Options.Namespace) — as the 0.23 Node and Python SDKs
	// do, so a guest reaches the functions its worker published there
	// (iii-wire §10). engine:: and configuration:: calls always go to
	// "default".
	Namespace string
}

// InvocationError is a remote error, or a local timeout (code TIMEOUT).
type InvocationError struct {
	Code       string
	Message    string
	FunctionID string
	Stacktrace string
	// Err is the handler's own error behind a wire error it returns, for
	// wrappers such as telemetry; never sent.
	Err error
}

// Unwrap returns Err.
func (e *InvocationError) Unwrap() error { return e.Err }

// Error returns "<code>: <message>".
func (e *InvocationError) Error() string { return e.Code + ": " + e.Message }

// Is makes a TIMEOUT error match ErrTimeout.
func (e *InvocationError) Is(target error) bool { return target == ErrTimeout && e.Code == "TIMEOUT" }

// Errors returned by Client.
var (
	ErrTimeout = errors.New("invocation timed out")
	ErrClosed  = errors.New("iii client closed")
)

// Client is one worker connection to an engine that reconnects forever and
// replays its registrations. All methods are safe for concurrent use.
type Client struct {
	opts Options
	log  *slog.Logger

	mu           sync.Mutex
	conn         *conn // nil while offline
	functions    map[string]*fnEntry
	fnOrder      []string
	triggerTypes map[string]*ttEntry
	ttOrder      []string
	triggers     map[string]*Trigger
	trOrder      []string
	bindings     map[string]Binding // delivered to our providers, by trigger id
	offline      []*pendingFrame
	pending      map[string]chan *Frame
	workerID     string
	token        string
	connectedCh  chan struct{} // closed while connected; replaced on disconnect
	closed       bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	// invokers run handlers on goroutines kept from one invocation to the
	// next, whose stacks stay grown (internal/gopool).
	invokers *gopool.Pool
}

type fnEntry struct {
	def FunctionDef
	h   Handler
	// standby: the handler is kept but the registration is sent only by
	// Reregister, never by RegisterFunction or a reconnect.
	standby bool
}

type ttEntry struct {
	def TriggerTypeDef
	p   Provider
}

// pendingFrame is an invoke buffered while offline; id is its pending key.
type pendingFrame struct {
	frame *Frame
	id    string
}

// New returns a Client and starts connecting in the background.
func New(opts Options) *Client {
	opts.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		opts: opts, log: opts.Logger,
		functions: map[string]*fnEntry{}, triggerTypes: map[string]*ttEntry{},
		triggers: map[string]*Trigger{}, bindings: map[string]Binding{},
		pending: map[string]chan *Frame{}, connectedCh: make(chan struct{}),
		ctx: ctx, cancel: cancel, done: make(chan struct{}),
		invokers: gopool.New(maxIdleInvokers),
	}
	go c.loop()
	return c
}

// maxIdleInvokers is how many handler goroutines wait between invocations:
// the concurrency a busy worker sees, with room to spare; past it, a burst's
// extra goroutines end after their invocation.
const maxIdleInvokers = 64

// WorkerID returns the worker id of the current (or last) connection.
func (c *Client) WorkerID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.workerID
}

// Connected reports whether the client has a connection now.
func (c *Client) Connected() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conn != nil
}

// WaitConnected blocks until the client is connected or ctx ends.
func (c *Client) WaitConnected(ctx context.Context) error {
	for {
		c.mu.Lock()
		ch, up := c.connectedCh, c.conn != nil
		c.mu.Unlock()
		if up {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return ErrClosed
		}
	}
}

// Close stops reconnecting, closes the connection and fails pending calls.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.done
		return nil
	}
	c.closed = true
	cn := c.conn
	c.mu.Unlock()
	c.cancel()
	if cn != nil {
		cn.close()
	}
	<-c.done
	c.invokers.Close()
	return nil
}

// RegisterFunction registers (or replaces) a function and its handler.
func (c *Client) RegisterFunction(def FunctionDef, h Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.functions[def.ID]; !ok {
		c.fnOrder = append(c.fnOrder, def.ID)
	}
	c.functions[def.ID] = &fnEntry{def: def, h: h}
	c.sendLocked(functionFrame(def))
}

// RegisterStandby keeps def and its handler without registering it: only
// Reregister sends it, and a reconnect does not send it again. A group's
// shared ids are held this way (contract §24): a worker registers one only
// when it finds no live worker holding it, so on an engine where the last
// writer wins (0.22) a worker that joins or reconnects does not take the
// ids from a live holder.
func (c *Client) RegisterStandby(def FunctionDef, h Handler) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.functions[def.ID]; !ok {
		c.fnOrder = append(c.fnOrder, def.ID)
	}
	c.functions[def.ID] = &fnEntry{def: def, h: h, standby: true}
}

// Reregister sends the registration of each of ids that this client
// serves once more. The engine may have dropped one it had: a 0.22 engine
// gives an id to its last writer and drops it when that worker leaves; a
// 0.23 engine refused it while another worker held it.
func (c *Client) Reregister(ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if fe := c.functions[id]; fe != nil {
			c.sendLocked(functionFrame(fe.def))
		}
	}
}

// UnregisterFunction removes a function registration.
func (c *Client) UnregisterFunction(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.functions[id]; !ok {
		return
	}
	delete(c.functions, id)
	c.fnOrder = remove(c.fnOrder, id)
	c.sendLocked(&Frame{Type: TypeUnregisterFunction, ID: id})
}

// RegisterTriggerType registers a trigger type this worker provides. Calling
// it again for the same id swaps the provider.
func (c *Client) RegisterTriggerType(def TriggerTypeDef, p Provider) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.triggerTypes[def.ID]; !ok {
		c.ttOrder = append(c.ttOrder, def.ID)
	}
	c.triggerTypes[def.ID] = &ttEntry{def: def, p: p}
	c.sendLocked(triggerTypeFrame(def))
}

// UnregisterTriggerType stops providing a trigger type. The engine has no
// message for this: the type stays listed until reconnect, and bindings
// delivered later are answered trigger_type_not_found.
func (c *Client) UnregisterTriggerType(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.triggerTypes, id)
	c.ttOrder = remove(c.ttOrder, id)
}

// RegisterTrigger registers a binding and returns its id.
func (c *Client) RegisterTrigger(t Trigger) string {
	if t.ID == "" {
		t.ID = uuid.NewString()
	}
	if t.Config == nil {
		t.Config = json.RawMessage("{}")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.triggers[t.ID]; !ok {
		c.trOrder = append(c.trOrder, t.ID)
	}
	tc := t
	c.triggers[t.ID] = &tc
	c.sendLocked(triggerFrame(&tc))
	return t.ID
}

// UnregisterTrigger removes a binding this worker registered.
func (c *Client) UnregisterTrigger(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.triggers[id]
	if !ok {
		return
	}
	delete(c.triggers, id)
	c.trOrder = remove(c.trOrder, id)
	c.sendLocked(&Frame{Type: TypeUnregisterTrigger, ID: id, TriggerType: t.TriggerType})
}

// Invoke calls a function on the bus. A void action returns (nil, nil) once
// the frame is queued; otherwise Invoke waits for the result up to the
// call's timeout (an *InvocationError with code TIMEOUT and message
// "invocation timed out after <n>ms"), ctx, or Close. While offline the call
// is buffered and sent on reconnect, still bounded by its timeout.
func (c *Client) Invoke(ctx context.Context, call Call) (json.RawMessage, error) {
	timeout := call.Timeout
	if timeout <= 0 {
		timeout = c.opts.CallTimeout
	}
	data := call.Data
	if data == nil {
		data = json.RawMessage("null")
	}
	f := &Frame{Type: TypeInvokeFunction, FunctionID: call.FunctionID, Data: data, Action: call.Action, Metadata: call.Metadata,
		Traceparent: call.Traceparent, Baggage: call.Baggage}
	switch {
	case strings.HasPrefix(call.FunctionID, "engine::") || strings.HasPrefix(call.FunctionID, "configuration::"):
		if call.FunctionID != "engine::workers::register" {
			f.Namespace = "default"
		}
	case call.Namespace != "":
		f.Namespace = call.Namespace
	default:
		f.Namespace = c.opts.Namespace // omitted when the worker has none
	}
	if isVoid(call.Action) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			return nil, ErrClosed
		}
		c.sendInvokeLocked(f, "")
		return nil, nil
	}
	id := uuid.NewString()
	f.InvocationID = id
	ch := make(chan *Frame, 1)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.pending[id] = ch
	c.sendInvokeLocked(f, id)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()

	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case res := <-ch:
		if res.Error != nil {
			return nil, &InvocationError{Code: res.Error.Code, Message: res.Error.Message, FunctionID: call.FunctionID, Stacktrace: res.Error.Stacktrace}
		}
		return res.Result, nil
	case <-timer.C:
		return nil, &InvocationError{Code: "TIMEOUT", Message: fmt.Sprintf("invocation timed out after %dms", timeout.Milliseconds()), FunctionID: call.FunctionID}
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, ErrClosed
	}
}

func isVoid(action json.RawMessage) bool {
	if len(action) == 0 {
		return false
	}
	var a struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(action, &a) == nil && a.Type == "void"
}

// sendLocked sends a registration frame if connected; offline it is only
// remembered in the maps and replayed on connect.
func (c *Client) sendLocked(f *Frame) {
	if c.conn != nil {
		c.conn.send(encodeFrame(f))
	}
}

// sendInvokeLocked sends an invoke, or buffers it while offline.
func (c *Client) sendInvokeLocked(f *Frame, pendingID string) {
	if c.conn != nil {
		c.conn.send(encodeFrame(f))
		return
	}
	c.offline = append(c.offline, &pendingFrame{frame: f, id: pendingID})
}

func functionFrame(def FunctionDef) *Frame {
	f := &Frame{Type: TypeRegisterFunction, ID: def.ID, RequestFormat: def.RequestFormat, ResponseFormat: def.ResponseFormat, Metadata: def.Metadata}
	if def.Description != "" {
		d := def.Description
		f.Description = &d
	}
	return f
}

func triggerTypeFrame(def TriggerTypeDef) *Frame {
	d := def.Description
	return &Frame{Type: TypeRegisterTriggerType, ID: def.ID, Description: &d, TriggerRequestFormat: def.TriggerRequestFormat, CallRequestFormat: def.CallRequestFormat}
}

func triggerFrame(t *Trigger) *Frame {
	return &Frame{Type: TypeRegisterTrigger, ID: t.ID, TriggerType: t.TriggerType, FunctionID: t.FunctionID, Config: t.Config, Metadata: t.Metadata}
}

func remove(list []string, s string) []string {
	for i, v := range list {
		if v == s {
			return append(list[:i:i], list[i+1:]...)
		}
	}
	return list
}

// loop connects, serves, and reconnects with backoff until Close.
func (c *Client) loop() {
	defer close(c.done)
	attempt := 0
	connected := false
	for {
		if c.ctx.Err() != nil {
			return
		}
		cn, err := c.dial()
		if err == nil {
			attempt = 0
			connected = true
			c.serve(cn)
		} else if c.ctx.Err() == nil {
			if c.opts.OnDialFailed != nil {
				c.opts.OnDialFailed(attempt+1, connected, err)
			}
			c.log.Warn("iii: connect failed", "url", c.opts.URL, "err", err)
		}
		if c.ctx.Err() != nil {
			return
		}
		delay := c.backoff(attempt)
		attempt++
		select {
		case <-time.After(delay):
		case <-c.ctx.Done():
			return
		}
	}
}

func (c *Client) backoff(attempt int) time.Duration {
	d := c.opts.BackoffInitial
	for i := 0; i < attempt && d < c.opts.BackoffMax; i++ {
		d *= 2
	}
	if d > c.opts.BackoffMax {
		d = c.opts.BackoffMax
	}
	j := c.opts.BackoffJitter * (2*rand.Float64() - 1)
	return time.Duration(float64(d) * (1 + j))
}

func (c *Client) dial() (*conn, error) {
	ctx, cancel := context.WithTimeout(c.ctx, c.opts.DialTimeout)
	defer cancel()
	cn := newConn(c.log)
	hdr := make(map[string][]string, len(c.opts.Headers))
	for k, v := range c.opts.Headers {
		hdr[k] = []string{v}
	}
	ws, _, err := websocket.Dial(ctx, c.opts.URL, &websocket.DialOptions{
		// Bus traffic does not wake the runtime's parked monitor, and the
		// writer can cork the socket (conn.writeLoop).
		HTTPClient:     rawconn.HTTPClientWith(func(rc *rawconn.Conn) { cn.raw = rc }),
		HTTPHeader:     hdr,
		OnPingReceived: func(context.Context, []byte) bool { cn.touch(); return true },
		OnPongReceived: func(context.Context, []byte) { cn.touch() },
	})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(-1)
	cn.ws = ws
	return cn, nil
}

// serve runs one connection until it fails or the client closes.
func (c *Client) serve(cn *conn) {
	go cn.writeLoop()
	c.mu.Lock()
	if c.workerID != "" && c.token != "" {
		cn.send(encodeFrame(&Frame{Type: TypeReattach, PreviousWorkerID: c.workerID, ReattachToken: c.token}))
	}
	for _, id := range c.ttOrder {
		cn.send(encodeFrame(triggerTypeFrame(c.triggerTypes[id].def)))
	}
	for _, id := range c.fnOrder {
		if fe := c.functions[id]; !fe.standby {
			cn.send(encodeFrame(functionFrame(fe.def)))
		}
	}
	for _, id := range c.trOrder {
		cn.send(encodeFrame(triggerFrame(c.triggers[id])))
	}
	for _, pf := range c.offline {
		// Awaited invokes whose caller already gave up are dropped.
		if pf.id != "" {
			if _, waiting := c.pending[pf.id]; !waiting {
				continue
			}
		}
		cn.send(encodeFrame(pf.frame))
	}
	c.offline = nil
	cn.send(encodeFrame(c.metadataFrame()))
	c.conn = cn
	close(c.connectedCh)
	c.mu.Unlock()
	c.log.Info("iii: connected", "url", c.opts.URL)
	if c.opts.OnConnected != nil {
		go c.opts.OnConnected()
	}

	stopPing := make(chan struct{})
	go c.keepalive(cn, stopPing)
	err := c.readLoop(cn)
	close(stopPing)

	c.mu.Lock()
	if c.conn == cn {
		c.conn = nil
	}
	c.connectedCh = make(chan struct{})
	c.mu.Unlock()
	cn.close()
	if c.ctx.Err() == nil {
		c.log.Warn("iii: connection lost; reconnecting", "err", err)
	}
}

// Announce reports the worker's metadata (engine::workers::register) again
// on the live connection, so the engine fires engine::workers-available
// (worker_metadata_updated) once what was registered since connecting is
// in place; offline it does nothing (a reconnect reports it after
// registering everything).
func (c *Client) Announce() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		c.conn.send(encodeFrame(c.metadataFrame()))
	}
}

func (c *Client) metadataFrame() *Frame {
	meta := map[string]any{
		"runtime":     "go",
		"version":     c.opts.Version,
		"name":        c.opts.Name,
		"description": c.opts.Description,
		"os":          runtime.GOOS + " " + runtime.GOARCH,
		"pid":         os.Getpid(),
	}
	if c.opts.Namespace != "" {
		meta["namespace"] = c.opts.Namespace
	}
	data, _ := jsonx.Marshal(meta)
	return &Frame{Type: TypeInvokeFunction, FunctionID: "engine::workers::register", Data: data, Action: json.RawMessage(`{"type":"void"}`)}
}

// keepalive pings every PingInterval and declares the connection dead after
// IdleTimeout without any inbound frame.
func (c *Client) keepalive(cn *conn, stop chan struct{}) {
	t := time.NewTicker(c.opts.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			if cn.idleFor() > c.opts.IdleTimeout {
				c.log.Warn("iii: no inbound frame for too long; dropping the connection", "idle", cn.idleFor().Round(time.Second))
				cn.close()
				return
			}
			go func() {
				ctx, cancel := context.WithTimeout(c.ctx, c.opts.PingInterval)
				defer cancel()
				if cn.ws.Ping(ctx) == nil {
					cn.touch()
				}
			}()
		}
	}
}

func (c *Client) readLoop(cn *conn) error {
	for {
		_, b, err := cn.ws.Read(c.ctx)
		if err != nil {
			return err
		}
		cn.touch()
		f, err := DecodeFrame(b)
		if err != nil {
			c.log.Warn("iii: dropped an undecodable frame", "err", err)
			continue
		}
		c.dispatch(cn, f)
	}
}

func (c *Client) dispatch(cn *conn, f *Frame) {
	switch f.Type {
	case TypeWorkerRegistered:
		c.mu.Lock()
		c.workerID, c.token = f.WorkerID, f.ReattachToken
		c.mu.Unlock()
	case TypeInvokeFunction:
		c.invokers.Go(func() { c.handleInvoke(cn, f) })
	case TypeInvocationResult:
		c.mu.Lock()
		ch := c.pending[f.InvocationID]
		c.mu.Unlock()
		if ch != nil {
			select {
			case ch <- f:
			default:
			}
		}
	case TypeRegisterTrigger:
		go c.handleRegisterTrigger(cn, f)
	case TypeUnregisterTrigger:
		go c.handleUnregisterTrigger(f)
	case TypeTriggerRegistrationResult:
		if f.Error != nil {
			c.log.Warn("iii: trigger registration failed", "trigger_id", f.ID, "trigger_type", f.TriggerType, "function_id", f.FunctionID, "code", f.Error.Code, "message", f.Error.Message)
		}
	case TypePing:
		cn.send(encodeFrame(&Frame{Type: TypePong}))
	case TypeRegistrationRejected:
		if f.Code == "WORKER_NAMESPACE_CONFLICT" {
			c.log.Error("iii: the engine rejected this worker's name", "namespace", f.Namespace, "worker_name", f.WorkerName)
			if c.opts.OnRejected != nil {
				c.opts.OnRejected(f.Code, fmt.Sprintf("worker name %q is already taken in namespace %q", f.WorkerName, f.Namespace))
			}
		} else if c.opts.Contested != nil && c.opts.Contested(f.FunctionID) {
			c.log.Info("iii: another worker holds this id; this one stands by to take it over", "code", f.Code, "function_id", f.FunctionID, "namespace", f.Namespace)
		} else {
			c.log.Error("iii: the engine rejected a function registration", "code", f.Code, "function_id", f.FunctionID, "namespace", f.Namespace)
		}
	}
}

func (c *Client) handleInvoke(cn *conn, f *Frame) {
	c.mu.Lock()
	fe := c.functions[f.FunctionID]
	c.mu.Unlock()
	// Every path below ends in exactly one reply.
	reply := func(result json.RawMessage, eb *ErrorBody) {
		if f.InvocationID == "" {
			return
		}
		// A reply computed for an old connection is never sent on a new one.
		cn.send(encodeFrame(&Frame{Type: TypeInvocationResult, InvocationID: f.InvocationID, FunctionID: f.FunctionID, Result: result, Error: eb}))
	}
	if fe == nil {
		reply(nil, &ErrorBody{Code: "function_not_found", Message: fmt.Sprintf("Function %s not found", f.FunctionID)})
		return
	}
	var (
		res any
		err error
	)
	func() {
		defer func() {
			if p := recover(); p != nil {
				c.log.Error("iii: handler panicked", "function_id", f.FunctionID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				err = &InvocationError{Code: "invocation_failed", Message: fmt.Sprintf("handler for %s panicked", f.FunctionID)}
			}
		}()
		res, err = fe.h(c.ctx, Request{InvocationID: f.InvocationID, FunctionID: f.FunctionID, Data: f.Data, Metadata: f.Metadata,
			Traceparent: f.Traceparent, Baggage: f.Baggage})
	}()
	if err != nil {
		var ie *InvocationError
		if errors.As(err, &ie) {
			reply(nil, &ErrorBody{Code: ie.Code, Message: ie.Message, Stacktrace: ie.Stacktrace})
		} else {
			reply(nil, &ErrorBody{Code: "invocation_failed", Message: err.Error()})
		}
		return
	}
	b, merr := marshalValue(res)
	if merr != nil {
		reply(nil, &ErrorBody{Code: "invocation_failed", Message: "result is not JSON-encodable: " + merr.Error()})
		return
	}
	reply(b, nil)
}

func (c *Client) handleRegisterTrigger(cn *conn, f *Frame) {
	c.mu.Lock()
	tt := c.triggerTypes[f.TriggerType]
	c.mu.Unlock()
	result := &Frame{Type: TypeTriggerRegistrationResult, ID: f.ID, TriggerType: f.TriggerType, FunctionID: f.FunctionID}
	if tt == nil {
		result.Error = &ErrorBody{Code: "trigger_type_not_found", Message: "Trigger type not found"}
		cn.send(encodeFrame(result))
		return
	}
	b := Binding{ID: f.ID, TriggerType: f.TriggerType, FunctionID: f.FunctionID, Config: f.Config, Metadata: f.Metadata}
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("trigger provider panicked: %v", p)
			}
		}()
		return tt.p.RegisterTrigger(c.ctx, b)
	}()
	if err != nil {
		result.Error = &ErrorBody{Code: "trigger_registration_failed", Message: err.Error()}
	} else {
		c.mu.Lock()
		c.bindings[b.ID] = b
		c.mu.Unlock()
	}
	cn.send(encodeFrame(result))
}

func (c *Client) handleUnregisterTrigger(f *Frame) {
	c.mu.Lock()
	b, ok := c.bindings[f.ID]
	delete(c.bindings, f.ID)
	tt := c.triggerTypes[f.TriggerType]
	c.mu.Unlock()
	if !ok {
		b = Binding{ID: f.ID, TriggerType: f.TriggerType}
	}
	if tt == nil {
		return
	}
	func() {
		defer func() { _ = recover() }()
		_ = tt.p.UnregisterTrigger(c.ctx, b)
	}()
}

// Registered returns the function ids currently registered, sorted (for
// tests and diagnostics).
func (c *Client) Registered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := append([]string{}, c.fnOrder...)
	sort.Strings(ids)
	return ids
}
