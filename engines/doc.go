// Package engines groups the language engines that implement core.Engine:
// engines/node (V8 isolates in supervised isolate-host processes) and
// engines/python (CPython on WASI in wazero). Engines never talk to the bus
// directly: guest calls go through the core.Bridge the pipeline hands them.
package engines
