package python

import (
	"io/fs"
	"os"
	"path/filepath"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
)

// Budgets of /work and /out (contract §5.6).
const (
	workMaxBytes   = 256 << 20
	workMaxEntries = 20000
	outMaxBytes    = 4 << 20
	outMaxEntries  = 64
)

// guardedFS is a writable directory mount that refuses to create symlinks
// and hard links — with them a guest could point into the host filesystem
// and read or write through the link — and refuses any single file
// growing past the directory's whole byte budget. The budgets themselves are
// measured by the turn watchdog (every 250 ms and at the end of a turn).
type guardedFS struct {
	experimentalsys.FS
	maxFile int64
}

func newGuardedFS(dir string, maxFile int64) experimentalsys.FS {
	return &guardedFS{FS: sysfs.DirFS(dir), maxFile: maxFile}
}

// Symlink is refused.
func (g *guardedFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// Link is refused.
func (g *guardedFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// OpenFile wraps files so no single file outgrows the budget.
func (g *guardedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	f, errno := g.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		return f, errno
	}
	return &guardedFile{File: f, max: g.maxFile}, 0
}

type guardedFile struct {
	experimentalsys.File
	max int64
}

func (f *guardedFile) Write(p []byte) (int, experimentalsys.Errno) {
	if st, errno := f.File.Stat(); errno == 0 && st.Size+int64(len(p)) > f.max {
		return 0, experimentalsys.EIO
	}
	return f.File.Write(p)
}

func (f *guardedFile) Pwrite(p []byte, off int64) (int, experimentalsys.Errno) {
	if off+int64(len(p)) > f.max {
		return 0, experimentalsys.EIO
	}
	return f.File.Pwrite(p, off)
}

func (f *guardedFile) Truncate(size int64) experimentalsys.Errno {
	if size > f.max {
		return experimentalsys.EIO
	}
	return f.File.Truncate(size)
}

// usage walks dir without following links and returns its bytes and entries.
func usage(dir string) (bytes int64, entries int) {
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return nil
		}
		entries++
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				bytes += info.Size()
			}
		}
		return nil
	})
	return bytes, entries
}

// wipe empties dir, keeping the directory itself.
func wipe(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}
