//go:build linux

package tuning

import (
	"fmt"
	"os"
	"syscall"
)

// KeepMonitorAwake re-executes this binary in place — same pid, arguments
// and descriptors — with MonitorSetting in GODEBUG when the setting is
// missing (the runtime reads GODEBUG only at start). It returns only when
// it did not: GODEBUG names schedtrace already (the operator's switch,
// GODEBUG=schedtrace=0 turns it off) or the exec failed, which it returns.
func KeepMonitorAwake() error {
	env, change := MonitorEnv(os.Environ())
	if !change {
		return nil
	}
	// /proc/self/exe names this very file even if it was replaced on disk.
	if err := syscall.Exec("/proc/self/exe", os.Args, env); err != nil {
		return fmt.Errorf("re-exec with GODEBUG=%s: %w", MonitorSetting, err)
	}
	return nil
}
