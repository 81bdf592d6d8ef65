package isolatehost

import (
	"container/heap"
	"strconv"
	"strings"
	"time"
)

// Timers (contract §25.2). The host keeps the schedule; the prelude keeps
// the callbacks. A timer belongs to the task whose work armed it (its
// owner): a task's answer waits while a ref'd timer it owns is pending, as
// node's process waits for its event loop. A timer whose owner has ended,
// or that was unref'd, fires as detached work under the last call's budget
// (§22a); a one-shot's timers go with its isolate.

// maxTimers is how many timers a runtime may have pending.
const maxTimers = 10_000

type timer struct {
	id        int64
	due       time.Time
	delay     time.Duration // as armed (refresh starts it again)
	every     time.Duration // 0: fires once
	ref       bool
	immediate bool
	owner     int64
	gen       uint64 // the heap entry that is current
}

// timerEntry is a place in the schedule; entries whose gen no longer
// matches their timer's (cleared, refreshed, re-armed) are skipped.
type timerEntry struct {
	due time.Time
	seq uint64
	id  int64
	gen uint64
}

type timerHeap []timerEntry

func (q timerHeap) Len() int { return len(q) }
func (q timerHeap) Less(i, j int) bool {
	if !q[i].due.Equal(q[j].due) {
		return q[i].due.Before(q[j].due)
	}
	return q[i].seq < q[j].seq
}
func (q timerHeap) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timerHeap) Push(x any)   { *q = append(*q, x.(timerEntry)) }
func (q *timerHeap) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// timerState is a runtime's schedule.
type timerState struct {
	byID  map[int64]*timer
	refs  map[int64]int // owner task → how many ref'd pending timers it owns
	queue timerHeap
	seq   uint64
}

func newTimerState() *timerState {
	return &timerState{byID: map[int64]*timer{}, refs: map[int64]int{}}
}

// put adds t to the pending timers (replacing one with its id).
func (s *timerState) put(t *timer) {
	s.remove(t.id)
	s.byID[t.id] = t
	if t.ref {
		s.refs[t.owner]++
	}
}

// remove forgets the pending timer id, if there is one.
func (s *timerState) remove(id int64) {
	t, ok := s.byID[id]
	if !ok {
		return
	}
	delete(s.byID, id)
	if t.ref {
		s.unref(t.owner)
	}
}

// setRef makes t hold its owner's answer (on) or not.
func (s *timerState) setRef(t *timer, on bool) {
	if t.ref == on {
		return
	}
	t.ref = on
	if on {
		s.refs[t.owner]++
	} else {
		s.unref(t.owner)
	}
}

func (s *timerState) unref(owner int64) {
	if s.refs[owner] <= 1 {
		delete(s.refs, owner)
	} else {
		s.refs[owner]--
	}
}

func (s *timerState) schedule(t *timer) {
	s.seq++
	t.gen = s.seq
	heap.Push(&s.queue, timerEntry{due: t.due, seq: s.seq, id: t.id, gen: t.gen})
	s.compact()
}

// compact drops stale entries (cleared or re-armed timers) once they
// outnumber the live ones, so a loop of setTimeout/clearTimeout or of
// refresh() holds no memory for what is gone.
func (s *timerState) compact() {
	if len(s.queue) <= 2*len(s.byID)+64 {
		return
	}
	live := s.queue[:0]
	for _, e := range s.queue {
		if t, ok := s.byID[e.id]; ok && t.gen == e.gen {
			live = append(live, e)
		}
	}
	s.queue = live
	heap.Init(&s.queue)
}

// next returns the pending timer due first, dropping stale entries.
func (s *timerState) next() *timer {
	for len(s.queue) > 0 {
		e := s.queue[0]
		if t, ok := s.byID[e.id]; ok && t.gen == e.gen {
			return t
		}
		heap.Pop(&s.queue)
	}
	return nil
}

// refsOf counts the ref'd timers task owns (kept as timers come and go,
// so the check after every entry does not walk all 10,000).
func (s *timerState) refsOf(task int64) int {
	return s.refs[task]
}

// timerOp handles the prelude's timer operations; it answers "" or a
// JSON refusal.
func (h *host) timerOp(op, arg string, owner int64) string {
	s := h.timers
	switch op {
	case "set":
		f := strings.Split(arg, ",")
		if len(f) != 4 {
			return `{"e":"malformed timer"}`
		}
		id, _ := strconv.ParseInt(f[0], 10, 64)
		delay, _ := strconv.ParseFloat(f[1], 64)
		if len(s.byID) >= maxTimers {
			return `{"e":"too many pending timers (limit 10000): clear some before arming more","k":"RangeError"}`
		}
		t := &timer{id: id, ref: true, immediate: f[3] == "1", owner: owner}
		d := time.Duration(delay * float64(time.Millisecond))
		t.delay = d
		if f[2] == "1" {
			t.every = d
		}
		t.due = time.Now().Add(d)
		s.put(t)
		s.schedule(t)
	case "clear":
		id, _ := strconv.ParseInt(arg, 10, 64)
		s.remove(id)
		s.compact()
	case "ref":
		idText, on, _ := strings.Cut(arg, ",")
		id, _ := strconv.ParseInt(idText, 10, 64)
		if t, ok := s.byID[id]; ok {
			s.setRef(t, on == "1")
		}
	case "hasRef":
		id, _ := strconv.ParseInt(arg, 10, 64)
		if t, ok := s.byID[id]; ok && t.ref {
			return "1"
		}
		return "0"
	case "refresh":
		id, _ := strconv.ParseInt(arg, 10, 64)
		if t, ok := s.byID[id]; ok {
			// As node: the timer starts again from now, with its delay.
			t.due = time.Now().Add(t.delay)
			s.schedule(t)
		}
	}
	return ""
}

// nextTimerDue is when the host must wake for a timer (zero: none).
func (h *host) nextTimerDue() time.Time {
	if t := h.timers.next(); t != nil {
		return t.due
	}
	return time.Time{}
}

// fireTimers runs every timer due now, oldest first, each as its own
// guarded entry into the prelude (microtasks run between them, as in
// node). It reports whether the host must exit.
func (h *host) fireTimers() (int, bool) {
	now := time.Now()
	for {
		t := h.timers.next()
		if t == nil || t.due.After(now) {
			return 0, false
		}
		heap.Pop(&h.timers.queue)
		if t.every > 0 {
			// Re-armed before it runs, as node does; a callback that clears
			// it removes it.
			// From when it was due, so an interval keeps its period; one
			// that fell a whole period behind starts again from now.
			t.due = t.due.Add(t.every)
			if t.due.Before(now) {
				t.due = now.Add(t.every)
			}
			h.timers.schedule(t)
		} else {
			h.timers.remove(t.id)
		}
		owner := t.owner
		if _, ok := h.tasks[owner]; !ok {
			owner = 0
		}
		id := t.id
		if code, exit := h.enterAs(owner, func() error {
			return h.call("fireTimer", h.iso.Number(float64(id)))
		}); exit {
			return code, true
		}
	}
}

// waitsForTimers reports whether task's answer must wait for its timers:
// a run's or an invocation's (a call, in node's sense); a definition or a
// trigger registration answers when its code has run, and what it armed
// then runs as detached work.
func (h *host) waitsForTimers(task int64) bool {
	tk, ok := h.tasks[task]
	if !ok || (tk.kind != "run" && tk.kind != "invoke") {
		return false
	}
	return h.timers.refsOf(task) > 0
}

// dropOwnedBy forgets the timers task armed (it ended by an uncaught error
// or process.exit).
func (s *timerState) dropOwnedBy(task int64) {
	for id, t := range s.byID {
		if t.owner == task {
			s.remove(id)
		}
	}
	s.compact()
}

// releaseHeld answers the tasks that were waiting only for their timers.
func (h *host) releaseHeld() {
	for task, rec := range h.held {
		if _, ok := h.tasks[task]; !ok {
			delete(h.held, task)
			continue
		}
		if h.waitsForTimers(task) {
			continue
		}
		delete(h.held, task)
		h.report(rec)
	}
}

// dropRunState forgets every timer, held answer and exit code (a
// one-shot's end, a recycle).
func (h *host) dropRunState() {
	h.timers = newTimerState()
	h.held = map[int64]doneRecord{}
	h.uncaught = map[int64]string{}
	h.exitCodes = map[int64]int{}
}
