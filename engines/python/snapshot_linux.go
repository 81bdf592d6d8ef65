package python

import (
	"errors"
	"fmt"
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
	m.snapFD, m.snapSize = fd, size
	return nil
}

// restore returns the memory to its snapshot: the snapshot's pages are
// mapped again (whatever the guest wrote to them since is dropped by the
// kernel, no copy), and pages the guest grew into are zeroed. The memory's
// length stays what it is (wasm memory never shrinks); the restored program
// knows nothing of the pages past the snapshot and grows into them again.
func (m *linearMemory) restore() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.freed {
		return errors.New("memory is freed")
	}
	if m.snapFD == 0 {
		return errors.New("memory has no snapshot")
	}
	if err := m.mapSnapshot(m.snapFD, m.snapSize); err != nil {
		return err
	}
	if cur := int(m.Size()); cur > m.snapSize {
		if err := unix.Madvise(m.buf[m.snapSize:cur], unix.MADV_DONTNEED); err != nil {
			return fmt.Errorf("madvise: %w", err)
		}
	}
	return nil
}

func (m *linearMemory) mapSnapshot(fd, size int) error {
	_, err := unix.MmapPtr(fd, 0, unsafe.Pointer(&m.buf[0]), uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_FIXED)
	if err != nil {
		return fmt.Errorf("map snapshot: %w", err)
	}
	return nil
}

func (m *linearMemory) closeSnapshot() {
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
