// Package isolatehost is the child side of the node engine: the process
// that holds one V8 isolate (our binding, package v8) and runs guest
// JavaScript in it. It reads tasks from its stdin and answers on its stdout
// in hostproto frames; every entry into the isolate is guarded by a
// deadline and the guest memory cap (guard.go); iii.files lives here
// (files.go). The worker never links this package's work into its own
// process: it starts the same binary in the hidden host mode (Serve).
package isolatehost
