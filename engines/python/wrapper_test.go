package python

import (
	"encoding/json"
	"testing"
)

// wrapperAgreesWithJSON is guest code comparing the wrapper's own encoders
// and frame decoder (main.py: the C encoder and scanner called directly)
// with what json writes and reads for the same values, errors included.
// Its result lists every value on which they differ.
const wrapperAgreesWithJSON = `
import json, sys
w = sys.modules['_code_runner_wrapper']
class S(str): pass
class I(int): pass
circle = []
circle.append(circle)
values = [4, -0.0, 1.5, 1e308, float('nan'), float('inf'), -float('inf'), 10**30, True, None,
          'é\u2028\x00"\\', S('sub'), I(7), [], {}, (1, 'a'), [1, [2, {'k': None}]],
          {1: 'a', True: 'b', None: 'c', 2.5: 'd'}, {(1, 2): 'tuple key'}, object(), circle,
          '\ud800', {'nested': [float('nan')]}]
def outcome(f, v):
    try:
        return ['ok', f(v)]
    except Exception as e:
        return [type(e).__name__, str(e)]
differ = []
for allow_nan, mine in ((False, w._encode_value), (True, w._encode_event)):
    theirs = json.JSONEncoder(allow_nan=allow_nan, ensure_ascii=False, separators=(',', ':')).encode
    for v in values:
        a, b = outcome(mine, v), outcome(theirs, v)
        if a != b:
            differ.append([repr(v), allow_nan, a, b])
frames = ['{"kind":"run","code":"result = 2+2","payload":null,"once":true}', ' {"a":1}', '{"a":1}\n',
          '[1,2]x', '', '{"a":', '"\\ud800"', '{"a":NaN,"b":1e400}', '{"a":1,"a":2}']
for f in frames:
    a, b = outcome(w._decode_frame, f), outcome(json.loads, f)
    if a != b:
        differ.append([f, a, b])
result = {'differ': differ, 'checked': len(values) * 2 + len(frames)}
`

func TestTheWrapperWritesAndReadsWhatJSONWould(t *testing.T) {
	r := newRig(t, nil)
	res := r.mustRun(t, wrapperAgreesWithJSON)
	var got struct {
		Differ  []any `json:"differ"`
		Checked int   `json:"checked"`
	}
	if err := json.Unmarshal(res.Result, &got); err != nil || got.Checked == 0 {
		t.Fatalf("the comparison did not run: %s (stderr %q, %v)", res.Result, res.Stderr, err)
	}
	if len(got.Differ) > 0 {
		t.Fatalf("the wrapper and json differ (value, its outcome, json's): %v", got.Differ)
	}
}

// quickenedWrapper is guest code listing, for each function of the
// wrapper's turn path, how many of its instructions CPython has
// specialized (dis shows the adaptive form beside the plain one).
const quickenedWrapper = `
import sys, dis
w = sys.modules['_code_runner_wrapper']
result = {}
for name in ['_read_frame', '_fill', '_park', '_decode_frame', '_turn', '_compile', '_envelope_ok',
             '_serialize', '_encode_value', '_done_body', '_emit_line']:
    f = getattr(w, name)
    result[name] = sum(1 for a, b in zip(dis.get_instructions(f, adaptive=True), dis.get_instructions(f))
                       if a.opname != b.opname)
`

// A one-shot's interpreter is reset to a snapshot whose wrapper code is
// already quickened and specialized: otherwise every one-shot runs the
// wrapper on generic bytecode and never reaches the eighth call CPython
// waits for.
func TestTheSnapshotHoldsTheWrappersSpecializedCode(t *testing.T) {
	r := newRig(t, nil)
	for i := 0; i < 2; i++ { // the second from a reset interpreter
		res := r.mustRun(t, quickenedWrapper)
		var got map[string]int
		if err := json.Unmarshal(res.Result, &got); err != nil || len(got) == 0 {
			t.Fatalf("%s (stderr %q): %v", res.Result, res.Stderr, err)
		}
		for name, n := range got {
			if n == 0 {
				t.Errorf("one-shot %d: the wrapper's %s runs unspecialized bytecode (%v)", i, name, got)
			}
		}
	}
}
