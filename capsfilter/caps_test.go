package capsfilter

import (
	"encoding/json"
	"github.com/code-runner-go/code-runner/internal/golden"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// hundredThousand builds the JSON of [0, 1, …, 99999], the example of docs/behaviour.md#output-result-cap.
func hundredThousand() json.RawMessage {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < 100000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteByte(']')
	return json.RawMessage(b.String())
}

func TestResultCapHundredThousandElementArray(t *testing.T) {
	in := hundredThousand()
	if len(in) != 588891 {
		t.Fatalf("fixture is %d bytes, docs/behaviour.md#output-result-cap says 588891", len(in))
	}
	out := ResultCap(in, 32768)
	golden.Check(t, "result_100000_array.golden", out)
	var s string
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("capped result is not a JSON string: %v", err)
	}
	if !strings.Contains(s, "~575 KB (100000 array elements)") {
		t.Fatalf("marker lacks the size and shape: %s", s)
	}
}

func TestResultCapShapes(t *testing.T) {
	tests := []struct {
		name  string
		value string
		limit int
		want  string // expected shape phrase, or "" for unchanged
	}{
		{"under the cap is unchanged", `{"b":1,"a":2}`, 100, ""},
		{"cap 0 disables", `"` + strings.Repeat("x", 5000) + `"`, 0, ""},
		{"exactly the cap is unchanged", `"abc"`, 5, ""},
		{"object counts keys", `{"a":"` + strings.Repeat("x", 100) + `","b":1,"c":2}`, 20, "3 object keys"},
		{"string counts code points not bytes", `"` + strings.Repeat("日", 100) + `"`, 20, "a 100-char string"},
		{"number is a value", `123456789012345678901234567890`, 10, "a value"},
		{"whitespace does not count", "[1,   2,   3]", 7, ""},
		{"html is measured unescaped", `"<<<<>>>>&&&&"`, 14, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := ResultCap(json.RawMessage(tc.value), tc.limit)
			if tc.want == "" {
				if string(out) != tc.value {
					t.Fatalf("changed: %s", out)
				}
				return
			}
			var s string
			if err := json.Unmarshal(out, &s); err != nil {
				t.Fatalf("not a JSON string: %s", out)
			}
			if !strings.Contains(s, "("+tc.want+")") {
				t.Fatalf("marker %q lacks %q", s, tc.want)
			}
			if strings.Contains(string(out), `\u003c`) {
				t.Fatalf("marker is HTML-escaped: %s", out)
			}
			if !strings.Contains(s, " — print a slice") {
				t.Fatalf("marker lacks the em dash: %q", s)
			}
		})
	}
}

func TestStreamCapFortyThousandX(t *testing.T) {
	in := strings.Repeat("x", 40000) + "\n"
	out := StreamCap(in, Stdout, 16384)
	if len(out) != 16384 {
		t.Fatalf("len = %d, want 16384", len(out))
	}
	marker := "\n[…stdout truncated: was ~39 KB; middle omitted]\n"
	if len(marker) != 51 {
		t.Fatalf("marker is %d bytes, docs/behaviour.md#output-stream-cap says 51", len(marker))
	}
	i := strings.Index(out, marker)
	if i != 9799 {
		t.Fatalf("head is %d bytes, want 9799", i)
	}
	if tail := len(out) - i - len(marker); tail != 6534 {
		t.Fatalf("tail is %d bytes, want 6534", tail)
	}
	golden.Check(t, "stream_40000_x.golden", []byte(out[i-20:i+len(marker)+20]))
}

func TestStreamCapEdges(t *testing.T) {
	t.Run("cap 0 disables", func(t *testing.T) {
		in := strings.Repeat("y", 100000)
		if StreamCap(in, Stderr, 0) != in {
			t.Fatal("changed")
		}
	})
	t.Run("at the cap is unchanged", func(t *testing.T) {
		in := strings.Repeat("y", 100)
		if StreamCap(in, Stderr, 100) != in {
			t.Fatal("changed")
		}
	})
	t.Run("cap smaller than the marker yields the marker alone", func(t *testing.T) {
		out := StreamCap(strings.Repeat("z", 5000), Stderr, 10)
		if out != "\n[…stderr truncated: was ~4 KB; middle omitted]\n" {
			t.Fatalf("got %q", out)
		}
	})
	t.Run("never splits a multi-byte character", func(t *testing.T) {
		in := strings.Repeat("é日😀", 3000)
		for limit := 60; limit < 200; limit++ {
			out := StreamCap(in, Stdout, limit)
			if !utf8.ValidString(out) {
				t.Fatalf("cap %d produced invalid UTF-8", limit)
			}
			if len(out) > limit {
				t.Fatalf("cap %d produced %d bytes", limit, len(out))
			}
		}
	})
}

// FuzzStreamCap checks the stream-cap invariants
// (docs/behaviour.md#output-stream-cap) for arbitrary UTF-8 input.
func FuzzStreamCap(f *testing.F) {
	f.Add("hello world", 5)
	f.Add(strings.Repeat("x", 40001), 16384)
	f.Add(strings.Repeat("日本語", 100), 60)
	f.Add("😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀😀", 55)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		if !utf8.ValidString(in) || limit < 0 || limit > 1<<20 {
			t.Skip()
		}
		out := StreamCap(in, Stdout, limit)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out")
		}
		if limit == 0 || len(in) <= limit {
			if out != in {
				t.Fatalf("changed an uncapped stream")
			}
			return
		}
		marker := "\n[…stdout truncated: was ~" + strconv.Itoa(len(in)/1024) + " KB; middle omitted]\n"
		i := strings.Index(out, marker)
		if i < 0 {
			t.Fatalf("no marker in %q", out)
		}
		head, tail := out[:i], out[i+len(marker):]
		if !strings.HasPrefix(in, head) {
			t.Fatalf("head is not a prefix")
		}
		if !strings.HasSuffix(in, tail) {
			t.Fatalf("tail is not a suffix")
		}
		if limit >= len(marker) && len(out) > limit {
			t.Fatalf("len %d > cap %d", len(out), limit)
		}
	})
}

// FuzzResultCap checks that a capped result is always valid JSON and never
// longer than its input's marker allows.
func FuzzResultCap(f *testing.F) {
	f.Add(`[1,2,3]`, 3)
	f.Add(`{"a":"`+strings.Repeat("é", 50)+`"}`, 10)
	f.Add(`"plain"`, 2)
	f.Fuzz(func(t *testing.T, in string, limit int) {
		if !json.Valid([]byte(in)) || limit < 0 {
			t.Skip()
		}
		out := ResultCap(json.RawMessage(in), limit)
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %s", out)
		}
		if string(out) != in {
			var s string
			if err := json.Unmarshal(out, &s); err != nil || !strings.HasPrefix(s, "<omitted: result was ~") {
				t.Fatalf("changed value is not the marker: %s", out)
			}
		}
	})
}
