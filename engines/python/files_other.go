//go:build !unix

package python

// workerOpenFiles is how many files all interpreters together may hold
// open (no descriptor limit to read here: four interpreters' worth).
func workerOpenFiles() int32 { return 4 * maxOpenFiles }
