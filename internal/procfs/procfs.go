// Package procfs reads process facts from Linux's /proc.
package procfs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

var pageKB = int64(os.Getpagesize() / 1024)

// RSSKB returns the resident set size of pid in KiB, 0 when unreadable.
func RSSKB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.ParseInt(f[1], 10, 64)
	return n * pageKB
}

// clockTick is the kernel's USER_HZ: /proc reports CPU time in these ticks
// (100 on every Linux this runs on).
const clockTick = 100

// CPU returns the user + system CPU time pid has used so far (0 when
// unreadable), from /proc/<pid>/stat.
func CPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields after its closing
	// parenthesis are plain. utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / clockTick
}

// statFields returns the fields of /proc/<pid>/stat after the command name
// (field 3 onwards), nil when unreadable.
func statFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return nil
	}
	return f
}

// Descendants returns the pids of every live process below pid (children,
// their children, ...), read from the parent pid of every /proc/<n>/stat.
func Descendants(pid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := statFields(n); f != nil {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], n)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// TreeCPU returns the CPU time (user + system) pid and everything below it
// have used so far: pid's own, its reaped children's (cutime and cstime),
// and each live descendant's own. Reaped grandchildren count only when
// their parent reaped them and is itself reaped.
func TreeCPU(pid int) time.Duration {
	f := statFields(pid)
	if f == nil {
		return 0
	}
	var ticks int64
	for _, i := range []int{11, 12, 13, 14} { // utime stime cutime cstime
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	t := time.Duration(ticks) * time.Second / clockTick
	for _, c := range Descendants(pid) {
		t += CPU(c)
	}
	return t
}

// RunTime returns the time pid's live threads have spent on a CPU so far,
// to the nanosecond: the first field of each thread's schedstat. CPU counts
// in the kernel's 10 ms ticks, too coarse for a window of a few calls to a
// mostly idle process. The kernel adds a running thread's time to its
// schedstat at a scheduler tick or when the thread leaves the CPU, so read
// it while the threads wait. A thread that ends takes its time out of the
// sum (RunTime can go backwards), and of a process that has exited but not
// been reaped only the leader thread is listed. 0 when unreadable, or on a
// kernel without schedstat (CONFIG_SCHED_INFO).
func RunTime(pid int) time.Duration { return time.Duration(schedstatSum(pid, 0)) }

// schedstatSum sums field i of every thread's /proc/<pid>/task/<tid>/schedstat
// (0: time on a CPU in ns, 1: time waiting for one in ns, 2: timeslices).
func schedstatSum(pid, i int) int64 {
	var n int64
	eachSchedstat(pid, func(_ int, f [3]int64) { n += f[i] })
	return n
}

// eachSchedstat calls fn with the schedstat fields of every live thread of
// pid that it can read.
func eachSchedstat(pid int, fn func(tid int, f [3]int64)) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, tid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) != 3 {
			continue
		}
		var v [3]int64
		for i := range v {
			v[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		fn(tid, v)
	}
}

// TreeRunTime is RunTime summed over pid and every live process below it,
// plus what pid's children that pid itself reaped used (cutime and cstime:
// /proc shows those only in ticks). It has RunTime's limits — a thread that
// ends or a process that exits inside a window takes time out of the sum
// until its parent reaps it — and TreeCPU's: what a grandchild used is lost
// once a child reaps it, and an orphan reparented away from the tree drops
// out. For the worker this is fit for (isolate hosts are its direct
// children, Go and V8 threads live as long as their process) the window's
// difference is exact to within a reap of a host, ±10 ms.
func TreeRunTime(pid int) time.Duration {
	f := statFields(pid)
	if f == nil {
		return 0
	}
	var ticks int64
	for _, i := range []int{13, 14} { // cutime cstime
		n, _ := strconv.ParseInt(f[i], 10, 64)
		ticks += n
	}
	t := time.Duration(ticks)*time.Second/clockTick + RunTime(pid)
	for _, c := range Descendants(pid) {
		t += RunTime(c)
	}
	return t
}

// TreeRSSKB returns the resident set size of pid and every live process
// below it, in KiB (pages shared between them are counted once per process).
func TreeRSSKB(pid int) int64 { return treeSum(pid, RSSKB) }

// Wakeups returns how many times the threads of pid have been scheduled
// onto a CPU so far (the last field of each thread's schedstat: its
// timeslices). A thread that sleeps and wakes adds one, so the growth
// over an idle window counts the process's wake-ups.
func Wakeups(pid int) int64 { return schedstatSum(pid, 2) }

// TreeWakeups is Wakeups summed over pid and every live process below it.
func TreeWakeups(pid int) int64 { return treeSum(pid, Wakeups) }

// Thread names one thread of a process.
type Thread struct{ PID, TID int }

// TreeThreadWakeups returns Wakeups for each live thread of pid and of
// every process below it. Two readings compared thread by thread count
// the wake-ups in between exactly, where the difference of two
// TreeWakeups loses what a thread or process that ended had counted
// (and can go backwards).
func TreeThreadWakeups(pid int) map[Thread]int64 {
	m := map[Thread]int64{}
	for _, p := range append([]int{pid}, Descendants(pid)...) {
		eachSchedstat(p, func(tid int, f [3]int64) { m[Thread{p, tid}] = f[2] })
	}
	return m
}

// PSSKB returns pid's proportional set size in KiB (smaps_rollup's Pss:
// each shared page divided among the processes that map it), or 0.
func PSSKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.ParseInt(f[0], 10, 64)
				return v
			}
		}
	}
	return 0
}

// TreePSSKB is PSSKB summed over pid and every live process below it: the
// tree's memory with what its processes share counted once.
func TreePSSKB(pid int) int64 { return treeSum(pid, PSSKB) }

// treeSum is f summed over pid and every live process below it.
func treeSum(pid int, f func(int) int64) int64 {
	n := f(pid)
	for _, c := range Descendants(pid) {
		n += f(c)
	}
	return n
}
