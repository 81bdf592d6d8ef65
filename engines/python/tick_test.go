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

// A guest that waited for its next frame gave its P up while it waited:
// its millisecond starts when the frame came, not at its last yield, so
// the first tick of a short turn after a pause does not yield.
func TestAWaitForTheNextFrameRestartsTheTicksClock(t *testing.T) {
	q := newStdinQueue()
	q.yieldP()
	q.yielded = q.yielded.Add(-time.Hour) // its last yield long ago
	if !q.yieldDue(time.Now()) {
		t.Fatal("an hour after its last yield the tick was not due")
	}
	got := make(chan int, 1)
	go func() {
		n, _ := q.Read(make([]byte, 8))
		got <- n
	}()
	for !q.blocked() {
		time.Sleep(time.Millisecond)
	}
	before := time.Now()
	if err := q.push([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	if n := <-got; n != 5 {
		t.Fatalf("read %d bytes", n)
	}
	if q.yielded.Before(before) {
		t.Fatalf("the clock was not restarted by the wait: it reads %v before the frame came", before.Sub(q.yielded))
	}
	if q.yieldDue(q.yielded.Add(yieldEvery / 2)) {
		t.Fatal("half a millisecond after the frame came, the tick was due")
	}
}
