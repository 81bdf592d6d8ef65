// Package tuning holds the worker's process knobs: the settings of the Go
// runtime and of the engines' waiting that trade CPU for latency. Each has
// one switch and a measured price (the figures and their commands are in
// docs/architecture.md, "Decisions: the process" and "Decisions: the node
// engine", and docs/benchmarks.md):
//
//	knob                         switch                               price
//	Governor (one P per call)    GOMAXPROCS in the environment: off   a stop-the-world on each raise
//	ExtraProcs (spare Ps)        GOMAXPROCS in the environment: off   more threads under load
//	PipeSpin (pipe poll)         the constant                         up to 50 µs of CPU per pipe read, only while polls catch messages
//	MemoryReturner               the constant ReturnDelay             one FreeOSMemory per burst of disposals, one after boot
//
// The runtime's system monitor is left to park while the worker is idle,
// and a call's own I/O does not wake it (internal/rawconn). Keeping it
// polling (GODEBUG=schedtrace=2147483647, the operator's switch) costs
// ~100 wake-ups a second while idle; it saved ~15 % of a light call's CPU
// before the raw I/O and nothing measurable since (docs/architecture.md,
// "Why does the runtime's monitor park while the worker is idle?").
//
// Nothing here is guest-facing; every knob only moves when and where the
// worker spends CPU, never what a guest may do.
package tuning

import "time"

// PipeSpin is how long each side of the worker ⇄ isolate host pipe polls
// for the next frame before sleeping (internal/spinread). It was 200 µs,
// tuned on calls issued back to back inside the engine (kept run p50
// 0.06 ms; 0.23 ms at 50 µs). Calls come over the bus, though, 0.1–1 ms
// apart, so a long poll never catches the next one and only takes CPU from
// the bus path: a kept node run over the bus measured p50 0.42–0.59 ms at
// 200 µs, 0.37–0.50 at 100 and 0.33–0.45 at 50 in the same session; 8-caller
// one-shot throughput did not change. A reader stops polling where the
// poll does not catch the next frame (internal/spinread), which over the
// bus is nearly always: that took a kept node turn's CPU down by a fifth.
const PipeSpin = 50 * time.Microsecond
