package procfs

import (
	"os"
	"os/exec"
	"runtime/debug"
	"syscall"
	"testing"
	"time"
)

func TestRSSOfThisProcess(t *testing.T) {
	debug.FreeOSMemory() // what an earlier run (-count) touched is not counted as before
	before := RSSKB(os.Getpid())
	if before <= 0 {
		t.Fatalf("rss %d", before)
	}
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	if after := RSSKB(os.Getpid()); after < before+32<<10 {
		t.Fatalf("touching 64 MiB moved RSS from %d to %d KiB", before, after)
	}
	if RSSKB(-1) != 0 {
		t.Fatal("unreadable pid must be 0")
	}
	_ = buf[len(buf)-1]
}

func TestCPUGrowsWithWork(t *testing.T) {
	before := CPU(os.Getpid())
	deadline := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) {
		x++
	}
	if after := CPU(os.Getpid()); after <= before {
		t.Fatalf("CPU did not grow after 300 ms of spinning: %v → %v (%d)", before, after, x)
	}
}

// RunTime sees work far shorter than a tick: spinning until the process has
// used 2 ms more CPU (getrusage, which the kernel keeps to the nanosecond
// for every thread, ended ones included) moves RunTime by as much, within
// 1.5 ms, where CPU, counted in 10 ms ticks, moves by 0 or 10. Spinning
// until the CPU is used, not for a span of wall time, keeps a busy machine
// from failing it. The kernel adds a running thread's time to its
// schedstat when the thread leaves the CPU, so the spinner sleeps before
// the second look (as the bench's workers are idle when it looks).
func TestRunTimeCountsWorkShorterThanATick(t *testing.T) {
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	time.Sleep(20 * time.Millisecond)
	ru0, rt0 := used(), RunTime(os.Getpid())
	for start := used(); used()-start < 2*time.Millisecond; {
	}
	time.Sleep(20 * time.Millisecond)
	rt, ru := RunTime(os.Getpid())-rt0, used()-ru0
	if d := rt - ru; rt <= 0 || d < -1500*time.Microsecond || d > 1500*time.Microsecond {
		t.Fatalf("the process used %v of CPU (getrusage) and RunTime moved by %v", ru, rt)
	}
	if RunTime(-1) != 0 || TreeRunTime(-1) != 0 {
		t.Fatal("an unreadable pid has no run time")
	}
}

func TestTreeCountsChildren(t *testing.T) {
	// A shell that starts a spinning child: the spinner is a grandchild of
	// this process and must be found, its RSS and CPU counted.
	cmd := exec.Command("sh", "-c", "sh -c 'while :; do :; done' & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() }()
	var d []int
	for i := 0; i < 100 && len(d) < 2; i++ {
		time.Sleep(20 * time.Millisecond)
		d = Descendants(os.Getpid())
	}
	if len(d) < 2 {
		t.Fatalf("descendants %v, want the shell and its child", d)
	}
	if TreeRSSKB(cmd.Process.Pid) <= RSSKB(cmd.Process.Pid) {
		t.Fatal("the tree's RSS does not include the child's")
	}
	before, after := TreeCPU(cmd.Process.Pid), time.Duration(0)
	for deadline := time.Now().Add(5 * time.Second); after <= before && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		after = TreeCPU(cmd.Process.Pid)
	}
	if after <= before {
		t.Fatalf("the spinning grandchild's CPU is not counted: %v → %v", before, after)
	}
	rt0, tree := TreeRunTime(cmd.Process.Pid), time.Duration(0)
	for deadline := time.Now().Add(5 * time.Second); tree-rt0 < 20*time.Millisecond && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tree = TreeRunTime(cmd.Process.Pid)
	}
	if own := RunTime(cmd.Process.Pid); tree-rt0 < 20*time.Millisecond || tree <= own {
		t.Fatalf("the spinning grandchild's run time is not counted: tree %v → %v, the shell's own %v", rt0, tree, own)
	}
	if Descendants(-1) != nil || TreeCPU(-1) != 0 {
		t.Fatal("an unreadable pid has no tree")
	}
}

// A thread that sleeps and wakes is counted each time; PSS of this process
// is positive and no more than its RSS.
func TestWakeupsAndPSS(t *testing.T) {
	before := Wakeups(os.Getpid())
	for i := 0; i < 50; i++ {
		time.Sleep(time.Millisecond)
	}
	if got := Wakeups(os.Getpid()) - before; got < 50 {
		t.Fatalf("%d wake-ups counted over 50 sleeps", got)
	}
	pss, rss := PSSKB(os.Getpid()), RSSKB(os.Getpid())
	if pss <= 0 || pss > rss {
		t.Fatalf("PSS %d KiB, RSS %d KiB", pss, rss)
	}
	root := Wakeups(os.Getpid())
	if TreeWakeups(os.Getpid()) < root || TreePSSKB(os.Getpid()) <= 0 {
		t.Fatal("a tree counts less than its root")
	}
	// Thread by thread: every thread of this process is there, and the
	// counts add up to Wakeups (read again after: threads keep waking).
	var sum int64
	threads := TreeThreadWakeups(os.Getpid())
	for th, n := range threads {
		if th.PID == os.Getpid() {
			sum += n
		}
	}
	if after := Wakeups(os.Getpid()); sum < root || sum > after || len(threads) < 2 {
		t.Fatalf("threads sum to %d wake-ups over %d threads; Wakeups read %d before and %d after", sum, len(threads), root, after)
	}
}
