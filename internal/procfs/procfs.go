// Package procfs reads process facts from Linux's /proc.
package procfs

import (
	"os"
	"strconv"
	"strings"
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
