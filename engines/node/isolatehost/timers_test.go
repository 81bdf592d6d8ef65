package isolatehost

import (
	"testing"
	"time"
)

// The schedule holds no memory for timers that are gone: a loop of arming
// and clearing, or of refreshing one timer, keeps the heap near the number
// of live timers (each step leaves a stale entry behind until compaction).
func TestTheScheduleForgetsWhatIsGone(t *testing.T) {
	s := newTimerState()
	base := time.Unix(1_000_000, 0)
	keep := &timer{id: 1, due: base.Add(time.Hour), ref: true}
	s.put(keep)
	s.schedule(keep)
	for i := int64(2); i < 1_000_000; i++ {
		tm := &timer{id: i, due: base.Add(time.Duration(i) * time.Millisecond), ref: true}
		s.put(tm)
		s.schedule(tm)
		s.remove(i)
		s.compact()
		if len(s.queue) > 2*len(s.byID)+65 {
			t.Fatalf("after %d armed and cleared timers the heap holds %d entries for %d live timers", i-1, len(s.queue), len(s.byID))
		}
	}
	for i := 0; i < 1_000_000; i++ {
		keep.due = base.Add(time.Duration(i) * time.Millisecond)
		s.schedule(keep)
		if len(s.queue) > 2*len(s.byID)+65 {
			t.Fatalf("after %d refreshes of one timer the heap holds %d entries", i+1, len(s.queue))
		}
	}
	if got := s.next(); got != keep || !got.due.Equal(base.Add(999_999*time.Millisecond)) {
		t.Fatalf("the live timer after churn: %+v", got)
	}
}

// next answers the live timer due first; cleared and re-armed entries are
// skipped, and timers due together fire in the order they were armed.
func TestTheScheduleAnswersTheLiveTimerDueFirst(t *testing.T) {
	s := newTimerState()
	base := time.Unix(1_000_000, 0)
	arm := func(id int64, ms int) *timer {
		tm := &timer{id: id, due: base.Add(time.Duration(ms) * time.Millisecond), ref: true}
		s.put(tm)
		s.schedule(tm)
		return tm
	}
	arm(1, 10)
	arm(2, 5)
	b := arm(3, 5)
	arm(4, 20)
	s.remove(2) // cleared
	b.due = base.Add(30 * time.Millisecond)
	s.schedule(b) // refreshed: its old entry is stale
	var order []int64
	for tm := s.next(); tm != nil; tm = s.next() {
		order = append(order, tm.id)
		s.remove(tm.id)
	}
	want := []int64{1, 4, 3}
	if len(order) != len(want) {
		t.Fatalf("fired %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("fired %v, want %v", order, want)
		}
	}
}

// Each task's count of ref'd pending timers follows arming, unref/ref,
// clearing, firing and dropping a task's timers.
func TestTheScheduleCountsEachTasksRefdTimers(t *testing.T) {
	s := newTimerState()
	due := time.Unix(1_000_000, 0)
	for i := int64(1); i <= 6; i++ {
		s.put(&timer{id: i, due: due, ref: true, owner: 1 + i%2}) // 1,3,5 → task 2; 2,4,6 → task 1
	}
	check := func(step string, want1, want2 int) {
		t.Helper()
		if s.refsOf(1) != want1 || s.refsOf(2) != want2 {
			t.Fatalf("%s: task 1 has %d, task 2 has %d; want %d and %d", step, s.refsOf(1), s.refsOf(2), want1, want2)
		}
	}
	check("armed", 3, 3)
	s.setRef(s.byID[2], false)
	s.setRef(s.byID[2], false) // twice is once
	check("unref", 2, 3)
	s.remove(2) // an unref'd timer cleared
	check("cleared unref'd", 2, 3)
	s.remove(1)
	s.remove(1)
	check("cleared twice", 2, 2)
	s.setRef(s.byID[4], false)
	s.setRef(s.byID[4], true)
	check("ref again", 2, 2)
	s.put(&timer{id: 3, due: due, ref: true, owner: 1}) // re-armed under another task
	check("replaced", 3, 1)
	s.dropOwnedBy(1)
	check("dropped task 1", 0, 1)
	if len(s.refs) != 1 {
		t.Fatalf("counts of tasks with none left stay: %v", s.refs)
	}
}
