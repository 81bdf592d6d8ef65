package python

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// snapshot records the memory's current contents as the state Restore
// returns it to: the bytes go into an anonymous memory file and the
// memory's first pages are re-mapped, copy-on-write, from that file. It may
// be called once, while the instance is parked (no guest code running).
func (m *linearMemory) snapshot() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return errors.New("memory is freed")
	}
	if m.snapFD != 0 {
		return errors.New("memory already has a snapshot")
	}
	size := int(m.Size())
	if size == 0 || size%pageSize != 0 {
		return fmt.Errorf("cannot snapshot a memory of %d bytes", size)
	}
	fd, err := unix.MemfdCreate("code-runner-python-snapshot", unix.MFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("memfd: %w", err)
	}
	if err := writeSparse(fd, m.buf[:size]); err != nil {
		_ = unix.Close(fd)
		return err
	}
	if err := m.mapSnapshot(fd, size); err != nil {
		_ = unix.Close(fd)
		return err
	}
	if view, err := unix.Mmap(fd, 0, size, unix.PROT_READ, unix.MAP_SHARED); err == nil {
		m.snapView = view // without it, restore re-maps (slower, as correct)
	}
	m.snapFD, m.snapSize = fd, size
	return nil
}

// restore returns the memory to its snapshot, and zeroes pages the guest
// grew into past it. The memory's length stays what it is (wasm memory
// never shrinks); the restored program knows nothing of the pages past the
// snapshot and grows into them again.
//
// Pages the guest wrote are private copies of the snapshot file's pages.
// restore finds them in the kernel's page table (/proc/self/pagemap: a
// present or swapped page that is not a file page) and copies the
// snapshot's bytes back over them, so they stay mapped and the next tenant
// writes to them without a fault. Re-mapping the snapshot instead (the
// fallback, when the page table cannot be read) drops them: every page the
// next turn writes is then copied on write again, and on these VMs each such
// fault costs a TLB shootdown across CPUs — measured at half the worker's
// CPU per python one-shot.
//
// When the written pages pass maxCopied the snapshot is re-mapped instead,
// so they do not stay private and copied at every later reset
// (rewriteWritten).
//
// pagemapFD is an open /proc/self/pagemap (Engine.pagemap), or -1 to open
// one for this call.
func (m *linearMemory) restore(pagemapFD int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return errors.New("memory is freed")
	}
	if m.snapFD == 0 {
		return errors.New("memory has no snapshot")
	}
	if err := m.rewriteWritten(pagemapFD); err != nil {
		if err := m.mapSnapshot(m.snapFD, m.snapSize); err != nil {
			return err
		}
	}
	if cur := int(m.Size()); cur > m.snapSize {
		if err := unix.Madvise(m.buf[m.snapSize:cur], unix.MADV_DONTNEED); err != nil {
			return fmt.Errorf("madvise: %w", err)
		}
	}
	return nil
}

// Page table entry bits (Documentation/admin-guide/mm/pagemap.rst); the
// flags are readable without privileges.
const (
	pmPresent  = 1 << 63
	pmSwapped  = 1 << 62
	pmFilePage = 1 << 61
)

// rewriteWritten copies the snapshot back over every page of the snapshot
// range that is a private copy (written since it was mapped), reading the
// page table through fd (-1: open /proc/self/pagemap for this call).
func (m *linearMemory) rewriteWritten(fd int) error {
	if m.snapView == nil {
		return errors.New("no snapshot view")
	}
	if fd < 0 {
		var err error
		if fd, err = openPagemap(); err != nil {
			return err
		}
		defer unix.Close(fd)
	}
	// Runs are copied as they are found, until they pass maxCopied; past it
	// the re-map below restores everything, the copies made so far included.
	written := 0
	if err := m.eachWritten(fd, func(start, end int) {
		if written += end - start; written <= maxCopied {
			copy(m.buf[start:end], m.snapView[start:end])
		}
	}); err != nil {
		return err
	}
	if written > maxCopied {
		// Pages copied back stay private, and every later reset copies them
		// again, written or not: a tenant that touched megabytes (in one
		// turn or a little more each turn) would leave that cost to every
		// later tenant of the interpreter. Past the bound, re-mapping drops
		// them all; the next turn faults in what it writes, once.
		return m.mapSnapshot(m.snapFD, m.snapSize)
	}
	return nil
}

// maxCopied bounds the written pages a reset copies back: over it the
// snapshot is re-mapped instead. A one-shot of `result = 2+2` leaves
// ~460 KiB written (the union over the interpreter's life: a page once
// written stays private); copying 2 MiB takes ~0.15 ms here.
const maxCopied = 2 << 20

// eachWritten calls fn with the byte range of every run of written pages
// in the snapshot range, in order, from the page table behind fd (an open
// /proc/self/pagemap). It asks the kernel for the runs themselves
// (PAGEMAP_SCAN, Linux 6.7) and, where that is refused, reads one entry
// per page and finds them itself.
func (m *linearMemory) eachWritten(fd int, fn func(start, end int)) error {
	if !m.noScan {
		err := m.scanWritten(fd, fn)
		if !errors.Is(err, unix.ENOTTY) && !errors.Is(err, unix.EINVAL) {
			return err
		}
		m.noScan = true
	}
	return m.readWritten(fd, fn)
}

// PAGEMAP_SCAN (include/uapi/linux/fs.h): _IOWR('f', 16, struct
// pm_scan_arg), and the page categories it filters and reports on.
const (
	pagemapScan   = 0xc0606610
	pageIsFile    = 1 << 2
	pageIsPresent = 1 << 3
	pageIsSwapped = 1 << 4
)

// pmScanArg is struct pm_scan_arg.
type pmScanArg struct {
	size, flags, start, end, walkEnd, vec, vecLen, maxPages       uint64
	categoryInverted, categoryMask, categoryAnyofMask, returnMask uint64
}

// scanWritten is eachWritten by PAGEMAP_SCAN: runs of pages that are not
// file pages and are present or swapped. Nothing is reported back but "not
// a file page", so adjacent written pages come back as one run.
func (m *linearMemory) scanWritten(fd int, fn func(start, end int)) error {
	if len(m.regions) == 0 {
		m.regions = make([]pageRegion, 256)
	}
	base := uint64(uintptr(unsafe.Pointer(&m.buf[0])))
	end := base + uint64(m.snapSize)
	for start := base; start < end; {
		arg := pmScanArg{
			start: start, end: end,
			vec: uint64(uintptr(unsafe.Pointer(&m.regions[0]))), vecLen: uint64(len(m.regions)),
			categoryInverted: pageIsFile, categoryMask: pageIsFile,
			categoryAnyofMask: pageIsPresent | pageIsSwapped, returnMask: pageIsFile,
		}
		arg.size = uint64(unsafe.Sizeof(arg))
		n, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), pagemapScan, uintptr(unsafe.Pointer(&arg)))
		if errno != 0 {
			return fmt.Errorf("pagemap scan: %w", errno)
		}
		for _, r := range m.regions[:n] {
			if r.start < start || r.end > end || r.start >= r.end {
				return fmt.Errorf("pagemap scan: region %#x-%#x outside %#x-%#x", r.start, r.end, start, end)
			}
			fn(int(r.start-base), int(r.end-base))
		}
		if arg.walkEnd <= start {
			return fmt.Errorf("pagemap scan: the walk made no progress at %#x", start)
		}
		start = arg.walkEnd
	}
	return nil
}

// readWritten is eachWritten from one page table entry per page (8 bytes
// each, read in one go).
func (m *linearMemory) readWritten(fd int, fn func(start, end int)) error {
	pages := m.snapSize / pageSize
	if len(m.pagemap) != pages*8 {
		m.pagemap = make([]byte, pages*8)
	}
	off := int64(uintptr(unsafe.Pointer(&m.buf[0])) / uintptr(pageSize) * 8)
	for done := 0; done < len(m.pagemap); {
		n, err := unix.Pread(fd, m.pagemap[done:], off+int64(done))
		if err != nil || n <= 0 {
			return fmt.Errorf("pagemap read: %v (%d bytes)", err, n)
		}
		done += n
	}
	start := -1 // first page of the current run of written pages
	for i := 0; i <= pages; i++ {
		written := false
		if i < pages {
			e := binary.LittleEndian.Uint64(m.pagemap[i*8:])
			written = e&(pmPresent|pmSwapped) != 0 && e&pmFilePage == 0
		}
		switch {
		case written && start < 0:
			start = i
		case !written && start >= 0:
			fn(start*pageSize, i*pageSize)
			start = -1
		}
	}
	return nil
}

// populate faults b's pages in, writable, in one call (Linux 5.14's
// MADV_POPULATE_WRITE): ~2 µs per page less than taking the faults one at a
// time on these VMs. Where the kernel refuses, the pages fault in as they
// are written, as before.
func populate(b []byte) {
	if len(b) > 0 {
		_ = unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	}
}

func (m *linearMemory) mapSnapshot(fd, size int) error {
	_, err := unix.MmapPtr(fd, 0, unsafe.Pointer(&m.buf[0]), uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("map snapshot: %w", err)
	}
	return nil
}

func (m *linearMemory) closeSnapshot() {
	if m.snapView != nil {
		_ = unix.Munmap(m.snapView)
		m.snapView = nil
	}
	if m.snapFD != 0 {
		_ = unix.Close(m.snapFD)
		m.snapFD = 0
	}
}

// writeSparse writes b to the file fd, leaving its all-zero pages as holes
// (they read back as zeros and cost no memory).
func writeSparse(fd int, b []byte) error {
	if err := unix.Ftruncate(fd, int64(len(b))); err != nil {
		return fmt.Errorf("size snapshot: %w", err)
	}
	for off := 0; off < len(b); off += pageSize {
		page := b[off:min(off+pageSize, len(b))]
		if allZero(page) {
			continue
		}
		for done := 0; done < len(page); {
			n, err := unix.Pwrite(fd, page[done:], int64(off+done))
			if err != nil {
				return fmt.Errorf("write snapshot: %w", err)
			}
			done += n
		}
	}
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if *(*uint64)(unsafe.Pointer(&b[0])) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

var pageSize = unix.Getpagesize()

// snapshotSize is the memory's length when it was snapshotted (0: none).
func (m *linearMemory) snapshotSize() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.snapSize
}

// openPagemap opens this process's page table for reading.
func openPagemap() (int, error) {
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("pagemap: %w", err)
	}
	return fd, nil
}

// pagemapFile is the engine's one open /proc/self/pagemap, opened at the
// first reset: opening it for every reset was ~1.6 % of a python
// one-shot's worker CPU under load. Reads of it are positioned (pread, or
// the PAGEMAP_SCAN ioctl), so every reset can share it. Close closes it
// once every interpreter is gone (a reset after that finds its interpreter
// dead before it restores anything, and get answers -1).
type pagemapFile struct {
	mu             sync.Mutex
	fd             int
	opened, closed bool
}

// get returns the open descriptor, or -1 when it could not be opened or
// was closed (a restore then opens its own, or falls back to re-mapping).
func (p *pagemapFile) get() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return -1
	}
	if !p.opened {
		p.opened = true
		fd, err := openPagemap()
		if err != nil {
			fd = -1
		}
		p.fd = fd
	}
	return p.fd
}

// close closes the descriptor if it was opened.
func (p *pagemapFile) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.opened && p.fd >= 0 {
		_ = unix.Close(p.fd)
	}
	p.closed, p.fd = true, -1
}
