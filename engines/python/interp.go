package python

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing/fstest"
	"time"

	"github.com/code-runner-go/code-runner/internal/jsonx"

	_ "embed"

	"github.com/google/uuid"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/sys"
)

//go:embed main.py
var wrapperSource []byte

var interpSeq atomic.Int64

// interp is one CPython instance parked in the wrapper's turn loop.
type interp struct {
	name     string
	wr       *wasmRuntime
	cancel   context.CancelFunc
	stdinW   *io.PipeWriter
	stdinMu  sync.Mutex
	stdin    *stdinReader
	stdout   *stdoutScanner
	stderr   *stderrWriter
	events   chan []byte
	done     chan struct{}
	exitErr  error
	outDir   string
	workDir  string
	memPages uint32
}

// bootInterp instantiates the wrapper with workDir mounted at /work and
// waits for it to park before its first turn.
func (e *Engine) bootInterp(ctx context.Context, memMB int64, workDir string) (*interp, error) {
	wr, err := e.runtimeFor(ctx, memMB)
	if err != nil {
		return nil, err
	}
	outDir, err := os.MkdirTemp(e.tempRoot(), "iii-python-out-")
	if err != nil {
		return nil, fmt.Errorf("create /out: %w", err)
	}
	sentinel := uuid.NewString()
	iiiJSON, _ := jsonx.Marshal(map[string]any{"sentinel": sentinel, "persistent": true})
	runFS := fstest.MapFS{
		"main.py":  &fstest.MapFile{Data: wrapperSource, Mode: 0o444},
		"iii.json": &fstest.MapFile{Data: iiiJSON, Mode: 0o444},
	}
	fsc := wazero.NewFSConfig().WithFSMount(runFS, "/run")
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(newGuardedFS(outDir, outMaxBytes), "/out")
	fsc = fsc.(sysfs.FSConfig).WithSysFSMount(newGuardedFS(workDir, workMaxBytes), "/work")

	pr, pw := io.Pipe()
	events := make(chan []byte, 16)
	ip := &interp{name: "py-" + strconv.FormatInt(interpSeq.Add(1), 10), wr: wr, stdinW: pw, events: events,
		stdin: &stdinReader{r: pr, reading: make(chan struct{}, 1)},
		done:  make(chan struct{}), outDir: outDir, workDir: workDir, memPages: uint32(memMB * 16)}
	ip.stdout = newStdoutScanner(sentinel, events)
	ip.stderr = &stderrWriter{}
	cfg := wazero.NewModuleConfig().
		WithName(ip.name).
		WithArgs("python", "-I", "-B", "/run/main.py", "/run", "/out").
		WithStdin(ip.stdin).WithStdout(ip.stdout).WithStderr(ip.stderr).
		WithFSConfig(fsc).
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader)
	runCtx, cancel := context.WithCancel(context.Background())
	ip.cancel = cancel
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		cancel()
		_ = os.RemoveAll(outDir)
		return nil, errors.New("python engine is closed")
	}
	e.live[ip] = true
	e.mu.Unlock()
	go func() {
		_, err := wr.rt.InstantiateModule(runCtx, wr.mod, cfg)
		ip.exitErr = err
		cancel()
		_ = pr.Close()
		e.mu.Lock()
		delete(e.live, ip)
		e.mu.Unlock()
		close(ip.done)
	}()
	select {
	case ev := <-events:
		if kindOf(ev) == "ready" {
			return ip, nil
		}
		ip.kill()
		return nil, errors.New("python interpreter sent an unexpected first event")
	case <-ip.done:
		_ = os.RemoveAll(outDir)
		return nil, fmt.Errorf("python interpreter exited while booting: %v", ip.exitErr)
	case <-ctx.Done():
		ip.kill()
		return nil, ctx.Err()
	}
}

func kindOf(ev []byte) string {
	var k struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(ev, &k)
	return k.Kind
}

// kill ends the interpreter at once: the context cancel stops executing
// wasm (close-on-context-done), closing stdin frees a guest blocked reading.
func (ip *interp) kill() {
	ip.cancel()
	_ = ip.stdinW.Close()
}

// dispose kills the interpreter and removes its /out (not /work).
func (ip *interp) dispose() {
	ip.kill()
	<-ip.done
	_ = os.RemoveAll(ip.outDir)
}

func (ip *interp) dead() bool {
	select {
	case <-ip.done:
		return true
	default:
		return false
	}
}

// send writes one frame to the interpreter's stdin.
func (ip *interp) send(body []byte) error {
	ip.stdinMu.Lock()
	defer ip.stdinMu.Unlock()
	// One write: each write on the pipe is a hand-off to the guest's
	// goroutine, and that wake-up costs more than the copy.
	buf := make([]byte, 0, len(body)+12)
	buf = strconv.AppendInt(buf, int64(len(body)), 10)
	buf = append(buf, '\n')
	buf = append(buf, body...)
	_, err := ip.stdinW.Write(buf)
	return err
}

// memoryFull reports whether linear memory reached (nearly) its cap, i.e.
// growth was denied.
func (ip *interp) memoryFull() bool {
	m := ip.wr.rt.Module(ip.name)
	if m == nil {
		return false
	}
	var mem api.Memory = m.Memory()
	if mem == nil {
		return false
	}
	return mem.Size()/65536+16 >= ip.memPages
}

// exitStatus describes how _start ended.
func (ip *interp) exitStatus() (code uint32, isExit bool) {
	var ee *sys.ExitError
	if errors.As(ip.exitErr, &ee) {
		return ee.ExitCode(), true
	}
	return 0, false
}

// waitEvent waits for the next event, the interpreter's end, or the timer.
func (ip *interp) waitEvent(timer <-chan time.Time) ([]byte, bool) {
	select {
	case ev := <-ip.events:
		return ev, true
	case <-ip.done:
		return nil, false
	case <-timer:
		return nil, true
	}
}

// stdinReader is the guest's stdin. It tells the host when the guest is
// waiting for input: a turn ends only when the wrapper has reported
// turn_done *and* gone back to reading its next frame, so a turn_done forged
// by tenant code cannot leave tenant code running, unwatched, after its
// turn was answered.
type stdinReader struct {
	r       *io.PipeReader
	waiting atomic.Bool
	reading chan struct{} // a wake-up each time a read starts
}

func (s *stdinReader) Read(p []byte) (int, error) {
	s.waiting.Store(true)
	select {
	case s.reading <- struct{}{}:
	default:
	}
	n, err := s.r.Read(p)
	s.waiting.Store(false)
	return n, err
}
