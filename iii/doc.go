// Package iii owns the iii engine wire protocol on the worker side:
// connection, registration replay, reconnect, invocations both ways and
// trigger types. It knows nothing about code-runner.
package iii
