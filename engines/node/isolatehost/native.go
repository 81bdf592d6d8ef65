package isolatehost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
	"github.com/code-runner-go/code-runner/internal/jsonx"
	"github.com/code-runner-go/code-runner/limits"
)

// native answers the prelude's one native function: native(op, ...args).
// The host's own operations are here (the console, process.exit, timers,
// iii.files, bus calls); the environment's (units, compiling, the
// transform, the clock, hashes) are jsenv's.
func (h *host) native(c *v8.Call) {
	op := c.StrView(0)
	switch {
	case op == "log":
		level, text, _ := strings.Cut(c.StrView(1), "\x00")
		h.consoleWrite(h.ownerOf(c), level, text, true)
	case op == "write":
		level, text, _ := strings.Cut(c.StrView(1), "\x00")
		if text != "" {
			h.consoleWrite(h.ownerOf(c), level, text, false)
		}
	case op == "exit":
		code, _ := strconv.Atoi(c.StrView(1))
		h.exitReq = &exitRequest{task: h.ownerOf(c), code: code}
		h.iso.TerminateNow()
	case op == "exitCode":
		// Per call: the task whose work set it (detached work's is ignored).
		if owner := h.ownerOf(c); owner != 0 {
			code, _ := strconv.Atoi(c.StrView(1))
			h.exitCodes[owner] = code
		}
	case op == "uncaught":
		h.uncaughtError(h.ownerOf(c), c.Str(1))
	case op == "memory":
		st := h.iso.HeapStats()
		b, _ := jsonx.Marshal(map[string]uint64{"rss": uint64(h.mem.guestKB()) << 10, "heapTotal": st.TotalHeapSize,
			"heapUsed": st.UsedHeapSize, "external": st.ExternalMemory, "arrayBuffers": 0})
		c.ReturnString(string(b))
	case strings.HasPrefix(op, "timer."):
		c.ReturnString(h.timerOp(strings.TrimPrefix(op, "timer."), c.StrView(1), h.ownerOf(c)))
	case op == "trigger":
		h.answer(c, h.trigger(c.StrView(1), h.ownerOf(c)))
	case op == "files.read":
		h.filesRead(c, c.StrView(1))
	case op == "files.write":
		var data []byte
		if c.Kind(2) == v8.KindBytes {
			data = c.BytesView(2)
		} else {
			data = []byte(c.StrView(2))
		}
		h.answer(c, h.filesWrite(c.StrView(1), data))
	case strings.HasPrefix(op, "files."):
		h.answer(c, h.filesOp(strings.TrimPrefix(op, "files."), c.StrView(1)))
	case h.env != nil && h.env.Op(c, op):
	case registrationOps[op]:
		h.answer(c, h.syncCall(op, c.Str(1), h.ownerOf(c)))
	default:
		c.Throw(v8.PlainError, "code-runner: unknown native operation "+strconv.Quote(op))
	}
}

// registrationOps are the calls the worker answers synchronously: they
// claim ids in its registry.
var registrationOps = map[string]bool{
	"registerFunction": true, "unregisterFunction": true, "registerTrigger": true, "unregisterTrigger": true,
	"registerTriggerType": true, "unregisterTriggerType": true,
}

// answer gives the prelude a nativeResult as JSON.
func (h *host) answer(c *v8.Call, res nativeResult) {
	b, _ := jsonx.Marshal(res)
	c.ReturnString(string(b))
}

// ownerOf is the task the calling code works for (its continuation's
// owner), or 0 when that task has already answered (its work is detached).
func (h *host) ownerOf(c *v8.Call) int64 {
	owner := int64(c.Owner())
	if _, ok := h.tasks[owner]; ok {
		return owner
	}
	return 0
}

// nativeResult is what native answers the prelude: {"v": value} or
// {"e": message, "k": kind, "q": quota}.
type nativeResult struct {
	V any    `json:"v,omitempty"`
	E string `json:"e,omitempty"`
	K string `json:"k,omitempty"`
	Q bool   `json:"q,omitempty"`
}

func fail(format string, args ...any) nativeResult {
	return nativeResult{E: fmt.Sprintf(format, args...), K: "Error"}
}

func asJSError(err error, out **v8.Error) bool { return errors.As(err, out) }

// uncaughtError fails the task owner with text (an error nothing caught:
// a timer callback, a tick, a rejection no one handled), as node ends its
// process; with no task in flight it is logged.
func (h *host) uncaughtError(owner int64, text string) {
	if _, ok := h.tasks[owner]; ok && owner != 0 {
		if _, seen := h.uncaught[owner]; !seen {
			h.uncaught[owner] = text
		}
		return
	}
	h.detachedLog("error", "Uncaught "+text)
}

// consoleWrite adds text to the stream of level (a console call's line
// when newline, else process.stdout/stderr's raw write) of the run owner's
// code belongs to, counted against the caps in bytes of text and in
// \n-separated lines (§4.3). Output of any other work — a handler, a
// definition, work whose call has answered — goes to the worker's log.
func (h *host) consoleWrite(owner int64, level, text string, newline bool) {
	if h.runTask == 0 || owner != h.runTask {
		h.detachedLog(level, text)
		return
	}
	if h.truncated {
		return
	}
	lines := strings.Count(text, "\n")
	if newline {
		lines++
	}
	if h.lines+lines > consoleMaxLines || h.bytes+len(text) > consoleMaxBytes {
		h.truncated = true
		return
	}
	h.lines += lines
	h.bytes += len(text)
	out := &h.stderr
	if level == "log" {
		out = &h.stdout
	}
	out.WriteString(text)
	if newline {
		out.WriteByte('\n')
	}
}

// detachedLog sends console output of work no call waits for to the
// worker's log, cut at what is left of the runtime's detachedMax.
func (h *host) detachedLog(level, text string) {
	left := detachedMax - h.detached
	if left <= 0 {
		return
	}
	if len(text) > left {
		text = strings.ToValidUTF8(text[:left], "")
	}
	h.detached += len(text)
	h.send(&hostproto.Msg{T: "log", Level: level, Text: text})
}

// taskFor is the task a guest bus call belongs to — its deadline is the one
// the call is clamped to, its id tells the worker whose call (and trace) it
// is: the owner's, else (work whose call has answered) the latest task in
// flight; nil with none.
func (h *host) taskFor(owner int64) *hostTask {
	if tk, ok := h.tasks[owner]; ok {
		return tk
	}
	var latest *hostTask
	for _, tk := range h.tasks {
		if latest == nil || tk.id > latest.id {
			latest = tk
		}
	}
	return latest
}

type triggerHead struct {
	FunctionID string   `json:"function_id"`
	Action     *string  `json:"action"`
	Timeout    *float64 `json:"timeout"`
	TimeoutMS  *float64 `json:"timeout_ms"`
}

func (h *host) trigger(arg string, owner int64) nativeResult {
	headText, payload, _ := strings.Cut(arg, "\x00")
	var head triggerHead
	if err := json.Unmarshal([]byte(headText), &head); err != nil {
		return fail("malformed iii request: %v", err)
	}
	if n := len(head.FunctionID); n > limits.MaxFunctionIDBytes {
		return fail("%s", limits.OverLimit("function id", n, limits.MaxFunctionIDBytes))
	}
	if n := len(payload); n > limits.MaxPayloadBytes {
		return fail("%s", limits.OverLimit("payload", n, limits.MaxPayloadBytes))
	}
	var action json.RawMessage
	if head.Action != nil {
		if n := len(*head.Action); n > limits.MaxActionBytes {
			return fail("%s", limits.OverLimit("action", n, limits.MaxActionBytes))
		}
		if *head.Action == "void" {
			action = json.RawMessage(`{"type":"void"}`)
		} else {
			var v map[string]any
			if err := json.Unmarshal([]byte(*head.Action), &v); err != nil {
				return fail("invalid action %q: %v", *head.Action, err)
			}
			action = json.RawMessage(*head.Action)
		}
	}
	if h.inflight >= maxInflight {
		return fail("too many concurrent iii.trigger calls (limit 32); await earlier calls before making more")
	}
	requested := head.TimeoutMS
	if requested == nil {
		requested = head.Timeout
	}
	var reqMS int64
	if requested != nil && *requested > 0 {
		reqMS = int64(*requested)
		if reqMS < 1 {
			reqMS = 1
		}
	}
	args, _ := jsonx.Marshal(map[string]any{"function_id": head.FunctionID, "payload": json.RawMessage(payload), "action": action, "timeout_ms": reqMS})
	h.nextCall++
	id := h.nextCall
	h.calls[id] = true
	h.callOwner[id] = owner
	h.inflight++
	var dl, task int64
	if tk := h.taskFor(owner); tk != nil {
		dl, task = tk.deadline.UnixMilli(), tk.id
	}
	h.send(&hostproto.Msg{T: "call", Call: id, Op: "trigger", Args: args, DeadlineMS: dl, Task: task})
	return nativeResult{V: id}
}

// syncCall asks the worker to perform op and waits for its answer
// (registrations, which must claim ids in the worker's registry).
func (h *host) syncCall(op, arg string, owner int64) nativeResult {
	h.nextCall++
	id := h.nextCall
	var task int64 // the call it serves, so the worker's own work for it joins that call's trace
	if tk := h.taskFor(owner); tk != nil {
		task = tk.id
	}
	h.send(&hostproto.Msg{T: "call", Call: id, Op: op, Args: json.RawMessage(orEmptyObject(arg)), Task: task})
	// Wait here, inside the native callback, reading the pipe ourselves;
	// everything else that arrives meanwhile is handled afterwards, in order.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := h.readUntil(deadline)
		if err != nil {
			if os.IsTimeout(err) {
				return fail("the worker did not answer %s in time", op)
			}
			return fail("the worker is gone")
		}
		if r.T != "reply" || r.Call != id {
			h.backlog = append(h.backlog, r)
			continue
		}
		if !r.OK {
			return fail("%s", r.Error)
		}
		var v any
		if len(r.Value) > 0 {
			_ = json.Unmarshal(r.Value, &v)
		}
		return nativeResult{V: v}
	}
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
