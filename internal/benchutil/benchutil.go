// Package benchutil measures latency distributions for benchmarks and
// reports them beside a baseline measured in the same run.
package benchutil

import (
	"os/exec"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/internal/procfs"
)

// Samples is a set of latencies.
type Samples []time.Duration

// Time runs fn n times and records each duration.
func Time(n int, fn func()) Samples {
	s := make(Samples, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		fn()
		s = append(s, time.Since(t))
	}
	return s
}

// TimeEach runs fn n times, timing only fn, and calls between (untimed)
// after each run — for example to let a pool refill.
func TimeEach(n int, fn func(), between func()) Samples {
	s := make(Samples, 0, n)
	for i := 0; i < n; i++ {
		t := time.Now()
		fn()
		s = append(s, time.Since(t))
		between()
	}
	return s
}

// P returns the q-quantile (0..1).
func (s Samples) P(q float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := append(Samples{}, s...)
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	i := int(q * float64(len(c)))
	if i >= len(c) {
		i = len(c) - 1
	}
	return c[i]
}

// Report adds name-p50-ms and name-p99-ms metrics.
func (s Samples) Report(b *testing.B, name string) {
	b.ReportMetric(ms(s.P(0.5)), name+"-p50-ms")
	b.ReportMetric(ms(s.P(0.99)), name+"-p99-ms")
}

// Ratio reports how many times faster s is than base at the median.
func Ratio(b *testing.B, name string, s, base Samples) {
	if s.P(0.5) > 0 {
		b.ReportMetric(float64(base.P(0.5))/float64(s.P(0.5)), name)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Spawn runs a command to completion (the baseline a user would reach for).
func Spawn(b *testing.B, name string, args ...string) {
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", name, err, out)
	}
}

// RSSKB is the resident set size of pid in KiB.
func RSSKB(pid int) int64 { return procfs.RSSKB(pid) }

// Load is the outcome of a fixed-duration run of concurrent callers.
type Load struct {
	Calls   int
	Elapsed time.Duration
	Latency Samples
	CPU     time.Duration // process CPU (plus whatever extra reported) spent meanwhile
}

// Concurrent runs call from callers goroutines for d and records every
// call's latency and the CPU that cpu reports (called before and after).
func Concurrent(callers int, d time.Duration, call func() error, cpu func() time.Duration) (Load, error) {
	var mu sync.Mutex
	var lat Samples
	var firstErr error
	start := time.Now()
	cpu0 := cpu()
	var wg sync.WaitGroup
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < d {
				t := time.Now()
				err := call()
				el := time.Since(t)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				lat = append(lat, el)
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	l := Load{Calls: len(lat), Elapsed: time.Since(start), Latency: lat, CPU: cpu() - cpu0}
	return l, firstErr
}

// Report prints calls/s, p50, p99 and CPU per call under name.
func (l Load) Report(b *testing.B, name string) {
	b.ReportMetric(float64(l.Calls)/l.Elapsed.Seconds(), name+"-calls/s")
	b.ReportMetric(ms(l.Latency.P(0.50)), name+"-p50-ms")
	b.ReportMetric(ms(l.Latency.P(0.99)), name+"-p99-ms")
	if l.Calls > 0 {
		b.ReportMetric(ms(l.CPU/time.Duration(l.Calls)), name+"-cpu-ms/call")
	}
}

// ProcessCPU returns the CPU time (user + system) of pid so far.
func ProcessCPU(pid int) time.Duration { return procfs.CPU(pid) }
