package python

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

// One-shots are pristine although their interpreters are recycled: a run
// that rebinds builtins, json.dumps and sys.modules entries, imports modules
// and writes /work leaves nothing the next one-shot can see — and the next
// one-shot ran in the same interpreter, reset to its snapshot, not in a
// freshly booted one.
func TestOneShotsArePristineOnRecycledInterpreters(t *testing.T) {
	r := newRig(t, func(c *configsvc.Config) { c.WarmPoolPython = 1 })
	if err := r.eng.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitParked := func() {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for r.eng.pool.Size() < 1 {
			if time.Now().After(deadline) {
				t.Fatal("the pool never held an interpreter")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	dirty := `import builtins, json, sys, os, decimal
builtins.leak = 'tenant A'
json.dumps = lambda *a, **k: 'forged'
sys.modules['base64'] = None
os.environ['LEAK'] = '1'
open('/work/secret', 'w').write('tenant A')
os.mkdir('/work/dir')
result = 'dirty'`
	check := `import builtins, json, sys, os
result = [getattr(builtins, 'leak', None), json.dumps([1]), sys.modules.get('base64', 'absent') is None, 'LEAK' in os.environ, sorted(os.listdir('/work')), 'decimal' in sys.modules]`
	waitParked()
	r.mustRun(t, "result = 1") // the pool's interpreter now carries one recycle
	waitParked()
	booted := interpSeq.Load()
	for i := 0; i < 10; i++ {
		if res := r.mustRun(t, dirty); string(res.Result) != `"dirty"` {
			t.Fatalf("%+v", res)
		}
		waitParked()
		res := r.mustRun(t, check)
		if string(res.Result) != `[null,"[1]",false,false,[],false]` {
			t.Fatalf("round %d: a one-shot saw the previous one's state: %s %s", i, res.Result, res.Stderr)
		}
		waitParked()
	}
	// A descriptor the previous tenant left open is closed by the reset: the
	// next tenant cannot read the deleted file through it.
	res := r.mustRun(t, `import os
open('/work/secret', 'w').write('tenant A')
fds = [os.open('/work/secret', os.O_RDONLY) for _ in range(3)]
result = fds`)
	var fds []int
	_ = json.Unmarshal(res.Result, &fds)
	if len(fds) != 3 {
		t.Fatalf("%+v", res)
	}
	waitParked()
	res = r.mustRun(t, fmt.Sprintf(`import os
out = []
for fd in %v:
    try:
        out.append(os.read(fd, 100).decode())
    except OSError as e:
        out.append(type(e).__name__)
result = out`, strings.Join(strings.Fields(fmt.Sprint(fds)), ", ")))
	if strings.Contains(string(res.Result), "tenant A") || !strings.Contains(string(res.Result), "Error") {
		t.Fatalf("the next tenant read the previous one's file: %s %s", res.Result, res.Stderr)
	}
	waitParked()
	if n := interpSeq.Load() - booted; n != 0 {
		t.Fatalf("%d interpreters were booted for 20 one-shots; want every one recycled", n)
	}
	// A one-shot that grows its memory, fails or is killed is not recycled,
	// and the next one-shot is still correct.
	for _, code := range []string{"a = bytearray(64 << 20)", "raise ValueError('x')", "import os\nos._exit(3)"} {
		r.mustRun(t, code)
		waitParked()
		if res := r.mustRun(t, check); string(res.Result) != `[null,"[1]",false,false,[],false]` {
			t.Fatalf("after %q: %s", code, res.Result)
		}
		waitParked()
	}
	if res, err := r.run(t, map[string]any{"code": "while True: pass", "timeout_ms": 300}); err == nil {
		t.Fatalf("%+v", res)
	}
	waitParked()
	if res := r.mustRun(t, check); !strings.HasPrefix(string(res.Result), `[null,"[1]"`) {
		t.Fatalf("after a timeout: %s", res.Result)
	}
}
