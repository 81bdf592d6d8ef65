package python

import (
	"testing"
	"time"
)

// TestTheTickYieldsOnceAMillisecond: an interpreter's first tick yields its
// P; later ticks yield only once yieldEvery has passed since it got the P
// back from its last yield, however many come in between.
func TestTheTickYieldsOnceAMillisecond(t *testing.T) {
	q := newStdinQueue()
	if !q.yieldDue(time.Now()) {
		t.Fatal("an interpreter that never yielded was not due to")
	}
	q.yieldP()
	back := q.yielded
	if back.IsZero() {
		t.Fatal("a yield did not note when the P came back")
	}
	for _, s := range []struct {
		after time.Duration
		want  bool
	}{
		{0, false},
		{100 * time.Microsecond, false},
		{yieldEvery - time.Nanosecond, false},
		{yieldEvery, true},
		{10 * yieldEvery, true},
	} {
		if got := q.yieldDue(back.Add(s.after)); got != s.want {
			t.Fatalf("tick %v after the P came back: due %v, want %v", s.after, got, s.want)
		}
	}
	q.yieldP()
	if q.yielded.Before(back) || q.yieldDue(q.yielded.Add(yieldEvery/2)) {
		t.Fatal("a second yield did not restart the clock")
	}
}
