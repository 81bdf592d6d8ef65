package python

import (
	"strings"
	"testing"
)

// Script idioms as under `python -c` (contract §5.2 point 4): SystemExit
// ends the turn, never the interpreter; a non-zero code is a failure with
// CPython's own text; sys.argv is ["<code>"], so unittest.main() and
// argparse work and report failure.
func TestScriptIdiomsReportAsPythonDoes(t *testing.T) {
	r := newRigWith(t, nil, nil)
	for _, tc := range []struct {
		name, code string
		exit       int
		stderrHas  string
		stderrNot  string
		result     string
	}{
		{"sys.exit() succeeds", "import sys\nresult = 1\nsys.exit()", 0, "", "", "1"},
		{"sys.exit(0) succeeds", "import sys\nresult = 2\nsys.exit(0)", 0, "", "", "2"},
		{"sys.exit(None) succeeds", "import sys\nsys.exit(None)", 0, "", "", "null"},
		{"sys.exit(3) fails and prints nothing", "import sys\nprint('out')\nsys.exit(3)", 1, "", "SystemExit", "null"},
		{"SystemExit(text) prints the text", "raise SystemExit('bad input')", 1, "bad input\n", "Traceback", "null"},
		{"exit() and quit()", "exit(4)", 1, "", "SystemExit", "null"},
		{"quit() with no code succeeds", "result = 5\nquit()", 0, "", "", "5"},
		{"sys.argv", "import sys\nresult = sys.argv", 0, "", "", `["<code>"]`},
		{"unittest, a failing test", "import unittest\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertEqual(1, 1)\n    def test_bad(self):\n        self.assertEqual(1, 2)\nunittest.main()", 1, "FAILED (failures=1)", "", "null"},
		{"unittest, passing tests", "import unittest\nclass T(unittest.TestCase):\n    def test_ok(self):\n        self.assertTrue(True)\nunittest.main()", 0, "Ran 1 test", "", "null"},
		{"argparse, a bad argument", "import argparse\np = argparse.ArgumentParser(prog='tool')\np.add_argument('--n', type=int)\np.parse_args(['--n', 'x'])", 1, "usage: tool [-h] [--n N]\ntool: error: argument --n: invalid int value: 'x'", "", "null"},
	} {
		res, err := r.run(t, map[string]any{"code": tc.code})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := string(res.Result)
		if got == "" {
			got = "null"
		}
		if res.ExitCode != tc.exit || res.Success != (tc.exit == 0) || !strings.Contains(res.Stderr, tc.stderrHas) ||
			(tc.stderrNot != "" && strings.Contains(res.Stderr, tc.stderrNot)) || got != tc.result {
			t.Errorf("%s: exit %d result %s stderr %q", tc.name, res.ExitCode, got, res.Stderr)
		}
	}
	// A kept runtime keeps its globals across sys.exit(1).
	k, err := r.run(t, map[string]any{"code": "x = 1\nresult = x", "keep": true})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "import sys\nx = 41\nsys.exit(1)"}); err != nil || res.ExitCode != 1 {
		t.Fatalf("%+v %v", res, err)
	}
	if res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": "result = x + 1"}); err != nil || string(res.Result) != "42" {
		t.Fatalf("%+v %v", res, err)
	}
}

// A registered handler's non-zero SystemExit is a handler failure; a zero
// one returns null.
func TestAHandlersSystemExitIsAHandlerFailure(t *testing.T) {
	r := newRigWith(t, nil, nil)
	if _, err := r.call(t, "code-runner::register_function", map[string]any{"function_id": "exits::py", "lang": "python",
		"source": "import sys\ndef handler(p):\n    sys.exit(p.get('code'))"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.bus.Invoke(t, "exits::py", `{"code":3}`); err == nil || !strings.Contains(err.Error(), "SystemExit: 3") {
		t.Fatalf("%v", err)
	}
	if v, err := r.bus.Invoke(t, "exits::py", `{"code":0}`); err != nil || string(v) != "null" {
		t.Fatalf("%s %v", v, err)
	}
}

// The memory-cap refusal names the cap in force and, below 512 MiB, how
// to ask for more (contract §16.3).
func TestTheMemoryCapTextNamesTheCap(t *testing.T) {
	r := newRigWith(t, nil, nil)
	for mem, want := range map[int]string{
		300: "code-runner::resource_exhausted: run exceeded its memory cap of 300 MiB and was killed (a run that creates a runtime may ask for up to 512 MiB with memory_mb)",
		512: "code-runner::resource_exhausted: run exceeded its memory cap of 512 MiB and was killed",
	} {
		_, err := r.run(t, map[string]any{"code": "b = bytearray(1 << 30)", "memory_mb": mem})
		if err == nil || err.Error() != want {
			t.Errorf("memory_mb %d: %v", mem, err)
		}
	}
}
