//go:build race

package rawconn

// raceBuild: the race detector learns that a write on one goroutine
// happens before a read of the same bytes on another only from the
// annotations the standard library's I/O makes (internal/poll), which raw
// system calls skip. In race builds Wrap and NewWriter therefore keep the
// standard path, so that a test whose two ends share a process sees no
// race that is not there; rawconn's own tests run the raw path either way.
const raceBuild = true
