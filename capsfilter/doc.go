// Package capsfilter owns the pure, I/O-free filters that every call's output
// and every guest bus call passes through:
//
//   - the result cap and the stream cap (docs/behaviour.md#output-caps) (ResultCap, StreamCap),
//   - runtime-id detection and redaction for logs and for unheld callers
//     (ContainsRuntimeID, RedactRuntimeIDs),
//   - the bridge deny-list (docs/behaviour.md#bridge-deny-list) (CheckFunction, CheckTriggerTarget,
//     CheckGuestTrigger).
//
// Nothing here does I/O or holds state; callers pass the live limits in.
package capsfilter
