package tuning

import "syscall"

// WakeMonitor makes one system call the scheduler's way (entersyscall),
// which wakes the runtime's system monitor if it has parked. On a worker
// whose every P is computing, only the monitor polls the network, and the
// worker's own I/O no longer wakes it (internal/rawconn): a python guest's
// tick calls this each time it yields, so a guest computing for seconds on
// a worker with one P leaves the bus read within the monitor's 10 ms.
// Costs a getpid(2) a millisecond of guest computation.
func WakeMonitor() {
	_, _, _ = syscall.Syscall(syscall.SYS_GETPID, 0, 0, 0)
}
