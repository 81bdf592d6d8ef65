//go:build unix

package tenantdirs

import (
	"os"
	"syscall"
)

// lockFile takes f's exclusive advisory lock: without waiting when
// nonBlocking (an error means another process holds it).
func lockFile(f *os.File, nonBlocking bool) error {
	how := syscall.LOCK_EX
	if nonBlocking {
		how |= syscall.LOCK_NB
	}
	return syscall.Flock(int(f.Fd()), how)
}
