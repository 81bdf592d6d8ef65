package python

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

// Budgets of /work and /out (docs/behaviour.md#python-work).
const (
	workMaxBytes   = 256 << 20
	workMaxEntries = 20000
	outMaxBytes    = 4 << 20
	outMaxEntries  = 64
)

// budget is the byte and entry budget of one guest directory. Writes are
// admitted against it as they happen, so a fast writer cannot overshoot
// between two measurements: growth is counted optimistically (every byte a
// write adds past a file's end, and every file created, counts as new), and only when that
// estimate would cross the budget is the directory walked for real. A write
// that would still cross it is refused and the budget is marked over; the
// turn then ends as the budget kill (the guest never gets to carry on past
// the refusal).
//
// Every change a guest can make to the directory's bytes or entries goes
// through the mount (guardedFS, guardedFile), which bumps gen before and
// after it; a measurement taken while gen has not moved since the last one
// would find what that one found, so it is skipped. A kept turn that writes
// nothing then costs no directory walk at all.
type budget struct {
	dir        string // host directory
	name       string // "/work" or "/out", as the kill message names it
	maxBytes   int64
	maxEntries int

	mu          sync.Mutex
	baseBytes   int64 // last measured
	baseEntries int
	addBytes    int64 // optimistic growth since
	addEntries  int
	over        bool
	onOver      func() // told once, when the budget is first crossed

	gen         uint64 // changes made or admitted through the mount
	measuredGen uint64 // gen when base* were last measured
	measured    bool   // base* hold a measurement (false: walk next time)

	// root is the directory itself as pin found it (nil before): which
	// one it is (device and inode), its size and times, what settle holds
	// it to; and the change time view reports. Read without mu, by stats.
	root atomic.Pointer[sys.Stat_t]

	// inoKey and epoch make the inode numbers a guest reads (mask): the
	// epoch moves for every tenant (nextTenant), the key is the budget's.
	// Read without mu, by stats.
	inoKey cipher.Block
	epoch  atomic.Uint64
}

func newBudget(dir, name string, maxBytes int64, maxEntries int) *budget {
	var key [16]byte
	_, _ = rand.Read(key[:]) // crypto/rand.Read does not fail (it crashes the program first)
	blk, err := aes.NewCipher(key[:])
	if err != nil {
		panic(fmt.Sprintf("aes with a 16-byte key: %v", err)) // cannot happen: 16 bytes is AES-128
	}
	return &budget{dir: dir, name: name, maxBytes: maxBytes, maxEntries: maxEntries, inoKey: blk}
}

// setOnOver sets what is told when the budget is crossed (nil: nobody).
func (b *budget) setOnOver(fn func()) {
	b.mu.Lock()
	b.onOver = fn
	b.mu.Unlock()
}

// admit reports whether growth of bytes and entries fits the budget, and
// counts it when it does.
func (b *budget) admit(bytes int64, entries int) bool {
	b.mu.Lock()
	b.gen++
	defer b.mu.Unlock()
	if b.over {
		return false
	}
	if b.baseBytes+b.addBytes+bytes <= b.maxBytes && b.baseEntries+b.addEntries+entries <= b.maxEntries {
		b.addBytes += bytes
		b.addEntries += entries
		return true
	}
	b.measureLocked()
	if b.baseBytes+bytes <= b.maxBytes && b.baseEntries+entries <= b.maxEntries {
		b.addBytes, b.addEntries = bytes, entries
		return true
	}
	b.markOverLocked()
	return false
}

// budgetRefused ends the instance from inside the host call whose write
// crossed a budget (admit has marked it over): the guest never gets an
// error it could catch and go on with, and the turn ends as the budget kill
// (afterDeath finds the budget over first).
func budgetRefused() {
	panic(sys.NewExitError(sys.ExitCodeContextCanceled))
}

func (b *budget) markOverLocked() {
	if b.over {
		return
	}
	b.over = true
	if b.onOver != nil {
		go b.onOver()
	}
}

// touch records a change made through the mount (after it is made, and for
// changes that admit nothing: deletions, renames, truncations).
func (b *budget) touch() {
	b.mu.Lock()
	b.gen++
	b.mu.Unlock()
}

func (b *budget) measureLocked() {
	if !b.measured || b.gen != b.measuredGen {
		b.baseBytes, b.baseEntries = usage(b.dir)
		b.measured, b.measuredGen = true, b.gen
	}
	b.addBytes, b.addEntries = 0, 0
}

// check measures the directory and reports whether it is over budget now
// or a write was refused since the last reset.
func (b *budget) check() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.measureLocked()
	if b.baseBytes > b.maxBytes || b.baseEntries > b.maxEntries {
		b.markOverLocked()
	}
	return b.over
}

// empty removes everything in the directory — nothing to do when it is
// known to be empty and nothing changed since — and forgets a crossing. An
// error means something may be left: the directory is not known empty (the
// next empty wipes again), and a reset must not hand it to another tenant.
func (b *budget) empty() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.addBytes, b.addEntries = 0, 0
	b.over = false
	if b.measured && b.gen == b.measuredGen && b.baseBytes == 0 && b.baseEntries == 0 {
		return nil
	}
	if err := wipe(b.dir); err != nil {
		b.measured = false
		return err
	}
	b.baseBytes, b.baseEntries = 0, 0
	b.measured, b.measuredGen = true, b.gen
	return nil
}

// pin records the directory's identity and times as the ones settle
// holds it to.
func (b *budget) pin() error {
	st, err := os.Lstat(b.dir)
	if err != nil {
		return fmt.Errorf("pin %s: %w", b.name, err)
	}
	root := sys.NewStat_t(st)
	b.root.Store(&root)
	b.nextTenant()
	return nil
}

// nextTenant gives the inode numbers the next tenant reads (mask) an epoch
// of their own. The reset calls it, with the guest parked: numbers never
// change under a running tenant, nor between the turns of one runtime.
func (b *budget) nextTenant() { b.epoch.Add(1) }

// view is what a guest reads of a stat under the mount: the mount's own
// directory disguised, and every inode number masked.
func (b *budget) view(st *sys.Stat_t) {
	b.disguise(st)
	st.Ino = b.mask(st.Ino)
}

// mask turns a host inode number into the one this tenant reads: a keyed
// pseudorandom function (AES-128, truncated to 63 bits) of the number and
// the tenant's epoch. The host's numbers tell of its allocator — ext4
// hands out the lowest free inode, passing over recently deleted ones —
// which the last tenant, and tenants of other interpreters now, moved;
// masked, a tenant's numbers are consistent among themselves (a file reads
// the same by path, descriptor and directory listing; two files collide
// with odds of about n²/2⁶⁴) and unrelated to another tenant's. What
// stays: a file made where one was deleted in the same tenant reads the
// old number when the host reused the inode, as it would on the host.
// Zero (unknown) stays zero; the result fits a signed 64-bit integer.
func (b *budget) mask(ino uint64) uint64 {
	if ino == 0 {
		return 0
	}
	var block [aes.BlockSize]byte
	binary.LittleEndian.PutUint64(block[:8], ino)
	binary.LittleEndian.PutUint64(block[8:], b.epoch.Load())
	b.inoKey.Encrypt(block[:], block[:])
	return max(binary.LittleEndian.Uint64(block[:8])>>1, 1)
}

// disguise makes a guest's stat of the mount's own directory — by path,
// however spelled, or through a descriptor — read the change time it had
// when pinned. A reset cannot put that back: every change
// moves it, the reset's own included, so the real one would tell the next
// tenant when the last one last changed the mount. The change time shown
// is the pinned one, or the modification time when that is later (this
// tenant changed the directory: settle puts the modification time back for
// the next). Stats of anything else pass as they are.
func (b *budget) disguise(st *sys.Stat_t) {
	root := b.root.Load()
	if root == nil || st.Dev != root.Dev || st.Ino != root.Ino || st.Ino == 0 {
		return
	}
	st.Ctim = max(root.Ctim, st.Mtim)
}

// settle holds the mount's directory itself to what pin recorded, for the
// next tenant: a tenant can set its times (os.utime: chosen bits the next
// one's os.stat would read), which settle puts back, or remove it and make
// another at its path (the guest's preopened descriptor still names the
// removed one), which is an error: the interpreter must go. So is a
// directory that is larger than it was: an ext4 directory keeps the blocks
// its entries once grew it to (and, indexed, the index), so the next tenant
// would see in a stat that the last one filled it. On ext4 that is ~170
// entries with 16-character names in /work: a tenant that makes more costs
// the next caller a fresh interpreter, as one that grew its memory does.
// Its change time, which cannot be put back, a guest never reads
// (view).
func (b *budget) settle() error {
	info, err := os.Lstat(b.dir)
	if err != nil {
		return fmt.Errorf("%s: %w", b.name, err)
	}
	root, st := b.root.Load(), sys.NewStat_t(info)
	if root == nil || !info.IsDir() || st.Dev != root.Dev || st.Ino != root.Ino {
		return fmt.Errorf("%s is not the directory it was mounted as", b.name)
	}
	if st.Size != root.Size {
		return fmt.Errorf("%s grew from %d to %d bytes and stays so emptied", b.name, root.Size, st.Size)
	}
	if st.Mtim != root.Mtim || st.Atim != root.Atim {
		if err := os.Chtimes(b.dir, time.Unix(0, root.Atim), time.Unix(0, root.Mtim)); err != nil {
			return fmt.Errorf("put back the times of %s: %w", b.name, err)
		}
	}
	return nil
}

// reset forgets a crossing (the interpreter that crossed it is gone) and
// measures afresh.
func (b *budget) reset() {
	b.mu.Lock()
	b.over = false
	b.measureLocked()
	b.mu.Unlock()
}

// guardedFS is a writable directory mount that refuses to create symlinks
// and hard links — with them a guest could point into the host filesystem
// and read or write through the link — and admits every write and every
// new entry against the directory's budget.
type guardedFS struct {
	experimentalsys.FS
	b    *budget
	open *openFiles
}

func newGuardedFS(b *budget, open *openFiles) experimentalsys.FS {
	return &guardedFS{FS: sysfs.DirFS(b.dir), b: b, open: open}
}

// openFiles tracks the files a guest has open under /work and /out, so a
// reset can close what one tenant left open: a descriptor kept across the
// reset would let the next tenant read a file the reset deleted.
type openFiles struct {
	mu    sync.Mutex
	files map[*guardedFile]bool // true: open since before the snapshot (the mounts' own directories)
}

func (o *openFiles) add(f *guardedFile) {
	o.mu.Lock()
	if o.files == nil {
		o.files = map[*guardedFile]bool{}
	}
	o.files[f] = false
	o.mu.Unlock()
}

// keepOpen marks every file open now as the interpreter's own (the
// preopened mount directories): closeAll leaves them.
func (o *openFiles) keepOpen() {
	o.mu.Lock()
	for f := range o.files {
		o.files[f] = true
	}
	o.mu.Unlock()
}

func (o *openFiles) remove(f *guardedFile) {
	o.mu.Lock()
	delete(o.files, f)
	o.mu.Unlock()
}

// closeOpened closes every file opened since keepOpen (the guest's
// descriptors to them stop working).
func (o *openFiles) closeOpened() {
	o.mu.Lock()
	var opened []*guardedFile
	for f, kept := range o.files {
		if !kept {
			opened = append(opened, f)
			delete(o.files, f)
		}
	}
	o.mu.Unlock()
	for _, f := range opened {
		_ = f.closeFile()
	}
}

// Stat is the directory's Stat as a guest reads it (budget.view).
func (g *guardedFS) Stat(path string) (sys.Stat_t, experimentalsys.Errno) {
	st, errno := g.FS.Stat(path)
	if errno == 0 {
		g.b.view(&st)
	}
	return st, errno
}

// Lstat is the directory's Lstat as a guest reads it (budget.view).
func (g *guardedFS) Lstat(path string) (sys.Stat_t, experimentalsys.Errno) {
	st, errno := g.FS.Lstat(path)
	if errno == 0 {
		g.b.view(&st)
	}
	return st, errno
}

// Symlink is refused.
func (g *guardedFS) Symlink(oldPath, linkName string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// Link is refused.
func (g *guardedFS) Link(oldPath, newPath string) experimentalsys.Errno {
	return experimentalsys.EPERM
}

// Mkdir counts the new entry against the budget.
func (g *guardedFS) Mkdir(path string, perm fs.FileMode) experimentalsys.Errno {
	if !g.b.admit(0, 1) {
		budgetRefused()
	}
	defer g.b.touch()
	return g.FS.Mkdir(path, perm)
}

// Rename, Rmdir and Unlink change what the directory holds: the next
// measurement walks it.
func (g *guardedFS) Rename(from, to string) experimentalsys.Errno {
	g.b.touch()
	defer g.b.touch()
	return g.FS.Rename(from, to)
}

func (g *guardedFS) Rmdir(path string) experimentalsys.Errno {
	g.b.touch()
	defer g.b.touch()
	return g.FS.Rmdir(path)
}

func (g *guardedFS) Unlink(path string) experimentalsys.Errno {
	g.b.touch()
	defer g.b.touch()
	return g.FS.Unlink(path)
}

// OpenFile counts a possibly new entry against the budget and wraps the
// file so its growth is admitted too.
func (g *guardedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&experimentalsys.O_CREAT != 0 {
		// Only a file that does not exist yet is a new entry: rewriting one
		// at the entries cap is no crossing.
		if _, errno := g.FS.Lstat(path); errno != 0 && !g.b.admit(0, 1) {
			budgetRefused()
		}
	}
	if flag&(experimentalsys.O_CREAT|experimentalsys.O_TRUNC) != 0 {
		g.b.touch()
		defer g.b.touch()
	}
	f, errno := g.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		return f, errno
	}
	gf := &guardedFile{File: f, b: g.b, open: g.open, writable: flag&(experimentalsys.O_WRONLY|experimentalsys.O_RDWR) != 0}
	g.open.add(gf)
	return gf, 0
}

type guardedFile struct {
	experimentalsys.File
	b        *budget
	open     *openFiles
	writable bool // opened for writing (a directory never is)

	closeOnce sync.Once
	closeErr  experimentalsys.Errno
}

// Stat is the file's Stat as a guest reads it (budget.view). The budget's
// own reads of a file's size use the underlying File's Stat.
func (f *guardedFile) Stat() (sys.Stat_t, experimentalsys.Errno) {
	st, errno := f.File.Stat()
	if errno == 0 {
		f.b.view(&st)
	}
	return st, errno
}

// Ino is the file's inode number as a guest reads it (budget.mask): wazero
// lists a directory's "." with it.
func (f *guardedFile) Ino() (sys.Inode, experimentalsys.Errno) {
	ino, errno := f.File.Ino()
	if errno != 0 {
		return ino, errno
	}
	return f.b.mask(ino), 0
}

// Readdir lists the directory with each entry's inode number as a guest
// reads it (budget.mask), in a slice of its own.
func (f *guardedFile) Readdir(n int) ([]experimentalsys.Dirent, experimentalsys.Errno) {
	dirents, errno := f.File.Readdir(n)
	if len(dirents) == 0 {
		return dirents, errno
	}
	out := make([]experimentalsys.Dirent, len(dirents))
	for i, d := range dirents {
		d.Ino = f.b.mask(d.Ino) // lock-free: the epoch moves only while the guest is parked
		out[i] = d
	}
	return out, errno
}

// Close closes the file and stops tracking it.
func (f *guardedFile) Close() experimentalsys.Errno {
	f.open.remove(f)
	return f.closeFile()
}

// closeFile closes the underlying file once. A reset closes the guest's
// files from the recycling goroutine while a kill (the engine closing,
// say) can make wazero close the same files from the instance's own
// goroutine; the first close wins and the other waits for it.
func (f *guardedFile) closeFile() experimentalsys.Errno {
	f.closeOnce.Do(func() { f.closeErr = f.File.Close() })
	return f.closeErr
}

// notWritable is EBADF for a file not opened for writing — a directory
// never is — so a write or truncation through it fails as it would on the
// host, before it is measured against the budget: a pwrite far past such a
// file's end was counted as growth and could mark the budget over, ending
// the turn.
func (f *guardedFile) notWritable() experimentalsys.Errno {
	if !f.writable {
		return experimentalsys.EBADF
	}
	return 0
}

// Write admits the growth the write causes — none for an overwrite in
// place — against the budget.
func (f *guardedFile) Write(p []byte) (int, experimentalsys.Errno) {
	if errno := f.notWritable(); errno != 0 {
		return 0, errno
	}
	off := int64(-1)
	if f.File.IsAppend() {
		if st, errno := f.File.Stat(); errno == 0 {
			off = st.Size
		}
	} else if o, errno := f.File.Seek(0, io.SeekCurrent); errno == 0 {
		off = o
	}
	grow := int64(len(p))
	if off >= 0 {
		grow = f.growthAt(off, grow)
	}
	if !f.b.admit(grow, 0) {
		budgetRefused()
	}
	defer f.b.touch()
	return f.File.Write(p)
}

// Pwrite admits the growth the write causes, like Write.
func (f *guardedFile) Pwrite(p []byte, off int64) (int, experimentalsys.Errno) {
	if errno := f.notWritable(); errno != 0 {
		return 0, errno
	}
	if !f.b.admit(f.growthAt(off, int64(len(p))), 0) {
		budgetRefused()
	}
	defer f.b.touch()
	return f.File.Pwrite(p, off)
}

// growthAt is how much writing n bytes at off grows the file: past its end
// only. When the size cannot be read, every byte counts.
func (f *guardedFile) growthAt(off, n int64) int64 {
	st, errno := f.File.Stat()
	if errno != 0 {
		return n
	}
	return max(0, off+n-st.Size)
}

func (f *guardedFile) Truncate(size int64) experimentalsys.Errno {
	if errno := f.notWritable(); errno != 0 {
		return errno
	}
	grow := size
	if st, errno := f.File.Stat(); errno == 0 {
		grow = size - st.Size
	}
	if grow > 0 && !f.b.admit(grow, 0) {
		budgetRefused()
	}
	f.b.touch()
	defer f.b.touch()
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
func wipe(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("empty %s: %w", dir, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("empty %s: %w", dir, err)
		}
	}
	return nil
}
