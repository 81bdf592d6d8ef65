//go:build unix

package python

import (
	"context"
	"sync"

	"github.com/tetratelabs/wazero/experimental"
	"golang.org/x/sys/unix"
)

// linearMemory backs one interpreter's wasm linear memory with an anonymous
// mapping reserved at the cap up front. Growing only extends the slice over
// pages the kernel already reserved (they cost nothing until touched), so
// growth never reallocates and copies — with Go slices a 128 MiB
// interpreter briefly needed several times that in the worker while the
// garbage collector caught up — and Free unmaps at once, so the memory of a
// disposed interpreter goes back to the system immediately instead of when
// the collector gets to it.
type linearMemory struct {
	capState
	buf []byte

	// mu orders Free (the instance closing, on its own goroutine) with
	// snapshot and restore (the host, while the instance is parked): once
	// the mapping is gone nothing may be mapped at its address again.
	mu       sync.Mutex
	freed    bool
	snapFD   int // the snapshot's memory file (0: none)
	snapSize int
	snapView []byte       // the snapshot file mapped read-only (nil: restore re-maps)
	pagemap  []byte       // scratch for the page table entries restore reads
	regions  []pageRegion // scratch for PAGEMAP_SCAN's answer
	noScan   bool         // the kernel refused PAGEMAP_SCAN once: read the page table entry by entry
}

// maxPopulate bounds what one growth faults in at once: 32 MiB takes ~5 ms
// here (a 512 MiB growth took 75 ms, in one system call a kill cannot
// interrupt; faulting page by page, the guest stays killable between
// faults). Growth past it faults in as the guest writes it.
const maxPopulate = 32 << 20

// pageRegion is Linux's struct page_region, PAGEMAP_SCAN's answer: one run
// of pages [start, end) with the same reported categories.
type pageRegion struct{ start, end, categories uint64 }

// Reallocate implements experimental.LinearMemory.
func (m *linearMemory) Reallocate(size uint64) []byte {
	prev := m.Size()
	if !m.admit(size) || size > uint64(len(m.buf)) {
		return nil
	}
	// The module's initial memory (wazero's first call, from 0) is left to
	// fault in as used: much of it is stack and static space never written.
	// Growth after that is the guest asking for memory to use (CPython
	// zeroes what it allocates): fault the new pages in now, in one call,
	// instead of one fault each as the guest first writes them — at most
	// maxPopulate of them, as the call cannot be interrupted by a kill.
	if prev > 0 && size > prev {
		populate(m.buf[prev:min(size, prev+maxPopulate)])
	}
	return m.buf[:size]
}

// Free implements experimental.LinearMemory.
func (m *linearMemory) Free() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.freed = true
	m.closeSnapshot()
	if m.buf != nil {
		_ = unix.Munmap(m.buf)
		m.buf = nil
	}
}

// withLinearMemory returns ctx with an allocator that reserves limit bytes
// (the instance's cap) as an anonymous mapping, refuses growth past it, and
// records the memory in slot.
func withLinearMemory(ctx context.Context, slot *memorySlot, limit uint64) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		if max < limit {
			limit = max
		}
		var m sizedMemory
		if b, err := unix.Mmap(-1, 0, int(limit), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE); err == nil && limit > 0 {
			m = &linearMemory{capState: capState{max: limit}, buf: b}
		} else {
			m = &sliceMemory{capState: capState{max: limit}, buf: make([]byte, 0, capacity)}
		}
		slot.mem.Store(&m)
		return m
	}))
}
