package configsvc

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ApplyClass says when a changed key takes effect (docs/behaviour.md#configuration-apply).
type ApplyClass int

// The apply classes of docs/behaviour.md#configuration-apply.
const (
	NextCall   ApplyClass = iota // read per call: caps, timeouts, guidance
	NewRuntime                   // per-runtime limits: runtimes created afterwards
	NextStop                     // drain_secs: the next SIGTERM/SIGINT
	Immediate                    // max_runtimes, idle_ttl_secs
	Background                   // warm pools: resized in the background
)

// ClassOf returns the apply class of key.
func ClassOf(key string) ApplyClass {
	switch key {
	case "heap_mb", "external_mb", "scratch_mb", "scratch_files", "scratch_root", "python_path":
		return NewRuntime
	case "max_runtimes", "idle_ttl_secs":
		return Immediate
	case "warm_pool_node", "warm_pool_python":
		return Background
	case "drain_secs":
		return NextStop
	}
	return NextCall
}

// Change is one key whose value differs between two configurations.
type Change struct {
	Key      string
	Old, New any
	Class    ApplyClass
}

// Diff lists the keys whose values differ from old to new, in schema order.
func Diff(old, new Config) []Change {
	var out []Change
	for _, k := range Keys() {
		a, _ := old.Get(k)
		b, _ := new.Get(k)
		if render(a) != render(b) {
			out = append(out, Change{Key: k, Old: a, New: b, Class: ClassOf(k)})
		}
	}
	return out
}

// LiveCounts tells Describe how many live runtimes keep their old per-runtime
// limits after a change.
type LiveCounts struct {
	Node int
}

// Describe renders the one INFO line of docs/behaviour.md#configuration-apply for an applied change,
// e.g. "configuration applied (configuration worker): max_result_bytes 32768
// → 65536 (next call)". An empty change list renders
// "configuration refreshed (<source>): no changes".
func Describe(source string, changes []Change, live LiveCounts) string {
	if len(changes) == 0 {
		return fmt.Sprintf("configuration refreshed (%s): no changes", source)
	}
	parts := make([]string, len(changes))
	for i, c := range changes {
		parts[i] = fmt.Sprintf("%s %s → %s (%s)", c.Key, render(c.Old), render(c.New), affects(c, live))
	}
	return fmt.Sprintf("configuration applied (%s): %s", source, strings.Join(parts, "; "))
}

func affects(c Change, live LiveCounts) string {
	switch c.Class {
	case NewRuntime:
		if c.Key == "python_path" {
			return "python interpreters started from now on; live python runtimes keep theirs"
		}
		if live.Node > 0 {
			noun := "runtimes keep"
			if live.Node == 1 {
				noun = "runtime keeps"
			}
			return fmt.Sprintf("node runtimes created from now on; %d live %s %s", live.Node, noun, render(c.Old))
		}
		return "node runtimes created from now on"
	case Immediate:
		if c.Key == "max_runtimes" {
			return "immediately; live runtimes are never killed"
		}
		return "immediately, from the next sweep"
	case Background:
		return "pool resizes in the background"
	case NextStop:
		return "the next stop"
	}
	if c.Key == "inject_guidance" {
		return "next hook call"
	}
	return "next call"
}

func render(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
