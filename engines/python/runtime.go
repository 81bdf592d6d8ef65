package python

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/limits"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	"github.com/code-runner-go/code-runner/core"
)

// pyRuntime is one python runtime: a /work directory and the interpreter
// currently serving it (replaced after a kill; see docs/behaviour.md#python-what-survives).
type pyRuntime struct {
	e         *Engine
	loan      bool // the interpreter was borrowed from the pool: recycle it
	once      bool // a one-shot: its one turn compiles without the code cache
	workDir   string
	memMB     int64
	namespace string
	owner     string
	turn      chan struct{} // one turn at a time

	mu         sync.Mutex
	ip         *interp // nil until the next use boots one
	alive      bool
	destroyed  bool
	fns        map[string]bool
	sources    []source          // registration sources in order, for replay
	broken     map[string]string // ids whose source failed to replay
	onDeath    []func()
	lastActive time.Time
}

type source struct {
	id, code string
}

// turnResult is what one turn produced.
type turnResult struct {
	stdout, stderr string
	envelope       envelope
	failure        string // the failure text when the turn failed
	exited         bool   // a run ended by a non-zero SystemExit (failure may be empty)
	err            *core.Error
	killed         bool // the interpreter died (timeout, memory, exit, disk)
	diskOver       bool
}

type envelope struct {
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result"`
	Kind      string          `json:"kind"`
	Message   string          `json:"message"`
	Traceback *string         `json:"traceback"`
}

// Alive reports whether the runtime can serve another call.
func (r *pyRuntime) Alive() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.alive && !r.destroyed
}

// OnDeath registers fn to run when the runtime is destroyed by a kill.
func (r *pyRuntime) OnDeath(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onDeath = append(r.onDeath, fn)
}

// LastActive is when a turn last started or ended.
func (r *pyRuntime) LastActive() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastActive
}

// turnFrame is one turn for the wrapper (main.py's _turn): a struct, not a
// map, so encoding it reflects on no interface values and sorts no keys.
// An empty field is left out, which the wrapper reads as its default.
type turnFrame struct {
	Kind      string          `json:"kind"`
	Code      string          `json:"code,omitempty"`
	ID        string          `json:"id,omitempty"`
	Payload   json.RawMessage `json:"payload,omitempty"`
	Namespace string          `json:"namespace"`
	Once      bool            `json:"once,omitempty"` // a one-shot's turn: compile without the code cache
}

// Run executes one run turn (docs/behaviour.md#python-run).
func (r *pyRuntime) Run(ctx context.Context, ex core.Exec) (core.Outcome, error) {
	if !r.acquireTurn(ctx) {
		return core.Outcome{}, core.ErrTimeout()
	}
	defer r.releaseTurn()
	frame, _ := jsonx.Marshal(turnFrame{Kind: "run", Code: ex.Code, Namespace: r.namespace, Once: r.once})
	res := r.runTurn(ctx, frame, ex.Bridge)
	r.afterKill(ctx, res)
	if res.err != nil {
		return core.Outcome{}, res.err
	}
	out := core.Outcome{Stdout: res.stdout, Stderr: res.stderr}
	if res.failure != "" || res.exited {
		out.ExitCode = 1
		out.Stderr = appendFailure(out.Stderr, res.failure)
		return out, nil
	}
	out.Result = res.envelope.Result
	return out, nil
}

// isNamespaceRuntime reports whether this runtime backs a register_function
// namespace (run runtimes live under code-runner::<token>::).
func (r *pyRuntime) isNamespaceRuntime() bool {
	return !strings.HasPrefix(r.namespace, "code-runner::")
}

// afterKill applies docs/behaviour.md#runtimes-kills for a /work overflow: a run runtime is
// destroyed (and tombstoned by its owner); a namespace runtime's /work is
// emptied and it restarts with replay on next use.
func (r *pyRuntime) afterKill(ctx context.Context, res turnResult) {
	if !res.diskOver {
		return
	}
	if r.isNamespaceRuntime() {
		if err := wipe(r.workDir); err != nil {
			r.e.log.WarnContext(ctx, "a namespace's /work could not be emptied after it went over its budget", "namespace", r.namespace, "err", err)
		}
		return
	}
	r.mu.Lock()
	r.alive = false
	r.mu.Unlock()
}

func appendFailure(stderr, failure string) string {
	if stderr != "" && !strings.HasSuffix(stderr, "\n") {
		stderr += "\n"
	}
	return stderr + failure
}

func (r *pyRuntime) acquireTurn(ctx context.Context) bool {
	select {
	case r.turn <- struct{}{}:
		r.touch()
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *pyRuntime) releaseTurn() {
	r.touch()
	<-r.turn
}

func (r *pyRuntime) touch() {
	r.mu.Lock()
	r.lastActive = time.Now()
	r.mu.Unlock()
}

// interpreter returns the live interpreter, booting a fresh one on the same
// /work (and replaying registrations) when the last one died.
func (r *pyRuntime) interpreter(ctx context.Context) (*interp, error) {
	r.mu.Lock()
	ip := r.ip
	if r.destroyed {
		r.mu.Unlock()
		return nil, core.Errorf(core.CodeEngine, "the runtime was torn down")
	}
	r.mu.Unlock()
	if ip != nil && !ip.dead() {
		return ip, nil
	}
	if ip != nil {
		ip.dispose()
	}
	bctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ip, err := r.e.bootInterp(bctx, r.memMB, r.workDir)
	if err != nil {
		return nil, core.AsError(err, core.FnRun)
	}
	r.mu.Lock()
	r.ip = ip
	srcs := append([]source(nil), r.sources...)
	r.mu.Unlock()
	r.replay(ctx, srcs)
	return ip, nil
}

// replay re-runs the namespace's registration sources in order on a fresh
// interpreter (docs/behaviour.md#register-namespace-lifetime), each under default_timeout_ms.
func (r *pyRuntime) replay(ctx context.Context, srcs []source) {
	for _, s := range srcs {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), core.RunBudget(0, r.e.config()))
		frame, _ := jsonx.Marshal(turnFrame{Kind: "define", Code: s.code, ID: s.id, Namespace: r.namespace})
		res := r.runTurnOn(rctx, r.ip, frame, nil)
		cancel()
		r.mu.Lock()
		switch {
		case res.err != nil:
			r.broken[s.id] = res.err.Text
		case res.failure != "":
			r.broken[s.id] = strings.TrimSuffix(res.failure, "\n")
		default:
			delete(r.broken, s.id)
		}
		r.mu.Unlock()
		if res.err != nil || res.failure != "" {
			r.e.log.WarnContext(ctx, "a registration source failed to replay after its interpreter restarted", "namespace", r.namespace)
		}
		if res.killed {
			// The interpreter died while replaying; the rest replays on next use.
			return
		}
	}
}

func (r *pyRuntime) runTurn(ctx context.Context, frame []byte, bridge core.Bridge) turnResult {
	ip, err := r.interpreter(ctx)
	if err != nil {
		var ce *core.Error
		errors.As(err, &ce)
		return turnResult{err: ce}
	}
	return r.runTurnOn(ctx, ip, frame, bridge)
}

// runTurnOn executes one turn on ip: a permit first (the wait counts
// against the deadline), then the frame, guest requests answered until
// turn_done, the kill conditions checked before the envelope is trusted.
//
// Every guest frame is untrusted (tenant code can print the sentinel and
// rebind the wrapper's own functions), so the loop never blocks on the
// guest: frames are queued on stdin without waiting for the guest to read
// them, at most one guest request is outstanding (a second one is a
// protocol violation that kills the interpreter), a request's work ends
// with the turn, and the deadline always wins. The permit is returned on
// every path.
//
// The permit bounds computation, not waiting: while the guest is blocked
// on stdin waiting for the answer to a request of its own (iii.trigger,
// time.sleep), the turn gives its permit back, and takes one again —
// waiting under the turn's deadline — before the answer is queued and the
// guest can run. A guest that announces a request and goes on computing is
// never blocked on stdin, so it keeps its permit.
func (r *pyRuntime) runTurnOn(ctx context.Context, ip *interp, frame []byte, bridge core.Bridge) turnResult {
	if !r.e.acquire(ctx) {
		return turnResult{err: core.ErrTimeout()}
	}
	held := true
	defer func() {
		if held {
			r.e.release()
		}
	}()
	defer r.e.watchLong()()
	if err := ip.out.empty(); err != nil {
		// What is left is this runtime's own from its last turn.
		r.e.log.WarnContext(ctx, "python /out could not be emptied before a turn", "err", err)
	}
	ip.resetMemoryDenied()
	var stdout, stderr capture
	ip.stdout.setCapture(&stdout)
	ip.stderr.setCapture(&stderr)
	defer ip.stdout.setCapture(nil)
	defer ip.stderr.setCapture(nil)

	deadline, _ := ctx.Deadline()
	turnCtx, endTurn := context.WithCancel(ctx) // guest requests end with the turn
	defer endTurn()
	if err := ip.send(frame); err != nil {
		<-ip.done
		return r.afterDeath(ip, &stdout, &stderr)
	}
	watch := time.NewTicker(250 * time.Millisecond)
	defer watch.Stop()
	replies := make(chan []byte, 1)
	outstanding := false
	var pending []byte              // an answer waiting for the permit to come back
	regained := make(chan struct{}) // the permit is back for pending
	releaseIfWaiting := func() {
		if held && outstanding && pending == nil && ip.stdin.blocked() {
			r.e.release()
			held = false
		}
	}
	var done []byte // the latest turn_done; the turn ends once the guest waits on stdin again
	finish := func() turnResult {
		// The guest is blocked reading stdin: everything it printed before
		// is already queued. Take the last turn_done among it.
	drain:
		for {
			select {
			case ev := <-ip.events:
				if kindOf(ev) == "turn_done" {
					done = ev
				}
			default:
				break drain
			}
		}
		ip.stdout.flush()
		if res, killed := r.killVerdict(ctx, ip); killed {
			return res
		}
		return r.finishTurn(ip, done, &stdout, &stderr)
	}
	for {
		select {
		case <-ip.stdin.idle:
			if done != nil && !outstanding && ip.stdin.blocked() {
				return finish()
			}
			releaseIfWaiting()
		case ev := <-ip.events:
			switch kind := kindOf(ev); kind {
			case "turn_done":
				done = ev
				if !outstanding && ip.stdin.blocked() {
					return finish()
				}
			case "trigger", "sleep":
				if outstanding {
					// The wrapper never asks twice before reading its reply:
					// this is tenant code speaking the protocol.
					ip.kill()
					<-ip.done
					ip.stdout.flush()
					return r.afterDeath(ip, &stdout, &stderr)
				}
				outstanding = true
				go func() {
					if kind == "trigger" {
						replies <- r.trigger(turnCtx, ev, bridge, deadline)
					} else {
						replies <- r.sleep(turnCtx, ev)
					}
				}()
				releaseIfWaiting()
			}
		case rep := <-replies:
			if res, killed := r.killVerdict(ctx, ip); killed {
				// The answer came as the deadline passed (a sleep cut short,
				// a trigger that failed for it): the guest never sees it.
				return res
			}
			if held {
				outstanding = false
				_ = ip.send(rep) // queued; a guest that does not read only hurts itself
				break
			}
			pending = rep
			go func() {
				if r.e.acquire(turnCtx) {
					select {
					case regained <- struct{}{}:
					case <-turnCtx.Done():
						r.e.release()
					}
				}
			}()
		case <-regained:
			if res, killed := r.killVerdict(ctx, ip); killed {
				return res
			}
			held, outstanding = true, false
			_ = ip.send(pending)
			pending = nil
		case <-ip.done:
			ip.stdout.flush()
			if res, killed := r.killVerdict(ctx, ip); killed {
				return res
			}
			return r.afterDeath(ip, &stdout, &stderr)
		case b := <-ip.over:
			return r.diskKill(ip, b)
		case <-watch.C:
			if b := ip.overBudget(); b != nil {
				return r.diskKill(ip, b)
			}
		case <-ctx.Done():
			ip.kill()
			<-ip.done
			r.dropInterp(ip)
			return turnResult{err: core.ErrTimeout(), killed: true}
		}
	}
}

// killVerdict decides a turn's end before anything the guest said is
// read (a failure envelope, a death, a host answer): a budget crossed first,
// then a deadline that has passed. Either kills the interpreter; killed is
// false when neither holds (Appendix A: kill conditions come first).
func (r *pyRuntime) killVerdict(ctx context.Context, ip *interp) (turnResult, bool) {
	if b := ip.firstOver(); b != nil {
		return r.diskKill(ip, b), true
	}
	if b := ip.overBudget(); b != nil {
		return r.diskKill(ip, b), true
	}
	if ctx.Err() != nil {
		ip.kill()
		<-ip.done
		r.dropInterp(ip)
		return turnResult{err: core.ErrTimeout(), killed: true}, true
	}
	return turnResult{}, false
}

// overBudget measures /work and /out and returns the budget that is over
// (or had a write refused), if any.
func (ip *interp) overBudget() *budget {
	if ip.work.check() {
		return ip.work
	}
	if ip.out.check() {
		return ip.out
	}
	return nil
}

// diskKill ends a turn whose /work or /out went over its budget: the
// interpreter dies and the call gets the budget error naming that
// directory. Only a /work overflow touches the runtime itself
// (docs/behaviour.md#python-what-survives).
func (r *pyRuntime) diskKill(ip *interp, b *budget) turnResult {
	ip.kill()
	<-ip.done
	r.dropInterp(ip)
	return turnResult{killed: true, diskOver: b == ip.work,
		err: core.ErrDiskBudget(b.maxBytes, b.maxEntries, b.name)}
}

func (r *pyRuntime) dropInterp(ip *interp) {
	r.mu.Lock()
	if r.ip == ip {
		r.ip = nil
	}
	r.mu.Unlock()
}

func streams(stdout, stderr *capture) (string, string) {
	so, t1 := stdout.text()
	se, t2 := stderr.text()
	if t1 || t2 {
		se += truncationNote
	}
	return so, se
}

// afterDeath maps an interpreter that ended mid-turn (os._exit, trap,
// memory, a protocol violation) to its outcome; the runtime lives on and
// boots a fresh one.
func (r *pyRuntime) afterDeath(ip *interp, stdout, stderr *capture) turnResult {
	r.dropInterp(ip)
	if b := ip.firstOver(); b != nil {
		// A write refused for the budget made the guest fail on its way out.
		return r.diskKill(ip, b)
	}
	so, se := streams(stdout, stderr)
	if ip.memoryFull() {
		return turnResult{killed: true, err: ErrMemory(int64(ip.memCap >> 20))}
	}
	code, isExit := ip.exitStatus()
	failure := "execution ended abnormally without producing a result\n"
	if isExit && code < 126 {
		failure = fmt.Sprintf("code exited with status %d before completing\n", code)
	}
	return turnResult{stdout: so, stderr: se, failure: failure, killed: true}
}

// finishTurn checks the kill conditions, then takes the envelope from the
// turn_done event (missing or malformed: a failure).
func (r *pyRuntime) finishTurn(ip *interp, done []byte, stdout, stderr *capture) turnResult {
	if b := ip.overBudget(); b != nil {
		return r.diskKill(ip, b)
	}
	so, se := streams(stdout, stderr)
	res := turnResult{stdout: so, stderr: se}
	env, ok := parseEnvelope(done)
	if ok && env.OK {
		if len(env.Result) == 0 {
			env.Result = json.RawMessage("null")
		}
		res.envelope = env
		return res
	}
	if ip.memoryFull() {
		// Growth was denied and the turn did not end in a clean success:
		// the interpreter is recycled (linear memory never shrinks). A
		// MemoryError with memory to spare (the parser's "too complex", a
		// plain raise) is the tenant's exception like any other.
		ip.kill()
		<-ip.done
		r.dropInterp(ip)
		return turnResult{killed: true, err: ErrMemory(int64(ip.memCap >> 20))}
	}
	if !ok {
		res.failure = "execution ended abnormally without producing a result\n"
		return res
	}
	res.envelope = env
	if env.Kind == "exit" {
		// sys.exit(n ≠ 0): what CPython prints for the code, its own
		// newline included — nothing for an int.
		res.exited = true
		res.failure = env.Message
		return res
	}
	res.failure = env.Message + "\n"
	if env.Traceback != nil && *env.Traceback != "" {
		res.failure += *env.Traceback
	}
	return res
}

// parseEnvelope reads the envelope a turn_done event carries. The event is
// untrusted like every guest frame (tenant code can print the sentinel), but
// it can only speak for its own turn, and the kill conditions were checked
// first.
func parseEnvelope(done []byte) (envelope, bool) {
	var ev struct {
		Envelope *envelope `json:"envelope"`
	}
	if json.Unmarshal(done, &ev) != nil || ev.Envelope == nil {
		return envelope{}, false
	}
	return *ev.Envelope, true
}

type guestRequest struct {
	FunctionID string          `json:"function_id"`
	Payload    json.RawMessage `json:"payload"`
	TimeoutMS  float64         `json:"timeout_ms"`
	Seconds    float64         `json:"seconds"`
}

func replyFrame(ok bool, value any) []byte {
	b, _ := jsonx.Marshal(map[string]any{"ok": ok, "value": value})
	return b
}

// trigger answers a guest iii.trigger (docs/behaviour.md#guest-iii-python): host-side limits,
// the same-interpreter refusal, then the bridge (deny-list, timeouts).
func (r *pyRuntime) trigger(ctx context.Context, ev []byte, bridge core.Bridge, deadline time.Time) []byte {
	// Refusals made here, before the bridge, are counted like the bridge's.
	refuse := func(functionID, msg string) []byte {
		core.NoteRefusal(ctx, r.e.opts.Transport, functionID)
		return replyFrame(false, msg)
	}
	if len(ev) > limits.MaxGuestRequestBytes {
		return refuse("", fmt.Sprintf("iii request exceeded %d bytes and was refused", limits.MaxGuestRequestBytes))
	}
	var req guestRequest
	if err := json.Unmarshal(ev, &req); err != nil {
		return refuse("", "malformed iii request: "+err.Error())
	}
	if n := len(req.FunctionID); n > limits.MaxFunctionIDBytes {
		return refuse("", limits.OverMax("function_id", n, limits.MaxFunctionIDBytes))
	}
	var payloadText string
	if err := json.Unmarshal(req.Payload, &payloadText); err != nil || !json.Valid([]byte(payloadText)) {
		return refuse(req.FunctionID, "malformed iii request: payload is not JSON")
	}
	r.mu.Lock()
	own := r.fns[req.FunctionID]
	r.mu.Unlock()
	if own {
		return refuse(req.FunctionID, req.FunctionID+" is served by this same interpreter and cannot be called from inside a turn")
	}
	if bridge == nil {
		bridge = core.NewPolicyBridge(r.e.opts.Transport, r.e.config())
	}
	var ms uint64
	if req.TimeoutMS > 0 {
		ms = uint64(req.TimeoutMS)
		if ms == 0 {
			ms = 1
		}
	}
	res, err := bridge.Trigger(ctx, core.GuestTrigger{FunctionID: req.FunctionID, Payload: json.RawMessage(payloadText), TimeoutMS: ms, Deadline: deadline})
	if err != nil {
		return replyFrame(false, err.Error())
	}
	if len(res) == 0 {
		res = json.RawMessage("null")
	}
	return replyFrame(true, res)
}

// maxSleep bounds one guest sleep request; no run lasts that long.
const maxSleep = 24 * time.Hour

// sleep serves time.sleep inside the turn: it ends at the deadline or when
// the turn ends, whichever is first.
func (r *pyRuntime) sleep(ctx context.Context, ev []byte) []byte {
	var req guestRequest
	if err := json.Unmarshal(ev, &req); err != nil || math.IsNaN(req.Seconds) || req.Seconds < 0 {
		// The wrapper refuses these before asking; this is tenant code
		// speaking the protocol.
		return replyFrame(false, "invalid sleep length")
	}
	// Capped in float before the conversion (a huge value would overflow a
	// Duration into a negative one); the run's deadline ends it anyway.
	d := maxSleep
	if req.Seconds < maxSleep.Seconds() {
		d = time.Duration(req.Seconds * float64(time.Second))
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return replyFrame(true, nil)
	case <-ctx.Done():
		return replyFrame(false, "sleep interrupted: the run's deadline passed")
	}
}

// Destroy unregisters the runtime's functions, empties or deletes /work
// before it returns, and recycles or disposes of the interpreter in the
// background.
func (r *pyRuntime) Destroy() []string {
	r.mu.Lock()
	if r.destroyed {
		r.mu.Unlock()
		return nil
	}
	r.destroyed, r.alive = true, false
	ip := r.ip
	r.ip = nil
	ids := make([]string, 0, len(r.fns))
	for id := range r.fns {
		ids = append(ids, id)
	}
	r.fns = map[string]bool{}
	r.mu.Unlock()
	sort.Strings(ids)
	for _, id := range ids {
		if r.e.opts.Bus != nil {
			r.e.opts.Bus.UnregisterFunction(id)
		}
		r.e.opts.Registry.ReleaseFunction(id, r.owner)
	}
	// The interpreter and /work go in the background: nothing can reach them
	// any more, and the caller's response need not wait (Close does). A
	// loan is counted as on its way back from here, not from when that
	// work starts: on a busy worker the goroutine can start milliseconds
	// later, while the caller is already borrowing for its next call, and
	// the pool took the two for two borrowers and grew for both.
	// /work is emptied before Destroy returns — before teardown answers
	// (contract §22a.10) — while its interpreter is parked between turns
	// and so cannot write to it; the directory then stays with that
	// interpreter only if the reset below makes it pristine and the pool
	// takes it, and is deleted otherwise. An interpreter that is not
	// parked between turns (killed, or inside a turn — a handler waiting in
	// time.sleep is blocked on stdin too, but its turn goes on) is stopped
	// first and /work deleted, here too: it is never reset under a turn.
	idle := false
	select {
	case r.turn <- struct{}{}: // no turn holds the runtime; none can start (destroyed)
		<-r.turn
		idle = true
	default:
	}
	if ip != nil && idle && !ip.dead() && ip.stdin.blocked() {
		if err := ip.work.empty(); err != nil {
			r.e.log.Warn("python /work could not be emptied at the end of its runtime; deleting it", "err", err)
			ip.dispose()
			ip = nil
		}
	} else if ip != nil {
		ip.dispose()
		ip = nil
	}
	if ip == nil {
		r.e.removeWorkDir(r.workDir)
	}
	var returning func()
	if r.loan {
		returning = r.e.pool.Returning()
	}
	r.e.background(func() {
		if r.loan {
			r.e.recycle(ip, r.workDir, returning)
			return
		}
		if r.e.recycleKept(ip, r.workDir) {
			return
		}
		if ip != nil {
			ip.dispose()
			r.e.returnMemorySoon()
		}
		r.e.removeWorkDir(r.workDir)
	})
	return ids
}
