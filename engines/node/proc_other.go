//go:build !linux

package node

import "syscall"

// unsupported is why the node engine cannot run on this system.
const unsupported = "code-runner's node engine runs on Linux only: it watches each isolate host's memory in /proc and ties the host's life to the worker's with a parent-death signal; run code-runner on Linux (a container works)"

// rssKB would read a host's resident set size; only Linux has the /proc
// the node engine reads it from.
func rssKB(int) int64 { panic(unsupported) }

func hostSysProcAttr() *syscall.SysProcAttr { panic(unsupported) }
