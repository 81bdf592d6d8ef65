package tuning

// The monitor setting keeps the Go runtime's system monitor ("sysmon")
// polling instead of parking while the process is idle.
//
// When every P of a Go process is idle, sysmon parks until the next timer;
// the first system call after that wakes it (a futex wake, a thread
// scheduled on another CPU), and it then polls every 20 µs until the
// process is idle again. A worker that answers light calls one at a time
// goes idle between every two of them, so each call paid for waking
// sysmon and for a few of its polls: on these VMs two to three of a kept
// turn's context switches and about a quarter of its CPU
// (docs/architecture.md, "Why does `serve` re-execute itself …?").
//
// The runtime skips parking only while a scheduler trace is configured,
// so MonitorSetting asks for one every 2³¹−1 ms (24.8 days): sysmon then never
// parks, backs off to one poll every 10 ms while nothing happens, and no
// system call has to wake it. The price is those 100 wake-ups a second of
// an idle process, and one "SCHED" line on standard error each time the
// interval has passed — the first at start-up when the machine has been up
// longer than 24.8 days (the runtime's clock counts from boot).

import "strings"

// MonitorSetting is the GODEBUG entry that keeps sysmon from parking.
const MonitorSetting = "schedtrace=2147483647"

// MonitorEnv returns environ with MonitorSetting added to GODEBUG, and whether it added
// it. A GODEBUG that already names schedtrace is the operator's choice
// and is left alone (GODEBUG=schedtrace=0 turns this off). Only the first
// GODEBUG entry is read by the runtime, so that is the one extended; the
// other entries are returned as they were, in order, in a new slice.
func MonitorEnv(environ []string) ([]string, bool) {
	out := make([]string, len(environ), len(environ)+1)
	copy(out, environ)
	for i, kv := range out {
		v, ok := strings.CutPrefix(kv, "GODEBUG=")
		if !ok {
			continue
		}
		if names(v, "schedtrace") {
			return out, false
		}
		if strings.TrimSpace(v) == "" {
			out[i] = "GODEBUG=" + MonitorSetting
		} else {
			out[i] = kv + "," + MonitorSetting
		}
		return out, true
	}
	return append(out, "GODEBUG="+MonitorSetting), true
}

// names reports whether the GODEBUG value sets key.
func names(godebug, key string) bool {
	for _, field := range strings.Split(godebug, ",") {
		k, _, _ := strings.Cut(field, "=")
		if strings.TrimSpace(k) == key {
			return true
		}
	}
	return false
}
