//go:build !unix

package python

import (
	"context"

	"github.com/tetratelabs/wazero/experimental"
)

// withLinearMemory returns ctx with an allocator that backs the memory with
// a Go slice, refuses growth past limit bytes, and records it in slot.
func withLinearMemory(ctx context.Context, slot *memorySlot, limit uint64) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(func(capacity, max uint64) experimental.LinearMemory {
		if max < limit {
			limit = max
		}
		var m sizedMemory = &sliceMemory{capState: capState{max: limit}, buf: make([]byte, 0, capacity)}
		slot.mem.Store(&m)
		return m
	}))
}
