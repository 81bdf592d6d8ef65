//go:build linux

package isolatehost

import (
	"fmt"
	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"os"
	"syscall"

	"github.com/code-runner-go/code-runner/internal/rawconn"
	"github.com/code-runner-go/code-runner/internal/spinread"
)

const syscallNoFollow = syscall.O_NOFOLLOW

// Serve runs the isolate host on this process's stdin and stdout and
// returns its exit status; cmd/code-runner calls it in the hidden host
// mode, and tests call it from TestMain.
//
// The worker hands stdin over in blocking mode; it is switched to
// non-blocking so the host's one goroutine can wait on it with a deadline
// (its idle wake-up) and poll it briefly after each message (spinread).
// While the host is bound to a kept runtime, the wait blocks its thread
// in the kernel rather than on the runtime's poller (host.setKept,
// spinread.Reader.SetWaitInKernel; "Why does a kept host wait for its next
// message in the kernel?" in docs/architecture.md).
func Serve() int {
	if path := os.Getenv(hostproto.MakeSnapshotEnv); path != "" {
		return makeSnapshot(path)
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		fmt.Fprintln(os.Stderr, "isolate host: stdin:", err)
		return 5
	}
	in, err := spinread.New(os.NewFile(0, "stdin"), tuning.PipeSpin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolate host:", err)
		return 5
	}
	// Stdout likewise, so that its writes are raw system calls that wait
	// on the poller (internal/rawconn): the replies then do not wake the
	// runtime's parked monitor.
	if err := syscall.SetNonblock(1, true); err != nil {
		fmt.Fprintln(os.Stderr, "isolate host: stdout:", err)
		return 5
	}
	out, err := rawconn.NewWriter(os.NewFile(1, "stdout"))
	if err != nil {
		// Not a pipe (a regular file, say): leave it blocking, as it came,
		// for whoever shares the file description.
		_ = syscall.SetNonblock(1, false)
		fmt.Fprintln(os.Stderr, "isolate host:", err)
		return 5
	}
	return RunHost(in, out)
}

// ownedByUs reports whether info describes a file owned by this process's
// user.
func ownedByUs(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
