package tuning

import (
	"reflect"
	"testing"
)

func TestMonitorEnv(t *testing.T) {
	cases := []struct {
		name   string
		in     []string
		want   []string
		change bool
	}{
		{"no GODEBUG", []string{"PATH=/bin", "HOME=/h"}, []string{"PATH=/bin", "HOME=/h", "GODEBUG=" + MonitorSetting}, true},
		{"empty environment", nil, []string{"GODEBUG=" + MonitorSetting}, true},
		{"empty GODEBUG", []string{"GODEBUG=", "A=1"}, []string{"GODEBUG=" + MonitorSetting, "A=1"}, true},
		{"operator settings kept", []string{"GODEBUG=madvdontneed=1,gctrace=1"}, []string{"GODEBUG=madvdontneed=1,gctrace=1," + MonitorSetting}, true},
		{"operator's schedtrace wins", []string{"GODEBUG=schedtrace=0"}, []string{"GODEBUG=schedtrace=0"}, false},
		{"operator's schedtrace among others", []string{"GODEBUG=gctrace=1, schedtrace=1000"}, []string{"GODEBUG=gctrace=1, schedtrace=1000"}, false},
		{"a name that only ends in schedtrace", []string{"GODEBUG=xschedtrace=1"}, []string{"GODEBUG=xschedtrace=1," + MonitorSetting}, true},
		{"only the first GODEBUG is read", []string{"GODEBUG=a=1", "GODEBUG=schedtrace=0"}, []string{"GODEBUG=a=1," + MonitorSetting, "GODEBUG=schedtrace=0"}, true},
		{"GODEBUGX is another variable", []string{"GODEBUGX=1"}, []string{"GODEBUGX=1", "GODEBUG=" + MonitorSetting}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := append([]string(nil), c.in...)
			got, change := MonitorEnv(c.in)
			if !reflect.DeepEqual(got, c.want) || change != c.change {
				t.Fatalf("MonitorEnv(%q) = %q, %v; want %q, %v", c.in, got, change, c.want, c.change)
			}
			if !reflect.DeepEqual(c.in, before) {
				t.Fatalf("Env changed its argument: %q, was %q", c.in, before)
			}
		})
	}
}
