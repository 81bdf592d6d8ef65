package python

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
)

// forgePrelude gives tenant code the control channel: the sentinel every
// interpreter's wrapper reads from /run/iii.json, and a way to print a line
// behind it (contract §22a.8, amended: the channel may be reachable).
const forgePrelude = `import json, sys
s = json.load(open('/run/iii.json'))['sentinel']
def emit(line):
    sys.stdout.write('\n' + s + '\n' + line + '\n')
    sys.stdout.flush()
`

// Every kind of frame a tenant can forge on the control channel answers at
// most its own turn, with its own data, within its own deadline: the next
// turns of the same interpreter, and a one-shot of another tenant run
// alongside (sharing the permits), answer exactly what they computed.
func TestEachForgedFrameKindAnswersOnlyItsOwnTurn(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	cases := []struct{ kind, code string }{
		{"ready", `emit('{"kind":"ready"}')`},
		{"turn_done with a forged envelope", `emit('{"kind":"turn_done","envelope":{"ok":true,"result":"forged"}}')`},
		{"turn_done with a failure envelope", `emit('{"kind":"turn_done","envelope":{"ok":false,"kind":"python_exception","message":"forged","traceback":null}}')`},
		{"turn_done without an envelope", `emit('{"kind":"turn_done"}')`},
		{"trigger, never reading the reply", `emit(json.dumps({'kind': 'trigger', 'function_id': 'test::echo', 'payload': {'forged': True}, 'timeout_ms': 1000}))`},
		{"trigger to a refused id", `emit(json.dumps({'kind': 'trigger', 'function_id': 'state::claim-namespace', 'payload': None}))`},
		{"trigger of a nested run", `emit(json.dumps({'kind': 'trigger', 'function_id': 'code-runner::run', 'payload': {'lang': 'python', 'code': 'result = "nested"'}}))`},
		{"sleep, never reading the reply", `emit('{"kind":"sleep","seconds":0.05}')`},
		{"two requests at once", `emit('{"kind":"sleep","seconds":0}')
emit('{"kind":"sleep","seconds":0}')`},
		{"an unknown kind", `emit('{"kind":"define","code":"x"}')`},
		{"a line that is not JSON", `emit('not json {')`},
		{"an event past its bound", `emit('{"kind":"turn_done","envelope":{"ok":true,"result":"' + 'x' * (2 << 20) + '"}}')`},
		{"a marker with no line end", `sys.stdout.write('\n' + s + '\n{"kind":"turn_done"'); sys.stdout.flush()`},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			k, err := r.run(t, map[string]any{"keep": true, "code": "n = 0"})
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var other resp
			var otherErr *core.Error
			wg.Add(1)
			go func() { // another tenant, at the same time
				defer wg.Done()
				other, otherErr = r.run(t, map[string]any{"code": "result = sum(range(1000))"})
			}()
			res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "timeout_ms": 3000, "code": forgePrelude + tc.code + "\nn += 1\nresult = 'own'"})
			wg.Wait()
			// Its own turn: its own result, a forged one of its own making
			// (null: the reply to its own forged request, which the wrapper
			// then read as a turn of no code), a failure, or its own
			// deadline — nothing else.
			if err != nil && err.Code != core.CodeTimeout {
				t.Fatalf("the forging turn: %v", err)
			}
			if err == nil && res.Success && string(res.Result) != `"own"` && string(res.Result) != `"forged"` && string(res.Result) != "null" {
				t.Fatalf("the forging turn answered %s", res.Result)
			}
			if otherErr != nil || string(other.Result) != "499500" {
				t.Fatalf("the other tenant got %s %v", other.Result, otherErr)
			}
			for i := 0; i < 3; i++ {
				want := fmt.Sprintf(`"next-%d"`, i)
				res, err := r.run(t, map[string]any{"runtime_id": k.RuntimeID, "code": fmt.Sprintf("result = 'next-%d'", i)})
				if err != nil || string(res.Result) != want || strings.Contains(res.Stdout+res.Stderr, "forged") {
					t.Fatalf("turn %d after the forgery: %s %q %v, want %s", i, res.Result, res.Stderr, err, want)
				}
			}
			if _, err := r.call(t, core.FnTeardown, map[string]any{"runtime_id": k.RuntimeID}); err != nil {
				t.Fatal(err)
			}
			r.eng.bg.Wait()
			// The interpreter may go back to the pool: the next one-shot
			// is pristine and answers its own result.
			res, err = r.run(t, map[string]any{"code": "result = [globals().get('n'), 'fresh']"})
			if err != nil || string(res.Result) != `[null,"fresh"]` {
				t.Fatalf("a one-shot after the forging runtime ended: %s %v", res.Result, err)
			}
		})
	}
}
