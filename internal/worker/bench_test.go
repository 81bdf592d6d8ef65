package worker

import (
	"context"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/iii/iiitest"
	"github.com/code-runner-go/code-runner/internal/benchutil"
)

// BenchmarkRunOverBus: one-shot runs through the test engine (caller →
// engine → worker → engine → caller) with warm pools, both languages.
func BenchmarkRunOverBus(b *testing.B) {
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	startServe(b, e, ServeOptions{})
	time.Sleep(3 * time.Second) // pools fill
	for _, tc := range []struct{ name, lang, code string }{{"node", "node", "return 2+2"}, {"python", "python", "result = 2+2"}} {
		s := benchutil.TimeEach(max(b.N, 10), func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": tc.lang, "code": tc.code}, nil); err != nil || eb != nil {
				b.Fatalf("%v %+v", err, eb)
			}
		}, func() { time.Sleep(1500 * time.Millisecond) })
		s.Report(b, "bus-"+tc.name)
	}
}
