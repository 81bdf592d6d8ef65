// Package core owns what every code-runner call has in common: the call and
// request/response types, the Stage/Handler chain and its atomic swap, the
// Router from function id to Pipeline, the error taxonomy with its wire shape
// (docs/behaviour.md#errors-codes), the runtime Registry (slot budget shared by both languages,
// ownership map, function-id registry, tombstones), the pipeline stages
// (bridge policy, timeout clamp, output cap, runtime-id redaction) and the
// run service that routes code-runner::run to an Engine.
//
// Engines plug in behind the Engine and Runtime interfaces defined here; core
// imports no engine implementation and knows nothing about websockets.
package core
