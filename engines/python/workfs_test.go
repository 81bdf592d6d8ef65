package python

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// mountFile creates name through the mount and writes n bytes to it.
func mountFile(t *testing.T, g experimentalsys.FS, name string, n int) experimentalsys.Errno {
	t.Helper()
	f, errno := g.OpenFile(name, experimentalsys.O_CREAT|experimentalsys.O_RDWR|experimentalsys.O_TRUNC, 0o644)
	if errno != 0 {
		return errno
	}
	defer f.Close()
	_, errno = f.Write(make([]byte, n))
	return errno
}

// TestBudgetSeesEveryChangeMadeThroughTheMount: measurements are skipped
// while nothing changed through the mount, so every change that frees or
// takes space — deleting, renaming over a file, truncating, removing a
// directory, re-creating with O_TRUNC — must make the next measurement walk
// the directory (docs/behaviour.md#python-work): after each step the
// budget's measurement is what the directory holds, and the writes after
// each freeing step are admitted.
func TestBudgetSeesEveryChangeMadeThroughTheMount(t *testing.T) {
	dir := t.TempDir()
	b := newBudget(dir, "/work", 1000, 4)
	b.reset()
	g := newGuardedFS(b, &openFiles{})
	steps := []struct {
		name string
		do   func() experimentalsys.Errno
	}{
		{"fill to 900 bytes", func() experimentalsys.Errno { return mountFile(t, g, "a", 900) }},
		{"delete it", func() experimentalsys.Errno { return g.Unlink("a") }},
		{"900 bytes again", func() experimentalsys.Errno { return mountFile(t, g, "b", 900) }},
		{"rename a small file over it", func() experimentalsys.Errno {
			if errno := mountFile(t, g, "c", 10); errno != 0 {
				return errno
			}
			return g.Rename("c", "b")
		}},
		{"900 bytes in another file", func() experimentalsys.Errno { return mountFile(t, g, "d", 900) }},
		{"truncate it", func() experimentalsys.Errno {
			f, errno := g.OpenFile("d", experimentalsys.O_RDWR, 0)
			if errno != 0 {
				return errno
			}
			defer f.Close()
			return f.Truncate(0)
		}},
		{"900 bytes after the truncation", func() experimentalsys.Errno { return mountFile(t, g, "e", 900) }},
		{"re-create it empty with O_TRUNC", func() experimentalsys.Errno {
			f, errno := g.OpenFile("e", experimentalsys.O_RDWR|experimentalsys.O_TRUNC, 0)
			if errno == 0 {
				f.Close()
			}
			return errno
		}},
		{"a directory (entry 4 of 4)", func() experimentalsys.Errno { return g.Mkdir("sub", fs.ModeDir|0o755) }},
		{"remove it", func() experimentalsys.Errno { return g.Rmdir("sub") }},
		{"900 bytes once more", func() experimentalsys.Errno { return mountFile(t, g, "f", 900) }},
	}
	for _, s := range steps {
		if errno := s.do(); errno != 0 {
			t.Fatalf("%s: %v (budget %d bytes, %d entries measured)", s.name, errno, b.baseBytes, b.baseEntries)
		}
		if b.check() {
			t.Fatalf("%s: the budget says over with %s holding less than it allows", s.name, dir)
		}
		if bytes, entries := usage(dir); b.baseBytes != bytes || b.baseEntries != entries {
			t.Fatalf("%s: the budget measured %d bytes in %d entries, the directory holds %d in %d", s.name, b.baseBytes, b.baseEntries, bytes, entries)
		}
	}
	// And the budget still refuses a real crossing.
	if !endsTheInstance(func() { _ = mountFile(t, g, "g", 200) }) {
		t.Fatal("a write past 1,000 bytes was admitted")
	}
}

// TestAWriteToADirectoryIsRefusedBeforeTheBudget: a write, positioned
// write or truncation through a directory's descriptor fails as not open
// for writing, whatever it asks for, and leaves the budget as it was: it is
// not measured against the directory's size (which would tell the guest
// that size) and does not mark the budget over.
func TestAWriteToADirectoryIsRefusedBeforeTheBudget(t *testing.T) {
	dir := t.TempDir()
	b := newBudget(dir, "/work", 1000, 4)
	b.reset()
	g := newGuardedFS(b, &openFiles{})
	d, errno := g.OpenFile(".", experimentalsys.O_RDONLY, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	defer d.Close()
	for name, try := range map[string]func() experimentalsys.Errno{
		"write":    func() experimentalsys.Errno { _, e := d.Write([]byte("x")); return e },
		"pwrite":   func() experimentalsys.Errno { _, e := d.Pwrite([]byte("x"), 1<<30); return e },
		"truncate": func() experimentalsys.Errno { return d.Truncate(1 << 30) },
	} {
		if errno := try(); errno != experimentalsys.EBADF {
			t.Errorf("%s through a directory's descriptor: %v, want EBADF", name, errno)
		}
	}
	if b.over || b.check() {
		t.Fatal("writes refused at a directory marked the budget over")
	}
	if errno := mountFile(t, g, "a", 900); errno != 0 {
		t.Fatalf("900 bytes after the refused writes: %v", errno)
	}
}

// TestInodeNumbersAreMaskedAlike: every route by which wazero hands a
// guest an inode number under the mount — a stat by path, a descriptor's
// stat, its Ino (a listing's "."), a listing's entries — gives the same
// masked number for one file, never the host's, and a new tenant's epoch
// gives other numbers.
func TestInodeNumbersAreMaskedAlike(t *testing.T) {
	dir := t.TempDir()
	b := newBudget(dir, "/work", 1000, 4)
	b.reset()
	g := newGuardedFS(b, &openFiles{})
	if errno := mountFile(t, g, "a", 1); errno != 0 {
		t.Fatal(errno)
	}
	host := func(name string) uint64 {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		return st.Ino
	}
	read := func() (root, file uint64) {
		t.Helper()
		d, errno := g.OpenFile(".", experimentalsys.O_RDONLY, 0)
		if errno != 0 {
			t.Fatal(errno)
		}
		defer d.Close()
		ino, errno := d.Ino()
		st, errno2 := d.Stat()
		byPath, errno3 := g.Stat(".")
		dirents, errno4 := d.Readdir(-1)
		fileSt, errno5 := g.Lstat("a")
		if errno|errno2|errno3|errno4|errno5 != 0 || len(dirents) != 1 {
			t.Fatalf("errnos %v %v %v %v %v, entries %v", errno, errno2, errno3, errno4, errno5, dirents)
		}
		if ino != st.Ino || ino != byPath.Ino {
			t.Fatalf("the directory reads %d by Ino, %d by its stat, %d by path", ino, st.Ino, byPath.Ino)
		}
		if dirents[0].Ino != fileSt.Ino {
			t.Fatalf("the file reads %d in the listing, %d by path", dirents[0].Ino, fileSt.Ino)
		}
		if ino == host(".") || fileSt.Ino == host("a") || ino == 0 || fileSt.Ino == 0 {
			t.Fatalf("the host's numbers (%d, %d) showed: %d, %d", host("."), host("a"), ino, fileSt.Ino)
		}
		return ino, fileSt.Ino
	}
	root1, file1 := read()
	if root2, file2 := read(); root2 != root1 || file2 != file1 {
		t.Fatal("one tenant read two numbers for one file")
	}
	b.nextTenant()
	if root2, file2 := read(); root2 == root1 || file2 == file1 {
		t.Fatal("the next tenant read the last one's numbers")
	}
}

// TestEmptyWipesOnlyWhatCouldHoldSomething: emptying a directory nothing
// changed in since it was last found empty does not walk it; anything made
// through the mount since is removed.
func TestEmptyWipesOnlyWhatCouldHoldSomething(t *testing.T) {
	dir := t.TempDir()
	b := newBudget(dir, "/out", 1000, 10)
	g := newGuardedFS(b, &openFiles{})
	b.empty()
	// Made behind the mount's back, as nothing in the worker does: a
	// skipped wipe leaves it, which is how this test sees the skip.
	if err := os.WriteFile(filepath.Join(dir, "unseen"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.empty()
	if _, err := os.Stat(filepath.Join(dir, "unseen")); err != nil {
		t.Fatalf("empty walked a directory nothing changed in: %v", err)
	}
	if errno := mountFile(t, g, "made", 5); errno != 0 {
		t.Fatal(errno)
	}
	b.empty()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("after a write through the mount, empty left %d entries", len(ents))
	}
}

// TestEmptyReportsWhatItCouldNotRemove: a directory that cannot be emptied
// (here: gone) is an error, and the budget does not take it for empty — the
// next empty tries again instead of skipping the wipe.
func TestEmptyReportsWhatItCouldNotRemove(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := newBudget(dir, "/work", 1000, 10)
	if err := b.empty(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	b.touch()
	if err := b.empty(); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("emptying a missing directory answered %v; want an error naming it", err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "left"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.empty(); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("after a failed wipe, the next empty skipped the directory: %d entries left", len(ents))
	}
}
