package python

import (
	"io/fs"
	"syscall"
	"time"
)

// accessTime is when the file behind st was last read.
func accessTime(st fs.FileInfo) time.Time {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return time.Unix(s.Atim.Unix())
	}
	return time.Time{}
}
