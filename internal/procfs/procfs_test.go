package procfs

import (
	"os"
	"testing"
	"time"
)

func TestRSSOfThisProcess(t *testing.T) {
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
