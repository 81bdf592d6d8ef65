package python

import (
	"io"
	"io/fs"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/sys"
)

// Host calls a guest can make between two ticks: writes to stdout and
// stderr, reads and writes of its files, clocks and randomness. A kill
// reaches a computing guest at its next tick (tick.go), but one host call
// can move hundreds of megabytes, and a loop of them reaches a tick only
// every few hundred iterations. So every such call passes the interpreter's
// hostGate: after a kill it ends the instance at once, as the stdin reader
// does; large buffers move in chunks of hostChunk, each a kill check; and
// every hostTickBytes moved count as a tick (a yield of the P).
const (
	hostChunk     = 1 << 20
	hostTickBytes = 4 << 20
)

// hostGate is one interpreter's check on its host calls.
type hostGate struct {
	killed <-chan struct{}
	moved  atomic.Int64
}

// check ends the instance when the interpreter was killed: the panic
// unwinds the host call and wazero returns it from the guest's _start, as
// proc_exit does.
func (g *hostGate) check() {
	select {
	case <-g.killed:
		panic(sys.NewExitError(sys.ExitCodeContextCanceled))
	default:
	}
}

// account counts n bytes a host call moved: every hostTickBytes of them do
// what a tick does (yield the P), and a kill ends the instance.
func (g *hostGate) account(n int) {
	if g.moved.Add(int64(n)) >= hostTickBytes {
		g.moved.Store(0)
		runtime.Gosched()
	}
	g.check()
}

// chunks runs fn over p in pieces of at most hostChunk bytes, with a kill
// check before each, and returns the bytes fn took in all.
func (g *hostGate) chunks(p []byte, fn func([]byte) (int, experimentalsys.Errno)) (int, experimentalsys.Errno) {
	g.check()
	total := 0
	for len(p) > 0 {
		c := p[:min(len(p), hostChunk)]
		n, errno := fn(c)
		total += n
		g.account(n)
		if errno != 0 || n < len(c) {
			return total, errno
		}
		p = p[n:]
	}
	return total, 0
}

// walltime and nanotime are the guest's clocks, checked like every host call.
func (g *hostGate) walltime() (int64, int32) {
	g.check()
	t := time.Now()
	return t.Unix(), int32(t.Nanosecond())
}

func (g *hostGate) nanotime(start time.Time) func() int64 {
	return func() int64 {
		g.check()
		return int64(time.Since(start))
	}
}

// gatedReader is the guest's randomness: reads pass the gate and move at
// most hostChunk bytes each (random_get reads until it has what it asked).
type gatedReader struct {
	g *hostGate
	r io.Reader
}

func (r gatedReader) Read(p []byte) (int, error) {
	r.g.check()
	n, err := r.r.Read(p[:min(len(p), hostChunk)])
	r.g.account(n)
	return n, err
}

// maxOpenFiles bounds the files and directories one interpreter holds open
// at once across all its mounts, so a turn that opens without closing
// cannot take a million descriptors (each of /work's is a host descriptor
// of the worker's). An open past it fails with EAGAIN ("Resource
// temporarily unavailable": wazero's errno set has no EMFILE).
const maxOpenFiles = 1024

// fileLimit counts open files against a maximum: one interpreter's
// (maxOpenFiles), or all interpreters' together (workerOpenFiles, so
// tenants together cannot take the worker's own descriptors).
type fileLimit struct {
	n   atomic.Int32
	max int32
}

// take counts one more open file, or reports false (counting nothing)
// when that would pass the maximum.
func (l *fileLimit) take() bool {
	if l.n.Add(1) > l.max {
		l.n.Add(-1)
		return false
	}
	return true
}

func (l *fileLimit) give() { l.n.Add(-1) }

// limitedFS is a mount whose opens count against the interpreter's limit
// and the worker's, and pass the interpreter's gate.
type limitedFS struct {
	experimentalsys.FS
	limit  *fileLimit // the interpreter's
	worker *fileLimit // every interpreter's together
	gate   *hostGate
}

func (l *limitedFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	l.gate.check()
	if !l.limit.take() {
		return nil, experimentalsys.EAGAIN
	}
	if !l.worker.take() {
		l.limit.give()
		return nil, experimentalsys.EAGAIN
	}
	f, errno := l.FS.OpenFile(path, flag, perm)
	if errno != 0 {
		l.limit.give()
		l.worker.give()
		return nil, errno
	}
	return &limitedFile{File: f, fs: l}, 0
}

// limitedFile gives its slots back once, when it is closed; its reads and
// writes pass the gate in chunks.
type limitedFile struct {
	experimentalsys.File
	fs   *limitedFS
	once sync.Once
}

func (f *limitedFile) Close() experimentalsys.Errno {
	errno := f.File.Close()
	f.once.Do(func() {
		f.fs.limit.give()
		f.fs.worker.give()
	})
	return errno
}

// Sync and Datasync do nothing: the guest's directories are thrown away
// with the runtime, and a flush of hundreds of megabytes cannot be
// interrupted by a kill.
func (f *limitedFile) Sync() experimentalsys.Errno { f.fs.gate.check(); return 0 }

// Datasync: see Sync.
func (f *limitedFile) Datasync() experimentalsys.Errno { f.fs.gate.check(); return 0 }

func (f *limitedFile) Read(p []byte) (int, experimentalsys.Errno) {
	return f.fs.gate.chunks(p, f.File.Read)
}

func (f *limitedFile) Pread(p []byte, off int64) (int, experimentalsys.Errno) {
	return f.fs.gate.chunks(p, atOffset(f.File.Pread, off))
}

// atOffset turns a positional read or write into one over consecutive
// pieces starting at off.
func atOffset(fn func([]byte, int64) (int, experimentalsys.Errno), off int64) func([]byte) (int, experimentalsys.Errno) {
	return func(c []byte) (int, experimentalsys.Errno) {
		n, errno := fn(c, off)
		off += int64(n)
		return n, errno
	}
}

func (f *limitedFile) Write(p []byte) (int, experimentalsys.Errno) {
	return f.fs.gate.chunks(p, f.File.Write)
}

func (f *limitedFile) Pwrite(p []byte, off int64) (int, experimentalsys.Errno) {
	return f.fs.gate.chunks(p, atOffset(f.File.Pwrite, off))
}
