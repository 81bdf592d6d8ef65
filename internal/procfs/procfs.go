// Package procfs reads process facts from Linux's /proc.
package procfs

import (
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
