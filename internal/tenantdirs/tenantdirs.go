// Package tenantdirs keeps every directory a worker makes for its tenants
// (python /work and /out, node scratch) inside one directory of the
// worker's own per temporary root, marked as the worker's by a lock it
// holds for its whole life, so that what a killed worker (SIGKILL, the OOM
// killer) left behind can be told apart from a live worker's and removed
// by the next worker that starts — never a live worker's.
//
// The mark is an advisory lock (flock) on a file in the directory: the
// kernel drops it when the process ends, however it ends, so no pid can
// be reused into a false "alive" and no clock is trusted. A directory
// whose lock can be taken has no live owner.
package tenantdirs

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Prefix names a worker's directory under a temporary root.
const Prefix = "code-runner-worker-"

// lockName is the file whose lock marks the directory's owner as alive.
const lockName = "owner.lock"

// unmarkedAge is how old a directory without a lock file must be before a
// sweep removes it: younger, its owner may be between creating it and
// locking it.
const unmarkedAge = time.Minute

// Dirs is one worker's directories, one per temporary root it was asked
// for. The zero value is not usable; use New.
type Dirs struct {
	mu     sync.Mutex
	owned  map[string]*owned // root → the worker's directory there
	closed bool
}

type owned struct {
	dir  string
	lock *os.File
}

// New returns an empty set: directories are made on first use.
func New() *Dirs { return &Dirs{owned: map[string]*owned{}} }

// Under returns the worker's directory under root ("" = the system's
// temporary directory), making and locking it on first use.
func (d *Dirs) Under(root string) (string, error) {
	if root == "" {
		root = os.TempDir()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return "", errors.New("the worker's tenant directories are closed")
	}
	if o := d.owned[root]; o != nil {
		_, err := os.Stat(o.dir)
		if !errors.Is(err, os.ErrNotExist) {
			return o.dir, nil // there (or unreadable for now: still ours, still locked)
		}
		// Someone removed it under us: make a new one.
		_ = o.lock.Close()
		delete(d.owned, root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", fmt.Errorf("create the temporary root %s: %w", root, err)
	}
	dir, err := os.MkdirTemp(root, Prefix)
	if err != nil {
		return "", fmt.Errorf("create the worker's directory under %s: %w", root, err)
	}
	// The lock is taken on a file of another name and only then renamed
	// to lockName: a sweep never finds lockName unlocked while its owner
	// lives.
	lock, err := os.CreateTemp(dir, lockName+".new-")
	if err == nil {
		err = lockFile(lock, false)
		if err == nil {
			err = os.Rename(lock.Name(), filepath.Join(dir, lockName))
		}
		if err != nil {
			_ = lock.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("mark the worker's directory %s as its own: %w", dir, err)
	}
	d.owned[root] = &owned{dir: dir, lock: lock}
	return dir, nil
}

// Touch refreshes the modification time of the worker's lock files, so a
// system cleaner that ages out old files in the temporary directory
// (systemd-tmpfiles, say) never takes the mark of a live worker.
func (d *Dirs) Touch() {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	for _, o := range d.owned {
		_ = os.Chtimes(filepath.Join(o.dir, lockName), now, now)
	}
}

// Close removes the worker's directories and everything in them, and
// drops their marks. Call it after everything that used them has stopped.
func (d *Dirs) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	var errs []error
	for root, o := range d.owned {
		if err := os.RemoveAll(o.dir); err != nil {
			errs = append(errs, err)
		}
		_ = o.lock.Close()
		delete(d.owned, root)
	}
	return errors.Join(errs...)
}

// Sweep removes, under each root ("" = the system's temporary directory),
// the directories of workers that are no longer alive: those whose lock
// it can take (and those left without a lock file for over a minute). A
// live worker's directory is never touched. It returns how many it
// removed.
func Sweep(log *slog.Logger, roots ...string) int {
	removed := 0
	seen := map[string]bool{}
	for _, root := range roots {
		if root == "" {
			root = os.TempDir()
		}
		if seen[root] {
			continue
		}
		seen[root] = true
		entries, err := os.ReadDir(root)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), Prefix) {
				continue
			}
			dir := filepath.Join(root, e.Name())
			if sweepOne(dir) {
				removed++
				if log != nil {
					log.Info("removed the tenant files of a worker that is no longer running", "dir", dir)
				}
			}
		}
	}
	return removed
}

// sweepOne removes dir when its owner is gone.
func sweepOne(dir string) bool {
	lock, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return false
		}
		info, serr := os.Lstat(dir)
		if serr != nil || time.Since(info.ModTime()) < unmarkedAge {
			return false
		}
		return os.RemoveAll(dir) == nil
	}
	defer lock.Close()
	if lockFile(lock, true) != nil {
		return false // held: its worker is alive
	}
	return os.RemoveAll(dir) == nil
}
