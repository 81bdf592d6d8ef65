// Package core owns what every code-runner call has in common: the call and
// request/response types, the Stage/Handler chain, the Router (the one door
// every call enters by, and the one holder of the live configuration: a
// table of compiled routes swapped whole), the error taxonomy with its wire
// shape (docs/behaviour.md#errors-codes), the runtime Registry (slot budget
// shared by every language, ownership map, function-id registry,
// tombstones), the stages (core/stages.go lists each route's) and the run,
// register and teardown services.
//
// Engines plug in behind the seam defined here (EngineModule, LiveEngine,
// Runtime and the optional interfaces); core imports no engine, names no
// language, and knows nothing about websockets.
package core
