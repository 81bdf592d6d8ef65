package python

import (
	"testing"
	"time"
)

// TestTheTickYieldsOnceAMillisecond: an interpreter's first tick yields its
// P, and later ticks yield only once yieldEvery has passed since the last
// yield, however many come in between.
func TestTheTickYieldsOnceAMillisecond(t *testing.T) {
	q := newStdinQueue()
	t0 := time.Now()
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true},
		{100 * time.Microsecond, false},
		{yieldEvery - time.Nanosecond, false},
		{yieldEvery, true},
		{yieldEvery + 10*time.Microsecond, false},
		{2*yieldEvery + 5*time.Microsecond, true},
		{10 * yieldEvery, true},
	}
	for _, s := range steps {
		if got := q.yieldDue(t0.Add(s.at)); got != s.want {
			t.Fatalf("tick at +%v: yield %v, want %v", s.at, got, s.want)
		}
	}
}
