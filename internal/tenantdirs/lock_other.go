//go:build !unix

package tenantdirs

import (
	"errors"
	"os"
)

// lockFile is unsupported here: directories are never marked, so Under
// fails and a sweep never removes anything.
func lockFile(f *os.File, nonBlocking bool) error {
	return errors.New("tenant directories need advisory file locks (flock), which this platform lacks")
}
