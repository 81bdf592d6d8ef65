package python

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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
// tenant writes to them without a fault — whether the written pages are
// found by the kernel's scan or by reading an entry per page. The fallback
// (re-mapping, used when the page table cannot be read) must give the same
// bytes.
func TestRestoreBringsBackEverySnapshotByte(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fallback bool
		noScan   bool
	}{{"page-table-scan", false, false}, {"page-table-read", false, true}, {"re-map", true, false}} {
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
			m.noScan = tc.noScan
			for round := 0; round < 4; round++ {
				for k := 0; k < 60; k++ {
					p := rng.IntN(pages)
					m.buf[p*pageSize+rng.IntN(pageSize)] ^= 0xff
				}
				grown := m.Reallocate(uint64(2 * pages * pageSize))
				grown[pages*pageSize+round*pageSize+7] = 42
				if err := m.restore(-1); err != nil {
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
			_ = m.restore(-1)
			e := pageEntry(t, m, 5)
			resident := e&pmPresent != 0 && e&pmFilePage == 0
			if resident == tc.fallback {
				t.Fatalf("a written page after restore: private and mapped = %v (entry %#x); want %v", resident, e, !tc.fallback)
			}
		})
	}
}

// The kernel's scan (PAGEMAP_SCAN) and the entry-by-entry read find the
// same runs of written pages — single pages, adjacent ones merged into one
// run, the first and last page of the snapshot — also when the scan's
// answer does not fit its buffer and the walk goes on where it stopped.
func TestScanAndReadFindTheSameWrittenPages(t *testing.T) {
	const pages = 300
	m := newTestMemory(t, 2*pages*pageSize, pages*pageSize)
	for i := 0; i < pages; i += 2 {
		m.buf[i*pageSize] = byte(i)
	}
	if err := m.snapshot(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	written := []int{0, 1, 2, 7, pages - 1}
	for k := 0; k < 40; k++ {
		written = append(written, rng.IntN(pages))
	}
	for _, p := range written {
		m.buf[p*pageSize+rng.IntN(pageSize)] ^= 0x5a
	}
	fd, err := unix.Open("/proc/self/pagemap", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Skip("skipped because /proc/self/pagemap cannot be opened here: ", err)
	}
	defer unix.Close(fd)
	type run struct{ start, end int }
	collect := func(find func(int, func(int, int)) error) []run {
		var out []run
		if err := find(fd, func(s, e int) { out = append(out, run{s, e}) }); err != nil {
			if errors.Is(err, unix.ENOTTY) {
				t.Skip("skipped because this kernel has no PAGEMAP_SCAN (Linux < 6.7): ", err)
			}
			t.Fatal(err)
		}
		return out
	}
	read := collect(m.readWritten)
	want := map[int]bool{}
	for _, p := range written {
		want[p] = true
	}
	got := map[int]bool{}
	for _, r := range read {
		for p := r.start / pageSize; p < r.end/pageSize; p++ {
			got[p] = true
		}
	}
	if len(got) != len(want) {
		t.Fatalf("the page table read found %d written pages, want %d", len(got), len(want))
	}
	for p := range want {
		if !got[p] {
			t.Fatalf("the page table read missed written page %d", p)
		}
	}
	for _, size := range []int{256, 3, 1} {
		m.regions = make([]pageRegion, size)
		if scanned := collect(m.scanWritten); !slices.Equal(scanned, read) {
			t.Fatalf("with room for %d runs, the scan found %v; the read %v", size, scanned, read)
		}
	}
}

// Growing the memory faults the new pages in at once (the guest is about to
// write them: CPython zeroes what it allocates), not one fault per page as
// the guest first touches each — up to a bound, past which a growth is left
// to fault in as written.
func TestGrowthFaultsTheNewPagesIn(t *testing.T) {
	probe, err := unix.Mmap(-1, 0, pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Madvise(probe, unix.MADV_POPULATE_WRITE)
	_ = unix.Munmap(probe)
	if err != nil {
		t.Skip("skipped because this kernel has no MADV_POPULATE_WRITE (Linux < 5.14): ", err)
	}
	const pages = 64
	m := newTestMemory(t, 4*pages*pageSize, pages*pageSize)
	if m.Reallocate(uint64(3*pages*pageSize)) == nil {
		t.Fatal("could not grow the memory")
	}
	for _, p := range []int{pages, 2 * pages, 3*pages - 1} {
		if e := pageEntry(t, m, p); e&pmPresent == 0 {
			t.Fatalf("page %d of the grown range is not resident before it was touched (entry %#x)", p, e)
		}
	}
	if e := pageEntry(t, m, 3*pages); e&pmPresent != 0 {
		t.Fatalf("the page past the grown size is resident (entry %#x)", e)
	}
	// One growth faults in at most maxPopulate (a kill cannot interrupt the
	// call); the rest is left to fault in as written.
	big := newTestMemory(t, 3*maxPopulate, pageSize)
	if big.Reallocate(2*maxPopulate) == nil {
		t.Fatal("could not grow the memory")
	}
	last := maxPopulate/pageSize - 1 // the last page of the first maxPopulate bytes grown
	if e := pageEntry(t, big, 1+last); e&pmPresent == 0 {
		t.Fatalf("page %d, within the first maxPopulate bytes grown, is not resident (entry %#x)", 1+last, e)
	}
	if e := pageEntry(t, big, 1+last+1); e&pmPresent != 0 {
		t.Fatalf("page %d, past the first maxPopulate bytes grown, is resident (entry %#x)", 1+last+1, e)
	}
}

// privatePages counts the pages of m's first n that are private copies
// (written since the snapshot was mapped).
func privatePages(t *testing.T, m *linearMemory, n int) int {
	t.Helper()
	private := 0
	for i := 0; i < n; i++ {
		if e := pageEntry(t, m, i); e&pmPresent != 0 && e&pmFilePage == 0 {
			private++
		}
	}
	return private
}

// Written pages past maxCopied are not copied back but re-mapped, so none
// stays private: copied back, they would be copied again at every later
// reset, for every later tenant of the interpreter. That holds for one
// heavy turn, for two in a row, and for a private set grown a little each
// turn; turns under the bound are copied as before. Every reset brings
// back every byte.
func TestWrittenPagesPastTheBoundLeaveNoneBehind(t *testing.T) {
	const pages = 1024
	m := newTestMemory(t, 2*pages*pageSize, pages*pageSize)
	for i := 0; i < pages; i++ {
		m.buf[i*pageSize] = byte(i)
	}
	want := bytes.Clone(m.buf[:pages*pageSize])
	if err := m.snapshot(); err != nil {
		t.Fatal(err)
	}
	touch := func(first, n int) {
		for i := first; i < first+n; i++ {
			m.buf[i*pageSize+1] ^= 0x5a
		}
	}
	bound := maxCopied / pageSize
	heavy := bound + 64
	creep := bound / 4
	type step struct {
		name         string
		first, n     int
		privateAfter int // -1: any count up to the bound
	}
	steps := []step{
		{"light", 0, 10, 10},
		{"heavy after light: re-mapped", 100, heavy, 0},
		{"light after heavy: copied", 0, 10, 10},
		{"heavy again: re-mapped", 100, heavy, 0},
		{"as heavy as the last: re-mapped too", 100, heavy, 0},
	}
	// A private set grown a quarter of the bound at a time stays under it.
	for k := 0; k < 6; k++ {
		steps = append(steps, step{fmt.Sprintf("creeping %d", k), 10 + k*creep, creep, -1})
	}
	for _, st := range steps {
		touch(st.first, st.n)
		if err := m.restore(-1); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(m.buf[:pages*pageSize], want) {
			t.Fatalf("%s: the memory differs from the snapshot after restore", st.name)
		}
		p := privatePages(t, m, pages)
		if st.privateAfter >= 0 && p != st.privateAfter || p > bound {
			t.Fatalf("%s: %d private pages after restore (the bound is %d)", st.name, p, bound)
		}
	}
}
