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
// opens its own handles when it boots and closes them when it ends, so an
// entry read at boot stays what that interpreter sees: the path applies to
// interpreters started after a change, and the pool drops those booted with
// another (pathKey).

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
		return operatorMount{fsys: root.FS(), close: root}, nil
	}
	if !strings.HasSuffix(p, ".zip") && !strings.HasSuffix(p, ".whl") {
		return operatorMount{}, errors.New("neither a directory nor a .zip or .whl file")
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

// pathKey identifies a python_path value: interpreters booted with another
// one are not handed out again.
func pathKey(entries []string) string { return strings.Join(entries, "\x00") }
