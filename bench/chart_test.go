package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestChartDrawsTheComparedFigures: the chart is a PNG; figures without a
// baseline are left out, and a table with none is refused.
func TestChartDrawsTheComparedFigures(t *testing.T) {
	var tb table
	tb.add("a", "node one-shot p50, 1 caller, ms", 10, 4, lowerWins)
	tb.add("b", "python one-shot, 8 callers x 5 s, calls/s", 900, 3500, higherWins)
	tb.addBaseline("c", "python3", "python compute dict, ms vs "+systemPython+" in-process", 200, 160)
	tb.addBaseline("c", "v8", "python compute dict, ms vs our python.wasm on node's V8", 200, 110)
	tb.addOurs("d", "RSS per kept runtime, MiB", 18)
	path := filepath.Join(t.TempDir(), "img", "chart.png")
	if err := tb.chart(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG: %v %.8q", err, b)
	}
	var none table
	none.addOurs("d", "RSS per kept runtime, MiB", 18)
	if err := none.chart(filepath.Join(t.TempDir(), "x.png")); err == nil {
		t.Fatal("a chart of nothing was drawn")
	}
}
