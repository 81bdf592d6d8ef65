package python

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/code-runner-go/code-runner/internal/zipfs"
)

// The operator's python_path: each entry — a host directory, or a .zip or
// .whl file — is mounted read-only at /pkgs/<i> and appended to sys.path
// after the standard library and the package bundle. A directory is opened
// as an os.Root, so nothing under it (a symlink, a "..") resolves outside
// it; an archive is served by zipfs from its open file. Each interpreter
// opens its own handles when it boots and closes them when it ends: the
// path applies to
// interpreters started after a change, and the pool drops those booted with
// another (pathKey). What an archive holds is fixed by its open file; a
// directory's contents are read as they are.

// pkgsDir is where entry i is mounted: /pkgs/<i>.
const pkgsDir = "/pkgs/"

// operatorMount is one python_path entry, opened.
type operatorMount struct {
	guest string // /pkgs/<i>
	fsys  fs.FS
	close io.Closer
}

// openPythonPath opens every entry. An entry that cannot be opened any more
// (validation found it; it went away since) is left out with an error in
// skipped: the guest then gets an ImportError for what it held.
func openPythonPath(entries []string) (mounts []operatorMount, skipped []error) {
	for i, p := range entries {
		m, err := openEntry(p)
		if err != nil {
			skipped = append(skipped, fmt.Errorf("python_path[%d] %q: %w", i, p, err))
			continue
		}
		m.guest = pkgsDir + strconv.Itoa(i)
		mounts = append(mounts, m)
	}
	return mounts, skipped
}

func openEntry(p string) (operatorMount, error) {
	st, err := os.Stat(p)
	if err != nil {
		return operatorMount{}, err
	}
	if st.IsDir() {
		root, err := os.OpenRoot(p)
		if err != nil {
			return operatorMount{}, err
		}
		return operatorMount{fsys: plainFiles{root}, close: root}, nil
	}
	if !st.Mode().IsRegular() || (!strings.HasSuffix(p, ".zip") && !strings.HasSuffix(p, ".whl")) {
		// Checked before the open: opening a FIFO named x.zip would block.
		return operatorMount{}, errors.New("neither a directory nor a regular .zip or .whl file")
	}
	f, err := os.Open(p)
	if err != nil {
		return operatorMount{}, err
	}
	st, err = f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	var z *zipfs.FS
	if err == nil {
		z, err = zipfs.New(p, f, st.Size(), false)
	}
	if err != nil {
		_ = f.Close()
		return operatorMount{}, err
	}
	return operatorMount{fsys: z, close: f}, nil
}

// plainFiles serves an operator directory through its os.Root, opening
// only directories and regular files: opening a FIFO or a device would
// block the guest's open (and a stat, which opens) beyond any kill. What
// it opens shows no access time (quietFile).
type plainFiles struct{ root *os.Root }

func (p plainFiles) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	st, err := p.root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() && !st.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	f, err := p.root.Open(name)
	if err != nil {
		return nil, err
	}
	return quietFile{f}, nil
}

// quietFile is an operator's file whose stat reads its modification time
// as its access time (withoutAccessTime): every interpreter shares the
// directory, and a read moves the access time on the host, so the real one
// would tell a tenant when another imported a package. wazero stats a
// file of an fs.FS, by path or by descriptor, through its Stat; every
// other method is the *os.File's.
type quietFile struct{ *os.File }

// Stat is the file's stat without its access time.
func (f quietFile) Stat() (fs.FileInfo, error) {
	st, err := f.File.Stat()
	if err != nil {
		return nil, err
	}
	return withoutAccessTime(st), nil
}

// pathKey identifies a python_path value as this host has it: each entry
// with the identity of what it names (device, inode, size, modification
// time), or "missing". Interpreters booted with another key are not
// handed out again, so a wheel replaced at the same path, or an entry that
// appeared, reaches the next interpreters; the contents of a directory
// are read live (a new file in it is seen at once).
func pathKey(entries []string) string {
	var b strings.Builder
	for _, p := range entries {
		b.WriteString(p)
		if st, err := os.Stat(p); err != nil {
			b.WriteString("\x00missing")
		} else {
			fmt.Fprintf(&b, "\x00%d\x00%d\x00%s", st.Size(), st.ModTime().UnixNano(), identity(st))
		}
		b.WriteByte(0)
	}
	return b.String()
}
