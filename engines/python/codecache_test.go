package python

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// countCompiles is a first turn that counts CPython's "compile" audit
// events in the global C, for the turns after it to read.
const countCompiles = "import sys\nC = []\nsys.addaudithook(lambda event, args: C.append(1) if event == 'compile' else None)"

// keptTurns runs codes in order on one kept runtime and returns each
// turn's response; the first code creates the runtime.
func keptTurns(t *testing.T, r *rig, codes ...string) []resp {
	t.Helper()
	var out []resp
	id := ""
	for i, code := range codes {
		req := map[string]any{"code": code}
		if id == "" {
			req["keep"] = true
		} else {
			req["runtime_id"] = id
		}
		res, err := r.run(t, req)
		if err != nil {
			t.Fatalf("turn %d (%q): %v", i, code, err)
		}
		if id == "" {
			id = res.RuntimeID
		}
		out = append(out, res)
	}
	return out
}

// TestRepeatedSourceSkipsTheCompiler: a kept runtime keeps a source's code
// object from its second turn and runs it when the source comes again.
// CPython raises the "compile" audit event at every compile, so a hook
// counts them: the first two turns of a source compile, the later ones do
// not, a new source does, and the cached code still runs afresh each time
// (it reads and changes the live globals).
func TestRepeatedSourceSkipsTheCompiler(t *testing.T) {
	r := newRig(t, nil)
	const count = "n += 1\nresult = [n, len(C)]"
	got := keptTurns(t, r,
		countCompiles+"\nn = 0",
		count, count, count,
		count+"  # a different source",
	)
	want := []string{"[1,1]", "[2,2]", "[3,2]", "[4,3]"}
	for i, w := range want {
		if res := got[i+1]; string(res.Result) != w {
			t.Errorf("turn %d answered %s, want %s (stderr %q)", i+1, res.Result, w, res.Stderr)
		}
	}
}

// TestCompileWarningsShowEveryTime: a source whose compile warns is never
// cached, so the warning shows on every turn that runs it, and an "error"
// filter the tenant set fails it every time, as when each turn compiled.
// The tenant's filter list is left as the tenant made it.
func TestCompileWarningsShowEveryTime(t *testing.T) {
	r := newRig(t, nil)
	const warns = "x = 1 is 1\nresult = 'ran'"
	got := keptTurns(t, r, "y = 0", warns, warns)
	for i, res := range got[1:] {
		if string(res.Result) != `"ran"` || !strings.Contains(res.Stderr, "SyntaxWarning") {
			t.Errorf("turn %d: result %s, stderr %q; want the warning each time", i+1, res.Result, res.Stderr)
		}
	}
	got = keptTurns(t, r,
		"import warnings\nwarnings.simplefilter('error')",
		warns, warns,
		"import warnings\nresult = [len(warnings.filters), warnings.filters[0][0]]",
	)
	for i, res := range got[1:3] {
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "is") {
			t.Errorf("turn %d under an error filter: exit %d, result %s, stderr %q; want the compile to fail", i+1, res.ExitCode, res.Result, res.Stderr)
		}
	}
	fresh := r.mustRun(t, "import warnings\nwarnings.simplefilter('error')\nresult = len(warnings.filters)")
	if want := "[" + string(fresh.Result) + `,"error"]`; string(got[3].Result) != want {
		t.Errorf("the tenant's filters after cached compiles: %s, want %s", got[3].Result, want)
	}
}

// TestNewTurnsKeepWarningRegistries: checking a new source for compile
// warnings does not reset CPython's warning registries, so a warning shown
// once per location stays shown once across turns.
func TestNewTurnsKeepWarningRegistries(t *testing.T) {
	r := newRig(t, nil)
	got := keptTurns(t, r,
		"import warnings\ndef f():\n    warnings.warn('once per location')",
		"f()", "f()  # a new source", "f()  # and another")
	if !strings.Contains(got[1].Stderr, "once per location") {
		t.Fatalf("the first call did not warn: %q", got[1].Stderr)
	}
	for i, res := range got[2:] {
		if strings.Contains(res.Stderr, "once per location") {
			t.Errorf("turn %d showed the warning again: %q", i+2, res.Stderr)
		}
	}
}

// TestCompiledSourceStaysInItsRuntime: the cache is the interpreter's own.
// A tenant that plants a code object in its runtime's cache changes only
// what its own runtime runs: another kept runtime and a one-shot running
// the same source get their own compile.
func TestCompiledSourceStaysInItsRuntime(t *testing.T) {
	r := newRig(t, nil)
	const src = "result = 7"
	got := keptTurns(t, r,
		"import sys\nm = sys.modules['_code_runner_wrapper']\nm._code_cache["+`"result = 7"`+"] = compile('result = 666', '<code>', 'exec')",
		src)
	if string(got[1].Result) != "666" {
		t.Fatalf("the planted entry was not this runtime's cache (answered %s): the test no longer plants where the cache is", got[1].Result)
	}
	if other := keptTurns(t, r, "z = 0", src); string(other[1].Result) != "7" {
		t.Errorf("another kept runtime ran the planted code: %s", other[1].Result)
	}
	for i := 0; i < 3; i++ {
		if res := r.mustRun(t, src); string(res.Result) != "7" {
			t.Errorf("one-shot %d ran the planted code: %s", i, res.Result)
		}
	}
}

// TestAOneShotCompilesWithoutTheCache: a one-shot's interpreter is reset
// after its one turn, so whatever the cache kept would go with it; its
// source is compiled the plain way, without the warning check, the size
// walk or the entry, while a kept runtime's first turn keeps the entry.
func TestAOneShotCompilesWithoutTheCache(t *testing.T) {
	r := newRig(t, nil)
	const src = "import sys\nresult = sorted(sys.modules['_code_runner_wrapper']._code_cache)"
	res := r.mustRun(t, src)
	var keys []string
	if err := json.Unmarshal(res.Result, &keys); err != nil {
		t.Fatalf("%s: %v", res.Result, err)
	}
	for _, k := range keys {
		if k == src {
			t.Fatalf("the one-shot's source went into the code cache: %q", keys)
		}
	}
	kept := keptTurns(t, r, src, src) // kept from its second turn
	if err := json.Unmarshal(kept[1].Result, &keys); err != nil {
		t.Fatalf("%s: %v", kept[1].Result, err)
	}
	if !strings.Contains(strings.Join(keys, "\x00"), src) {
		t.Fatalf("a kept runtime's turn did not keep its source (cache %q): the test no longer looks where the cache is", keys)
	}
}

// compilesPerTurn runs setup, then body three times on one kept runtime
// with CPython's "compile" audit events counted, and returns how many
// compiles each of the three turns made.
func compilesPerTurn(t *testing.T, r *rig, setup, body string) []int {
	t.Helper()
	src := body + "\nresult = len(C)"
	got := keptTurns(t, r, countCompiles+"\n"+setup, src, src, src)
	var counts []int
	prev := 0
	for i, res := range got[1:] {
		var n int
		if err := json.Unmarshal(res.Result, &n); err != nil {
			t.Fatalf("turn %d answered %s (stderr %q)", i+1, res.Result, res.Stderr)
		}
		counts = append(counts, n-prev)
		prev = n
	}
	return counts
}

// TestUncacheableSourcesCompileOncePerTurn: a source the cache cannot keep
// — its compile warns (an invalid escape's DeprecationWarning, hidden by
// the default filters), or its constants are large — is remembered as
// such: after its first turn each turn compiles it once, as before the
// cache, not once to check and once more.
func TestUncacheableSourcesCompileOncePerTurn(t *testing.T) {
	r := newRig(t, nil)
	var big []string
	for c := 'a'; c < 'u'; c++ {
		big = append(big, fmt.Sprintf("%q * 4000", string(c)))
	}
	for name, body := range map[string]string{
		"an invalid escape": `x = "\d"`,
		"large constants":   "x = (" + strings.Join(big, ", ") + ")",
	} {
		// Its first turn compiles the plain way; its second checks it, finds it
		// uncacheable and compiles it again for the tenant's filters; later
		// turns compile it once.
		if got := compilesPerTurn(t, r, "", body); fmt.Sprint(got) != "[1 2 1]" {
			t.Errorf("%s: compiles per turn %v, want [1 2 1]", name, got)
		}
	}
	if got := compilesPerTurn(t, r, "", "x = 1"); fmt.Sprint(got) != "[1 1 0]" {
		t.Errorf("a cacheable source: compiles per turn %v, want [1 1 0]", got)
	}
}

// TestAReplacedWarningsModuleCachesNothing: with sys.modules['warnings']
// replaced, CPython's warnings no longer pass through the check, so the
// runtime compiles every turn the plain way rather than cache a source
// whose warnings it could not see.
func TestAReplacedWarningsModuleCachesNothing(t *testing.T) {
	r := newRig(t, nil)
	if got := compilesPerTurn(t, r, "sys.modules.pop('warnings')", "x = 1 is 1"); fmt.Sprint(got) != "[1 1 1]" {
		t.Errorf("compiles per turn %v, want [1 1 1]", got)
	}
}

// TestTheCodeCacheIsBounded: the cache keeps the last 32 sources it could
// keep; the oldest goes first, so after 40 sources run twice each the first
// compiles again and the last does not.
func TestTheCodeCacheIsBounded(t *testing.T) {
	r := newRig(t, nil)
	codes := []string{countCompiles}
	src := func(i int) string { return fmt.Sprintf("x = %d\nresult = len(C)", i) }
	for i := 0; i < 40; i++ {
		codes = append(codes, src(i), src(i))
	}
	codes = append(codes, src(39), src(0), "result = [len(C), len(sys.modules['_code_runner_wrapper']._code_cache)]")
	got := keptTurns(t, r, codes...)
	var before, last, first int
	_ = json.Unmarshal(got[80].Result, &before)
	_ = json.Unmarshal(got[81].Result, &last)
	_ = json.Unmarshal(got[82].Result, &first)
	if last != before || first != before+1 {
		t.Errorf("compiles: %d after 40 sources, %d after the newest again (want no compile), %d after the oldest again (want one)", before, last, first)
	}
	var final []int
	if err := json.Unmarshal(got[83].Result, &final); err != nil || len(final) != 2 || final[1] != 32 {
		t.Errorf("the cache holds %s entries, want 32", got[83].Result)
	}
}

// TestASourceSeenOnceIsNotKept: a runtime sent a new source every turn
// keeps none of them (each is compiled the plain way, its hash remembered
// in a bounded set), so the cache does not churn for sources that never
// come back.
func TestASourceSeenOnceIsNotKept(t *testing.T) {
	r := newRig(t, nil)
	const look = "import sys\nm = sys.modules['_code_runner_wrapper']\nresult = [len(m._code_cache), len(m._seen)]"
	codes := []string{look}
	for i := 0; i < 100; i++ {
		codes = append(codes, fmt.Sprintf("x = %d", i))
	}
	codes = append(codes, look)
	got := keptTurns(t, r, codes...)
	var before, after []int
	if json.Unmarshal(got[0].Result, &before) != nil || json.Unmarshal(got[len(got)-1].Result, &after) != nil || len(before) != 2 || len(after) != 2 {
		t.Fatalf("%s / %s", got[0].Result, got[len(got)-1].Result)
	}
	// The look turn runs twice, but 100 sources apart: its hash was pushed
	// out of the 64 remembered, so it too counts as seen once.
	if after[0] != before[0] {
		t.Errorf("the cache went from %d to %d entries over 100 sources seen once, want none added", before[0], after[0])
	}
	if after[1] > 64 {
		t.Errorf("%d hashes remembered, want at most 64", after[1])
	}
}
