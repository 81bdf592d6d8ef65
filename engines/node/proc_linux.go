//go:build linux

package node

import (
	"syscall"

	"github.com/code-runner-go/code-runner/internal/procfs"
)

// rssKB reads the resident set size of pid from /proc.
func rssKB(pid int) int64 { return procfs.RSSKB(pid) }

func hostSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
