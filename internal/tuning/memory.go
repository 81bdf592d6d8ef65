package tuning

import (
	"runtime/debug"
	"sync"
	"time"
)

// ReturnDelay is how long after a disposal the freed memory is returned to
// the system: long enough for a burst of teardowns to coalesce into one
// collection.
const ReturnDelay = 2 * time.Second

// MemoryReturner returns freed Go heap to the system a little after memory
// was released (an interpreter disposed of). Go's background scavenger
// would give it back only minutes later (50 torn-down python runtimes left
// ~50 MiB resident a minute after); one debug.FreeOSMemory per burst brings
// it back at once. The zero value is ready; Stop ends it.
type MemoryReturner struct {
	// Free returns the memory (nil: debug.FreeOSMemory); set it before the
	// first Soon. Tests count calls instead.
	Free func()

	mu      sync.Mutex
	pending bool
	stopped bool
	delay   time.Duration // 0: ReturnDelay
}

// Soon schedules one return ReturnDelay from now, unless one is already
// scheduled or the returner was stopped.
func (m *MemoryReturner) Soon() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending || m.stopped {
		return
	}
	m.pending = true
	delay, free := m.delay, m.Free
	if delay == 0 {
		delay = ReturnDelay
	}
	if free == nil {
		free = debug.FreeOSMemory
	}
	time.AfterFunc(delay, func() {
		m.mu.Lock()
		m.pending = false
		stopped := m.stopped
		m.mu.Unlock()
		if !stopped {
			free()
		}
	})
}

// Stop makes later calls of Soon do nothing (a pending return still may
// have begun).
func (m *MemoryReturner) Stop() {
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
}
