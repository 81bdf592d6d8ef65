package worker

import (
	"context"
	"fmt"
	"os"
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

// BenchmarkConcurrentOneShotsOverBus: 8 callers issuing one-shot runs
// through the test engine for 5 s per language, warm pools: calls/s, p50,
// p99, and CPU per call — this process (the worker, the test engine and the
// callers, which share it) plus every node isolate host alive at the end.
func BenchmarkConcurrentOneShotsOverBus(b *testing.B) {
	e, err := iiitest.New(iiitest.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	s := startServe(b, e, ServeOptions{})
	time.Sleep(3 * time.Second) // pools fill
	cpu := func() time.Duration {
		t := benchutil.ProcessCPU(os.Getpid())
		for _, pid := range s.app.Node.HostPIDs() {
			t += benchutil.ProcessCPU(pid)
		}
		return t
	}
	for _, tc := range []struct{ lang, code string }{{"node", "return 2+2"}, {"python", "result = 2+2"}} {
		load, err := benchutil.Concurrent(8, 5*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, eb, err := e.Invoke(ctx, "code-runner::run", map[string]any{"lang": tc.lang, "code": tc.code}, nil)
			if err == nil && eb != nil {
				err = fmt.Errorf("%s: %s", eb.Code, eb.Message)
			}
			return err
		}, cpu)
		if err != nil {
			b.Fatalf("%s: %v", tc.lang, err)
		}
		load.Report(b, tc.lang+"-8-callers")
	}
}
