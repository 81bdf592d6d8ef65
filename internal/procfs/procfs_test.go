package procfs

import (
	"os"
	"testing"
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
