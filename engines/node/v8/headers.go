//go:build v8headers

package v8

// The module whose deps/include holds V8's headers: never built into the
// binary (this file's build tag is never set), only kept in go.mod so that
// `go list -m -f '{{.Dir}}' github.com/tommie/v8go` finds the headers for
// `make v8headers`.
import _ "github.com/tommie/v8go"
