//go:build unix

package python

import "syscall"

// workerOpenFiles is how many files all interpreters together may hold
// open: half the worker's descriptor limit (the rest is the worker's own:
// the bus, isolate hosts, caches), at least maxOpenFiles.
func workerOpenFiles() int32 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 {
		return 4 * maxOpenFiles
	}
	n := rl.Cur / 2
	if n > 1<<30 {
		n = 1 << 30
	}
	return max(int32(n), maxOpenFiles)
}
