package python

import (
	"errors"
	"os/exec"
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

// sys.exit with codes whose type a tenant made fails and prints as
// /usr/bin/python3 does: an int subclass is the int it holds (its
// methods never run; I(0) succeeds), a str subclass prints through its
// type's __str__, and a code whose __str__ fails prints the newline alone.
func TestExoticExitCodesAsPython(t *testing.T) {
	r := newRigWith(t, nil, nil)
	for name, code := range map[string]string{
		"str subclass":               "import sys\nclass S(str):\n    def __getitem__(self, i): raise RuntimeError('no slicing')\n    def __len__(self): raise RuntimeError('no len')\nsys.exit(S('custom message'))",
		"int subclass of 0":          "import sys\nclass I(int):\n    def __eq__(self, o): raise RuntimeError('no eq')\n    __hash__ = int.__hash__\nsys.exit(I(0))",
		"int subclass of 3":          "import sys\nclass I(int):\n    def __eq__(self, o): raise RuntimeError('no eq')\n    def __int__(self): raise RuntimeError('no int')\n    __hash__ = int.__hash__\nsys.exit(I(3))",
		"__str__ answers a subclass": "import sys\nclass S2(str):\n    def __getitem__(self, i): raise RuntimeError('no slicing')\nclass S(str):\n    def __str__(self): return S2('via str')\nsys.exit(S('x'))",
		"__str__ raises":             "import sys\nclass B:\n    def __str__(self): raise RuntimeError('unprintable')\nsys.exit(B())",
		"a huge int":                 "import sys\nclass I(int):\n    def __index__(self): raise RuntimeError('no index')\nsys.exit(I(2**80))",
		"True":                       "import sys\nsys.exit(True)",
		"False":                      "import sys\nresult = 7\nsys.exit(False)",
		"a list":                     "import sys\nsys.exit([1, 'a'])",
		"a class faking int":         "import sys\nclass F:\n    __class__ = property(lambda self: int)\n    def __str__(self): return 'fake'\nsys.exit(F())",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command("/usr/bin/python3", "-c", code)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			wantExit := 0
			if err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					t.Fatal(err)
				}
				wantExit = 1 // a response's exit_code is 0 or 1
			}
			res, cerr := r.run(t, map[string]any{"code": code})
			if cerr != nil {
				t.Fatal(cerr)
			}
			if res.ExitCode != wantExit || res.Stderr != stderr.String() {
				t.Fatalf("exit %d stderr %q; python3: exit status class %d, stderr %q", res.ExitCode, res.Stderr, wantExit, stderr.String())
			}
		})
	}
}
