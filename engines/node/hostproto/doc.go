// Package hostproto is the wire between the node engine (the parent, in
// the worker) and an isolate host (the child): one message type, framed as
// a 4-byte big-endian length and JSON, the task outcomes, and the pipe
// poll both ends read with.
package hostproto
