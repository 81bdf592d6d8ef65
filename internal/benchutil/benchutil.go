// Package benchutil measures latency distributions for benchmarks and
// reports them beside a baseline measured in the same run.
package benchutil

import (
	"os/exec"
	"sort"
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
