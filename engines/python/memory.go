package python

import (
	"sync/atomic"

	"github.com/tetratelabs/wazero/experimental"
)

// capState is what every linear memory records: its size, and whether a
// growth past the cap was denied.
type capState struct {
	max    uint64
	size   atomic.Uint64
	denied atomic.Bool
}

// admit records a growth to size and reports whether it fits the cap.
func (c *capState) admit(size uint64) bool {
	if size > c.max {
		c.denied.Store(true)
		return false
	}
	c.size.Store(size)
	return true
}

// Size is the memory's current length in bytes.
func (c *capState) Size() uint64 { return c.size.Load() }

// Denied reports whether a growth past the cap was refused.
func (c *capState) Denied() bool { return c.denied.Load() }

// ResetDenied forgets a refusal.
func (c *capState) ResetDenied() { c.denied.Store(false) }

// sliceMemory backs a linear memory with a Go slice: the fallback where an
// anonymous mapping cannot be had.
type sliceMemory struct {
	capState
	buf []byte
}

// Reallocate implements experimental.LinearMemory.
func (m *sliceMemory) Reallocate(size uint64) []byte {
	if !m.admit(size) {
		return nil
	}
	if size > uint64(cap(m.buf)) {
		nb := make([]byte, size, size)
		copy(nb, m.buf)
		m.buf = nb
	}
	m.buf = m.buf[:size]
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *sliceMemory) Free() { m.buf = nil }

// sizedMemory is a linear memory that reports its size and denials.
type sizedMemory interface {
	experimental.LinearMemory
	Size() uint64
	Denied() bool
	ResetDenied()
}

// memorySlot receives the linear memory an instantiation allocates.
type memorySlot struct{ mem atomic.Pointer[sizedMemory] }
