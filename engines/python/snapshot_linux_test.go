package python

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newTestMemory maps a linear memory of limit bytes, grown to size, the way
// withLinearMemory does.
func newTestMemory(t *testing.T, limit, size int) *linearMemory {
	t.Helper()
	b, err := unix.Mmap(-1, 0, limit, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_NORESERVE)
	if err != nil {
		t.Fatal(err)
	}
	m := &linearMemory{capState: capState{max: uint64(limit)}, buf: b}
	if m.Reallocate(uint64(size)) == nil {
		t.Fatal("could not grow the memory")
	}
	t.Cleanup(m.Free)
	return m
}

// pageEntry reads the page table entry of page i of m.
func pageEntry(t *testing.T, m *linearMemory, i int) uint64 {
	t.Helper()
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY, 0)
	if err != nil {
		t.Skip("no /proc/self/pagemap here: ", err)
	}
	defer unix.Close(fd)
	var e [8]byte
	off := int64((uintptr(unsafe.Pointer(&m.buf[0]))/uintptr(pageSize) + uintptr(i)) * 8)
	if _, err := unix.Pread(fd, e[:], off); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(e[:])
}

// Restoring brings back every byte of the snapshot over several rounds of
// scattered writes — including pages written in an earlier round and not
// since, which restore copies again — zeroes what was grown past it, and
// (with the page table readable) leaves written pages mapped, so the next
// tenant writes to them without a fault. The fallback (re-mapping, used
// when the page table cannot be read) must give the same bytes.
func TestRestoreBringsBackEverySnapshotByte(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fallback bool
	}{{"page-table", false}, {"re-map", true}} {
		t.Run(tc.name, func(t *testing.T) {
			const pages = 512
			m := newTestMemory(t, 4*pages*pageSize, pages*pageSize)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < pages; i++ {
				if i%3 != 0 { // every third page stays zero: a hole in the snapshot file
					for j := 0; j < pageSize; j += 8 {
						binary.LittleEndian.PutUint64(m.buf[i*pageSize+j:], rng.Uint64())
					}
				}
			}
			want := bytes.Clone(m.buf[:pages*pageSize])
			if err := m.snapshot(); err != nil {
				t.Fatal(err)
			}
			if tc.fallback {
				_ = unix.Munmap(m.snapView)
				m.snapView = nil
			}
			for round := 0; round < 4; round++ {
				for k := 0; k < 60; k++ {
					p := rng.IntN(pages)
					m.buf[p*pageSize+rng.IntN(pageSize)] ^= 0xff
				}
				grown := m.Reallocate(uint64(2 * pages * pageSize))
				grown[pages*pageSize+round*pageSize+7] = 42
				if err := m.restore(); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(m.buf[:pages*pageSize], want) {
					t.Fatalf("round %d: the snapshot range differs from the snapshot after restore", round)
				}
				for i, c := range m.buf[pages*pageSize : 2*pages*pageSize] {
					if c != 0 {
						t.Fatalf("round %d: byte %d past the snapshot is %d after restore, want 0", round, i, c)
					}
				}
			}
			m.buf[5*pageSize] ^= 1
			_ = m.restore()
			e := pageEntry(t, m, 5)
			resident := e&pmPresent != 0 && e&pmFilePage == 0
			if resident == tc.fallback {
				t.Fatalf("a written page after restore: private and mapped = %v (entry %#x); want %v", resident, e, !tc.fallback)
			}
		})
	}
}
