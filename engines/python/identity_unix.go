//go:build unix

package python

import (
	"fmt"
	"io/fs"
	"syscall"
)

// identity names the file behind st by device and inode.
func identity(st fs.FileInfo) string {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", s.Dev, s.Ino)
	}
	return ""
}
