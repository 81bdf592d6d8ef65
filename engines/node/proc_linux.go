package node

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

const syscallNoFollow = syscall.O_NOFOLLOW

var pageKB = int64(os.Getpagesize() / 1024)

// rssKB reads the resident set size of pid from /proc, 0 when unreadable.
func rssKB(pid int) int64 {
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

func hostSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
