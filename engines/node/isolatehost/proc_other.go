//go:build !linux

package isolatehost

import (
	"fmt"
	"os"
)

// syscallNoFollow is never used: Serve refuses to start off Linux.
const syscallNoFollow = 0

// Serve refuses to run: the isolate host waits on a non-blocking stdin and
// reads its own memory from /proc, which only Linux gives it.
func Serve() int {
	fmt.Fprintln(os.Stderr, "isolate host: code-runner's node engine runs on Linux only (it reads /proc and waits on a non-blocking stdin); run code-runner on Linux (a container works)")
	return 5
}

// ownedByUs is never reached off Linux (Serve refuses to start).
func ownedByUs(os.FileInfo) bool { return false }
