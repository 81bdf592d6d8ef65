//go:build !linux

package tuning

import (
	"errors"
	"os"
)

// KeepMonitorAwake cannot re-execute in place here: it needs Linux's
// /proc/self/exe. The worker then serves with the runtime's monitor parking
// when idle; set GODEBUG=schedtrace=2147483647 before starting it for the
// same effect.
func KeepMonitorAwake() error {
	if _, change := MonitorEnv(os.Environ()); !change {
		return nil // GODEBUG names schedtrace already: the operator's choice
	}
	return errors.New("re-executing in place needs Linux's /proc/self/exe; set GODEBUG=" + MonitorSetting + " before starting the worker instead")
}
