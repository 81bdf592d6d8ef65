package isolatehost

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
)

// selfMemory measures, from inside an isolate host, the memory its guest
// holds: the process's resident set less what the Go runtime has mapped.
// V8's heap and ArrayBuffer backing stores live outside the Go heap; the
// host's own copies of guest data (a result on its way out, a file being
// read) live inside it and are bounded by the host's own caps, so they do
// not count against the guest's.
type selfMemory struct {
	mu      sync.Mutex
	statm   *os.File
	buf     [256]byte
	samples []metrics.Sample
}

func newSelfMemory() *selfMemory {
	f, _ := os.Open("/proc/self/statm")
	return &selfMemory{statm: f, samples: []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}}
}

var pageKB = int64(os.Getpagesize() / 1024)

// guestKB returns the guest's share of the resident set, in KiB (0 when it
// cannot be read).
func (m *selfMemory) guestKB() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.statm == nil {
		return 0
	}
	n, _ := m.statm.ReadAt(m.buf[:], 0)
	fields := bytes.Fields(m.buf[:n])
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0
	}
	metrics.Read(m.samples)
	var goKB int64
	if m.samples[0].Value.Kind() == metrics.KindUint64 && m.samples[1].Value.Kind() == metrics.KindUint64 {
		goKB = int64(m.samples[0].Value.Uint64()-m.samples[1].Value.Uint64()) / 1024
	}
	kb := pages*pageKB - goKB
	if kb < 0 {
		kb = 0
	}
	return kb
}
