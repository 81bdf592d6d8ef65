package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/iii"
	"github.com/code-runner-go/code-runner/iii/iiitest"
)

// engineMode starts a test engine that behaves as a 0.22 engine (the last
// writer of an id wins) or, refusing, as a 0.23 one.
func engineMode(t *testing.T, refusing bool) *iiitest.Engine {
	t.Helper()
	e, err := iiitest.New(iiitest.Options{Logger: quiet(), Refusing: refusing})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// serveOnce runs Serve for a worker named name until it returns (or the
// bound passes) and gives back what it returned.
func serveOnce(t *testing.T, e *iiitest.Engine, name string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	return Serve(ctx, ServeOptions{URL: e.URL(), WorkerName: name, ConfigSource: "engine", Env: envFrom(nil), Log: quiet(),
		Engines: testEngines(0), NameWait: 500 * time.Millisecond})
}

// A second worker under the name of a live one is refused at start with a
// message naming III_WORKER_NAME, on a last-writer (0.22) engine — where it
// would otherwise take the first worker's ids over — and on a refusing
// (0.23) engine alike; the first worker goes on serving.
func TestASecondWorkerUnderALiveWorkersNameIsRefused(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		err := serveOnce(t, e, "cr-a")
		if err == nil || !strings.Contains(err.Error(), "III_WORKER_NAME") || !strings.Contains(err.Error(), `"cr-a"`) {
			t.Fatalf("refusing=%v: the second worker returned %v", refusing, err)
		}
		out, eb := runNode(t, e, map[string]any{"code": "return 7"})
		if eb != nil || out["result"] != float64(7) {
			t.Fatalf("refusing=%v: the first worker after the refusal: %v %+v", refusing, out, eb)
		}
	}
}

// When the worker holding the shared ids leaves, another worker holds them
// within seconds, on a last-writer (0.22) engine — where the leaving
// holder takes the ids with it — and on a refusing (0.23) engine — where
// the survivor's registrations had been refused — and serves runs.
func TestASurvivorTakesTheSharedIDsOverWhenTheHolderLeaves(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a, b := startPair(t, e)
		holder := func() string { return sharedHolder(t, e) }
		// The first to start holds the ids on both engine versions: a
		// worker that joins leaves them with their live holder.
		first, leaving, staying := "cr-a", a, "cr-b"
		_ = b
		deadline := time.Now().Add(15 * time.Second)
		for holder() != first {
			if time.Now().After(deadline) {
				t.Fatalf("refusing=%v: the shared ids are held by %q, want %s", refusing, holder(), first)
			}
			time.Sleep(20 * time.Millisecond)
		}
		leaving.stop()
		deadline = time.Now().Add(15 * time.Second)
		for holder() != staying {
			if time.Now().After(deadline) {
				t.Fatalf("refusing=%v: after %s left, the shared ids are held by %q", refusing, first, holder())
			}
			time.Sleep(50 * time.Millisecond)
		}
		out, eb := runNode(t, e, map[string]any{"code": "return 6 * 7"})
		if eb != nil || out["result"] != float64(42) {
			t.Fatalf("refusing=%v: a run after the takeover: %v %+v", refusing, out, eb)
		}
	}
}

// A kept runtime lives on the worker that made it and is served there
// whichever worker holds the shared ids: its id carries that worker's tag,
// a call on code-runner::run or teardown is forwarded to it, and once that
// worker is gone its runtimes answer expired — on both engine behaviours.
func TestAKeptRuntimeIsServedByItsWorkerWhicheverHoldsTheSharedIDs(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		b := startServe(t, e, ServeOptions{WorkerName: "cr-b"})
		// The first to start (cr-a) holds the shared ids on both engine
		// versions.
		otherName := "cr-b"
		ctx := ctxT(t)
		invoke := func(fn string, req map[string]any) (map[string]any, string) {
			t.Helper()
			res, eb, err := e.Invoke(ctx, fn, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if eb != nil {
				return nil, eb.Code
			}
			var out map[string]any
			_ = json.Unmarshal(res, &out)
			return out, ""
		}
		mine := "code-runner::run@" + Tag(otherName)
		if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(mine) }); err != nil {
			t.Fatalf("refusing=%v: %s never registered", refusing, mine)
		}
		kept, code := invoke(mine, map[string]any{"lang": "python", "keep": true, "code": "n = 1\nresult = n"})
		id, _ := kept["runtime_id"].(string)
		if code != "" || !strings.HasPrefix(id, "rt-"+Tag(otherName)) {
			t.Fatalf("refusing=%v: a kept runtime on %s: %v %s", refusing, otherName, kept, code)
		}
		// Through the shared id, which the other worker may hold: the same runtime, its globals.
		deadline := time.Now().Add(15 * time.Second)
		for i := 2; i <= 4; i++ {
			out, code := invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "n += 1\nresult = n"})
			if code != "" || out["result"] != float64(i) || out["runtime_id"] != id {
				t.Fatalf("refusing=%v: turn %d through the shared id: %v %s", refusing, i, out, code)
			}
			if time.Now().After(deadline) {
				t.Fatal("too slow")
			}
		}
		td, code := invoke("code-runner::teardown", map[string]any{"runtime_id": id})
		if code != "" || td["torn_down"] != true {
			t.Fatalf("refusing=%v: teardown through the shared id: %v %s", refusing, td, code)
		}
		if _, code := invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "result = 1"}); code != "code-runner::runtime_not_found" {
			t.Fatalf("refusing=%v: after its teardown: %s", refusing, code)
		}
		// Its worker goes: its runtimes expire.
		kept, _ = invoke(mine, map[string]any{"lang": "node", "keep": true, "code": "return 1"})
		id, _ = kept["runtime_id"].(string)
		b.stop()
		_, code = invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "return 2"})
		for code == "code-runner::engine" && time.Now().Before(deadline) { // the holder may be changing hands
			time.Sleep(100 * time.Millisecond)
			_, code = invoke("code-runner::run", map[string]any{"runtime_id": id, "code": "return 2"})
		}
		if code != "code-runner::expired" {
			t.Fatalf("refusing=%v: a runtime of a departed worker answered %q, want expired", refusing, code)
		}
	}
}

// One register_function namespace never spans two workers: a function
// registered through the shared id in a namespace another worker serves
// is registered there — in the same runtime, sharing its globals — and
// tearing the namespace down through the shared id tears it down there.
func TestANamespaceStaysOnTheWorkerThatServesIt(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-a"})
		startServe(t, e, ServeOptions{WorkerName: "cr-b"})
		// The worker that does not hold the shared ids (the first to start
		// holds them, on both engine versions) serves the namespace.
		otherName := "cr-b"
		ctx := ctxT(t)
		direct := "code-runner::register_function@" + Tag(otherName)
		if err := e.WaitUntil(ctx, func() bool { return e.HasFunction(direct) && e.HasFunction("code-runner::register_function") }); err != nil {
			t.Fatal(err)
		}
		register := func(fn, id, source string) {
			t.Helper()
			res, eb, err := e.Invoke(ctx, fn, map[string]any{"function_id": id, "lang": "node", "source": source}, nil)
			if err != nil || eb != nil {
				t.Fatalf("refusing=%v: %s %s: %s %+v %v", refusing, fn, id, res, eb, err)
			}
		}
		register(direct, "nsx::inc", "function handler() { globalThis.n = (globalThis.n || 0) + 1; return globalThis.n }")
		if h := sharedHolder(t, e); h != "cr-a" {
			t.Fatalf("refusing=%v: the shared ids are held by %q, want cr-a, the first to start", refusing, h)
		}
		register("code-runner::register_function", "nsx::read", "function handler() { return globalThis.n || 0 }")
		res, _, _ := e.Invoke(ctx, "engine::functions::list", map[string]any{"prefix": "nsx::"}, nil)
		if strings.Count(string(res), `"worker_name":"`+otherName+`"`) != 2 {
			t.Fatalf("refusing=%v: the namespace spans workers: %s", refusing, res)
		}
		for i := 1; i <= 2; i++ {
			if v, eb, err := e.Invoke(ctx, "nsx::inc", map[string]any{}, nil); err != nil || eb != nil || string(v) != fmt.Sprint(i) {
				t.Fatalf("%s %+v %v", v, eb, err)
			}
		}
		if v, eb, err := e.Invoke(ctx, "nsx::read", map[string]any{}, nil); err != nil || eb != nil || string(v) != "2" {
			t.Fatalf("refusing=%v: a function registered through the shared id does not share the namespace's runtime: %s %+v %v", refusing, v, eb, err)
		}
		td, eb, err := e.Invoke(ctx, "code-runner::teardown", map[string]any{"namespace": "nsx"}, nil)
		if err != nil || eb != nil || !strings.Contains(string(td), `"nsx::inc"`) || !strings.Contains(string(td), `"nsx::read"`) {
			t.Fatalf("refusing=%v: teardown through the shared id: %s %+v %v", refusing, td, eb, err)
		}
		if err := e.WaitUntil(ctx, func() bool { return !e.HasFunction("nsx::inc") && !e.HasFunction("nsx::read") }); err != nil {
			t.Fatalf("refusing=%v: the namespace's functions outlived its teardown", refusing)
		}
	}
}

// A listed worker under this name that is no code-runner answering its own
// id — a predecessor the engine still lists after it died without closing
// its connection, say — does not keep a restarted worker from serving.
func TestARestartIsNotRefusedForAPredecessorThatDoesNotAnswer(t *testing.T) {
	e := newTestEngine(t)
	ghost := iii.New(iii.Options{URL: e.URL(), Name: "cr-z", Logger: quiet()})
	t.Cleanup(func() { _ = ghost.Close() })
	if _, err := e.WaitWorker(ctxT(t), "cr-z"); err != nil {
		t.Fatal(err)
	}
	startServe(t, e, ServeOptions{WorkerName: "cr-z", NameWait: 300 * time.Millisecond})
	out, eb := runNode(t, e, map[string]any{"code": "return 5"})
	if eb != nil || out["result"] != float64(5) {
		t.Fatalf("%v %+v", out, eb)
	}
}

// sharedHolder is the name of the worker the engine lists for
// code-runner::run ("" when none holds it).
func sharedHolder(t *testing.T, e *iiitest.Engine) string {
	t.Helper()
	return listedFunctions(t, e, "code-runner::run")["code-runner::run"]
}

// listedFunctions maps the ids the engine lists under prefix (internal
// ones included) to the names of the workers serving them.
func listedFunctions(t *testing.T, e *iiitest.Engine, prefix string) map[string]string {
	t.Helper()
	res, eb, err := e.Invoke(ctxT(t), "engine::functions::list", map[string]any{"prefix": prefix, "include_internal": true}, nil)
	if err != nil || eb != nil {
		t.Fatal(err, eb)
	}
	rows, err := core.FunctionRows(res, "")
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, f := range rows {
		if strings.HasPrefix(f.FunctionID, prefix) {
			m[f.FunctionID] = f.WorkerName
		}
	}
	return m
}

// With two workers, the pre_generate hook and each console asset are bound
// once — by the worker holding the shared ids — so a generation gets the
// guidance once; when that worker leaves, the survivor binds them.
func TestAGroupBindsTheHookAndTheConsoleOnce(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a, b := startPair(t, e)
		ctx := ctxT(t)
		once := func() bool {
			return len(e.Harness.Bindings()) == 1 && len(e.Bindings("console:script")) == 1 && len(e.Bindings("console:style")) == 1
		}
		// The first to start holds the ids, on both engine versions.
		holder, leaving := "cr-a", a
		_ = b
		if err := e.WaitUntil(ctx, func() bool {
			return once() && sharedHolder(t, e) == holder && e.Harness.Bindings()[0].Owner == leavingID(t, e, holder)
		}); err != nil {
			t.Fatalf("refusing=%v: hook %+v, console %+v", refusing, e.Harness.Bindings(), e.Bindings("console:script"))
		}
		// Stays once: a few hold rounds later nothing is bound again.
		time.Sleep(600 * time.Millisecond)
		if !once() {
			t.Fatalf("refusing=%v: bound twice: hook %+v", refusing, e.Harness.Bindings())
		}
		out, err := e.Harness.FireHook(ctx, "You are helpful.")
		if err != nil || len(out) != 1 || strings.Count(string(out[0].Result), "code-runner") == 0 {
			t.Fatalf("refusing=%v: %+v %v", refusing, out, err)
		}
		leaving.stop()
		if err := e.WaitUntil(ctx, func() bool { return once() && sharedHolder(t, e) != holder && sharedHolder(t, e) != "" }); err != nil {
			t.Fatalf("refusing=%v: after the holder left: hook %+v, console %+v", refusing, e.Harness.Bindings(), e.Bindings("console:script"))
		}
	}
}

// leavingID is the engine's connection id of the worker named name.
func leavingID(t *testing.T, e *iiitest.Engine, name string) string {
	t.Helper()
	id, err := e.WaitWorker(ctxT(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A configuration change reaches every worker of a group once (each one's
// configuration trigger targets its own id), and new runtimes go where
// there is a free slot: the holder's first, then — once it is full — the
// other worker's, and capacity only when both are full.
func TestAGroupSharesOneConfigurationAndSpreadsNewRuntimes(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a, b := startPair(t, e)
		ctx := ctxT(t)
		holder, other := "cr-a", "cr-b" // the first to start holds the ids
		if err := e.WaitUntil(ctx, func() bool { return sharedHolder(t, e) == holder && e.HasFunction("code-runner::run@"+Tag(other)) }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // a hold round: each worker has seen the other
		applied := func(s *served) int { return strings.Count(s.logs.String(), "configuration applied") }
		beforeA, beforeB := applied(a), applied(b)
		c := a.app.Router.Live().Config
		c.MaxRuntimes = 1
		if eb := e.Config.SetValue(ctx, "code-runner", json.RawMessage(c.JSON())); eb != nil {
			t.Fatal(eb)
		}
		if err := e.WaitUntil(ctx, func() bool {
			return a.app.Router.Live().Config.MaxRuntimes == 1 && b.app.Router.Live().Config.MaxRuntimes == 1
		}); err != nil {
			t.Fatalf("refusing=%v: the change reached a=%d b=%d", refusing, a.app.Router.Live().Config.MaxRuntimes, b.app.Router.Live().Config.MaxRuntimes)
		}
		time.Sleep(300 * time.Millisecond)
		if applied(a)-beforeA != 1 || applied(b)-beforeB != 1 {
			t.Fatalf("refusing=%v: applied %d times on cr-a, %d on cr-b; want once each\n%s", refusing, applied(a)-beforeA, applied(b)-beforeB, a.logs.String())
		}
		keep := func() (string, string) {
			out, eb := runNode(t, e, map[string]any{"keep": true, "code": "globalThis.n = 1; return 1"})
			if eb != nil {
				return "", eb.Code
			}
			id, _ := out["runtime_id"].(string)
			return id, ""
		}
		first, code := keep()
		if code != "" || !strings.HasPrefix(first, "rt-"+Tag(holder)) {
			t.Fatalf("refusing=%v: the first kept runtime %q %s, want on %s", refusing, first, code, holder)
		}
		second, code := keep()
		if code != "" || !strings.HasPrefix(second, "rt-"+Tag(other)) {
			t.Fatalf("refusing=%v: the second kept runtime %q %s, want spread to %s", refusing, second, code, other)
		}
		if _, code := keep(); code != "code-runner::capacity" {
			t.Fatalf("refusing=%v: a third with both workers full answered %q, want capacity", refusing, code)
		}
		// Both stay reachable through the shared id.
		for _, id := range []string{first, second} {
			out, eb := runNode(t, e, map[string]any{"runtime_id": id, "code": "return ++globalThis.n"})
			if eb != nil || out["result"] != float64(2) {
				t.Fatalf("refusing=%v: %s: %v %+v", refusing, id, out, eb)
			}
		}
	}
}

// Two live code-runners whose names share a routing tag could not tell
// their runtimes apart: the second is refused at start, naming both and
// III_WORKER_NAME, and the first goes on serving.
func TestAWorkerWhoseTagAnotherHasIsRefused(t *testing.T) {
	twin := ""
	for i := 0; twin == ""; i++ {
		if n := fmt.Sprintf("cr-%d", i); Tag(n) == Tag("cr-a") && n != "cr-a" {
			twin = n
		}
	}
	e := newTestEngine(t)
	startServe(t, e, ServeOptions{WorkerName: "cr-a"})
	err := serveOnce(t, e, twin)
	var tc *TagCollisionError
	if !errors.As(err, &tc) || !strings.Contains(err.Error(), "III_WORKER_NAME") || !strings.Contains(err.Error(), `"cr-a"`) || !strings.Contains(err.Error(), `"`+twin+`"`) {
		t.Fatalf("the twin %s returned %v", twin, err)
	}
	if out, eb := runNode(t, e, map[string]any{"code": "return 3"}); eb != nil || out["result"] != float64(3) {
		t.Fatalf("%v %+v", out, eb)
	}
}

// Hostile guests in a group: no guest publishes an id under code-runner::
// — its own worker's per-worker ids, another worker's, one no worker has
// yet — by register_function (the namespace is reserved) or, from inside
// a runtime, iii.registerFunction or registerTriggerType (a runtime
// publishes only inside its own namespace);
// a runtime id forged with another worker's tag reaches that worker but no
// runtime; and a per-worker id applies the same checks as the shared one.
func TestGuestsCannotTakeOrForgeAGroupsIDs(t *testing.T) {
	e := engineMode(t, false)
	startServe(t, e, ServeOptions{WorkerName: "cr-a"})
	startServe(t, e, ServeOptions{WorkerName: "cr-b"})
	ctx := ctxT(t)
	if err := e.WaitUntil(ctx, func() bool {
		return e.HasFunction("code-runner::run@"+Tag("cr-a")) && e.HasFunction("code-runner::run@"+Tag("cr-b"))
	}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"code-runner::run@" + Tag("cr-a"), "code-runner::run@" + Tag("cr-b"), "code-runner::run@ffff", "code-runner::on-config-change@" + Tag("cr-b")}
	for _, id := range ids {
		res, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": id, "lang": "node", "source": "function handler() { return 'hijacked' }"}, nil)
		if err != nil || eb == nil || eb.Code != "code-runner::invalid_request" {
			t.Fatalf("register_function %s: %s %+v %v", id, res, eb, err)
		}
	}
	list, _ := json.Marshal(ids)
	src := `globalThis.r = [];
		for (const id of ` + string(list) + `) {
			try { iii.registerFunction(id, () => 'hijacked'); r.push('ok') } catch (e) { r.push(e.message) }
			try { iii.registerTriggerType({ id }, { registerTrigger() {}, unregisterTrigger() {} }); r.push('ok') } catch (e) { r.push(e.message) }
		}
		function handler() { return globalThis.r }`
	if res, eb, err := e.Invoke(ctx, "code-runner::register_function", map[string]any{"function_id": "hostile::a", "lang": "node", "source": src}, nil); err != nil || eb != nil {
		t.Fatalf("%s %+v %v", res, eb, err)
	}
	res, eb, err := e.Invoke(ctx, "hostile::a", map[string]any{}, nil)
	var msgs []string
	_ = json.Unmarshal(res, &msgs)
	if err != nil || eb != nil || len(msgs) != 2*len(ids) {
		t.Fatalf("%s %+v %v", res, eb, err)
	}
	for i, m := range msgs {
		if !strings.Contains(m, `must start with this runtime's namespace "hostile::"`) {
			t.Fatalf("registration %d (%s) answered %q", i, ids[i/2], m)
		}
	}
	// Every per-worker id still answers as code-runner's own route.
	for _, id := range ids[:2] {
		out, eb, err := e.Invoke(ctx, id, map[string]any{"lang": "node", "code": "return 'real'"}, nil)
		if err != nil || eb != nil || string(out) == "" || !strings.Contains(string(out), `"result":"real"`) {
			t.Fatalf("%s after the attempts: %s %+v %v", id, out, eb, err)
		}
	}
	// A runtime id forged under the other worker's tag reaches no runtime.
	kept, eb := runNode(t, e, map[string]any{"keep": true, "code": "globalThis.secret = 42; return 1"})
	if eb != nil {
		t.Fatal(eb)
	}
	real := kept["runtime_id"].(string)
	forged := real[:3+4] + strings.Repeat("0", 4) + real[3+8:] // same tag, other random bits
	for _, fn := range []string{"code-runner::run", "code-runner::run@" + real[3:7]} {
		if _, eb := func() (json.RawMessage, *iii.ErrorBody) {
			r, eb, _ := e.Invoke(ctx, fn, map[string]any{"runtime_id": forged, "code": "return globalThis.secret"}, nil)
			return r, eb
		}(); eb == nil || eb.Code != "code-runner::runtime_not_found" {
			t.Fatalf("%s with a forged id: %+v", fn, eb)
		}
	}
	// The per-worker id makes the shared id's checks: an oversized code
	// is refused alike.
	big := strings.Repeat("x", 1<<20+1)
	for _, fn := range []string{"code-runner::run", "code-runner::run@" + Tag("cr-a")} {
		_, eb, _ := e.Invoke(ctx, fn, map[string]any{"lang": "node", "code": big}, nil)
		if eb == nil || eb.Code != "code-runner::invalid_request" {
			t.Fatalf("%s with oversized code: %+v", fn, eb)
		}
	}
}

// The engine's engine::workers-available events drive the takeover: with
// the fallback timer set to an hour, a survivor still holds the shared ids
// within seconds of the holder leaving, on both engine behaviours, and
// knows the departed worker's runtimes as expired.
func TestTheTakeoverFollowsTheEnginesWorkerEvents(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a := startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: time.Hour})
		b := startServe(t, e, ServeOptions{WorkerName: "cr-b", HoldInterval: time.Hour})
		holder, leaving, staying := "cr-a", a, "cr-b" // the first to start holds the ids
		_ = b
		ctx := ctxT(t)
		if err := e.WaitUntil(ctx, func() bool { return sharedHolder(t, e) == holder }); err != nil {
			t.Fatalf("refusing=%v: held by %q", refusing, sharedHolder(t, e))
		}
		res, eb, err := e.Invoke(ctx, "code-runner::run@"+Tag(holder), map[string]any{"lang": "node", "keep": true, "code": "return 1"}, nil)
		var kept struct {
			RuntimeID string `json:"runtime_id"`
		}
		if err != nil || eb != nil || json.Unmarshal(res, &kept) != nil {
			t.Fatal(res, eb, err)
		}
		leaving.stop()
		deadline := time.Now().Add(10 * time.Second)
		for sharedHolder(t, e) != staying {
			if time.Now().After(deadline) {
				t.Fatalf("refusing=%v: 10 s after %s left the shared ids are held by %q", refusing, holder, sharedHolder(t, e))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if _, eb := runNode(t, e, map[string]any{"runtime_id": kept.RuntimeID, "code": "return 2"}); eb == nil || eb.Code != "code-runner::expired" {
			t.Fatalf("refusing=%v: the departed holder's runtime answered %+v, want expired", refusing, eb)
		}
	}
}

// A check the engine fails to answer is tried again within a second or
// two, not at the next tick: with the fallback timer set to an hour and the
// check prompted by the holder's departure failing, the survivor still
// takes the shared ids over.
func TestAFailedHolderCheckIsRetriedSoon(t *testing.T) {
	e := engineMode(t, false)
	a := startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: time.Hour})
	b := startServe(t, e, ServeOptions{WorkerName: "cr-b", HoldInterval: time.Hour})
	_ = b
	ctx := ctxT(t)
	if err := e.WaitUntil(ctx, func() bool { return sharedHolder(t, e) == "cr-a" }); err != nil {
		t.Fatalf("held by %q", sharedHolder(t, e))
	}
	e.FailNext("engine::functions::list", 4)
	a.stop()
	deadline := time.Now().Add(15 * time.Second)
	for sharedHolder(t, e) != "cr-b" {
		if time.Now().After(deadline) {
			t.Fatalf("15 s after cr-a left, with the prompted checks failing, the shared ids are held by %q", sharedHolder(t, e))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startPair starts two workers, cr-a then cr-b, on e, each checking the
// shared ids every 200 ms (so a takeover needs no engine event).
func startPair(t *testing.T, e *iiitest.Engine) (a, b *served) {
	t.Helper()
	a = startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: 200 * time.Millisecond})
	b = startServe(t, e, ServeOptions{WorkerName: "cr-b", HoldInterval: 200 * time.Millisecond})
	return a, b
}

// A worker that joins a group leaves the shared ids with their live holder
// on both engine versions — on 0.22 its registration would have taken them
// over, the last writer winning — so a rolling restart moves them only
// when the holder leaves: the joiner never sends a shared id while the
// holder lives, takes the ids within 5 s of the holder leaving, and keeps
// them when the old holder comes back under its name.
func TestAJoiningWorkerLeavesTheSharedIDsWithTheirHolder(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		a := startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: 200 * time.Millisecond})
		startServe(t, e, ServeOptions{WorkerName: "cr-b", HoldInterval: 200 * time.Millisecond})
		sentShared := func(name string) []string {
			t.Helper()
			conn := leavingID(t, e, name)
			var ids []string
			for _, r := range e.Frames() {
				if r.Inbound && r.WorkerID == conn && r.Frame.Type == iii.TypeRegisterFunction && isShared(r.Frame.ID) {
					ids = append(ids, r.Frame.ID)
				}
			}
			return ids
		}
		time.Sleep(time.Second) // five hold rounds on each worker
		if h := sharedHolder(t, e); h != "cr-a" {
			t.Fatalf("refusing=%v: a joiner took the shared ids: held by %q", refusing, h)
		}
		if sent := sentShared("cr-b"); len(sent) != 0 {
			t.Fatalf("refusing=%v: the joiner registered %v while cr-a held them", refusing, sent)
		}
		kept, eb := runNode(t, e, map[string]any{"keep": true, "code": "globalThis.n = 1; return 1"})
		if eb != nil || !strings.HasPrefix(kept["runtime_id"].(string), "rt-"+Tag("cr-a")) {
			t.Fatalf("refusing=%v: a kept run through the shared id: %v %+v", refusing, kept, eb)
		}
		a.stop()
		left := time.Now()
		for sharedHolder(t, e) != "cr-b" {
			if time.Since(left) > 5*time.Second {
				t.Fatalf("refusing=%v: 5 s after the holder left the shared ids are held by %q (contract §24.3)", refusing, sharedHolder(t, e))
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, eb := runNode(t, e, map[string]any{"runtime_id": kept["runtime_id"], "code": "return 2"}); eb == nil || eb.Code != "code-runner::expired" {
			t.Fatalf("refusing=%v: the departed holder's runtime: %+v, want expired", refusing, eb)
		}
		// The old holder comes back under its name: the ids stay.
		startServe(t, e, ServeOptions{WorkerName: "cr-a", HoldInterval: 200 * time.Millisecond})
		time.Sleep(time.Second)
		if h := sharedHolder(t, e); h != "cr-b" {
			t.Fatalf("refusing=%v: the restarted worker took the shared ids back: held by %q", refusing, h)
		}
		if sent := sentShared("cr-a"); len(sent) != 0 {
			t.Fatalf("refusing=%v: the restarted worker registered %v while cr-b held them", refusing, sent)
		}
		out, eb := runNode(t, e, map[string]any{"code": "return 6 * 7"})
		if eb != nil || out["result"] != float64(42) {
			t.Fatalf("refusing=%v: %v %+v", refusing, out, eb)
		}
	}
}

// The shared-id check reads only its own engine namespace's rows: on a
// 0.23 engine a group in namespace "a" holding code-runner::run says
// nothing about the ids of a group in "b" (which would otherwise never
// register them), while a 0.22 row (no namespace) is everyone's.
func TestTheHoldCheckReadsItsOwnNamespace(t *testing.T) {
	res := json.RawMessage(`{"functions":[
		{"function_id":"code-runner::run","worker_name":"cr-a","namespace":"a"},
		{"function_id":"code-runner::teardown","worker_name":"cr-b","namespace":"b"},
		{"function_id":"code-runner::run@1234","worker_name":"cr-c","namespace":"default"},
		{"function_id":"code-runner::register_function","worker_name":"old"}]}`)
	for _, tc := range []struct{ ns, want string }{
		{"b", "code-runner::teardown,code-runner::register_function"},
		{"a", "code-runner::run,code-runner::register_function"},
		{"", "code-runner::run@1234,code-runner::register_function"},
	} {
		rows, err := core.FunctionRows(res, tc.ns)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range rows {
			ids = append(ids, r.FunctionID)
		}
		if got := strings.Join(ids, ","); got != tc.want {
			t.Fatalf("namespace %q: %s, want %s", tc.ns, got, tc.want)
		}
	}
}

// A lone worker whose connection drops serves the shared ids again once it
// is back — they are on standby, so the reconnect itself does not send
// them; the check it prompts does — and a second drop and return does the
// same, on both engine behaviours.
func TestALoneWorkerServesTheSharedIDsAgainAfterAReconnect(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		e := engineMode(t, refusing)
		startServe(t, e, ServeOptions{WorkerName: "cr-solo"})
		ctx := ctxT(t)
		for drop := 1; drop <= 2; drop++ {
			before := leavingID(t, e, "cr-solo")
			if n := e.CloseConnection("cr-solo"); n != 1 {
				t.Fatalf("refusing=%v: closed %d connections", refusing, n)
			}
			if err := e.WaitUntil(ctx, func() bool {
				id, _ := e.WaitWorker(ctx, "cr-solo")
				return id != "" && id != before && sharedHolder(t, e) == "cr-solo"
			}); err != nil {
				t.Fatalf("refusing=%v drop %d: the shared ids are held by %q after the reconnect", refusing, drop, sharedHolder(t, e))
			}
			out, eb := runNode(t, e, map[string]any{"code": "return 6 * 7"})
			if eb != nil || out["result"] != float64(42) {
				t.Fatalf("refusing=%v drop %d: %v %+v", refusing, drop, out, eb)
			}
		}
	}
}
