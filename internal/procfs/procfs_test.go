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

// RunTime sees work far shorter than a tick: 2 ms of spinning moves it by
// at least 2 ms and by less than 7 (the spin's wall time plus the runtime's
// own threads), where CPU, counted in 10 ms ticks, moves by 0 or 10. The
// kernel adds a running thread's time to its schedstat when the thread
// leaves the CPU, so the spinner sleeps before the second look (as the
// bench's workers are idle when it looks).
func TestRunTimeCountsWorkShorterThanATick(t *testing.T) {
	time.Sleep(20 * time.Millisecond)
	before := RunTime(os.Getpid())
	start := time.Now()
	for time.Since(start) < 2*time.Millisecond {
	}
	wall := time.Since(start)
	time.Sleep(20 * time.Millisecond)
	got := RunTime(os.Getpid()) - before
	if got < 2*time.Millisecond || got > wall+5*time.Millisecond {
		t.Fatalf("2 ms of spinning (%v of wall time) moved RunTime by %v", wall, got)
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
	rt0 := TreeRunTime(cmd.Process.Pid)
	time.Sleep(50 * time.Millisecond)
	if own, tree := RunTime(cmd.Process.Pid), TreeRunTime(cmd.Process.Pid); tree-rt0 < 20*time.Millisecond || tree <= own {
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
}
