package python

import (
	"io/fs"
	"syscall"
)

// withoutAccessTime is info with its access time read as its modification
// time, for files a guest must not learn the last reader of (an operator's
// python_path directory, shared by every interpreter: a read moves a
// file's access time on the host). The change time stays: only the
// operator changes those files.
func withoutAccessTime(info fs.FileInfo) fs.FileInfo {
	s, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return info
	}
	c := *s
	c.Atim = c.Mtim
	return statInfo{FileInfo: info, sys: &c}
}

// statInfo is a FileInfo whose Sys is another stat (wazero reads a
// guest's stat from Sys).
type statInfo struct {
	fs.FileInfo
	sys *syscall.Stat_t
}

// Sys returns the replacement stat.
func (i statInfo) Sys() any { return i.sys }
