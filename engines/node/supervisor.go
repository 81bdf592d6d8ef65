package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/code-runner-go/code-runner/internal/tuning"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/internal/rawconn"
	"github.com/code-runner-go/code-runner/internal/spinread"
)

// hostProc is one supervised isolate-host process.
type hostProc struct {
	cmd      *exec.Cmd
	pid      int
	heapMB   int64
	filesOn  bool // the prelude was built with iii.files
	log      *slog.Logger
	localLog *slog.Logger // guest-influenced text (stderr): the worker's own log only

	stdout *os.File // read end of the host's stdout, closed after it exits

	wsem  chan struct{} // one writer at a time, acquired under a deadline
	stdin *os.File      // write end of the host's stdin (non-blocking: writes take deadlines)
	w     *hostproto.FrameWriter

	mu       sync.Mutex
	waiters  map[int64]chan *hostproto.Msg
	killedAs string // "timeout", "memory", "external", "destroy" when we killed it
	deathAs  string // why it died: "memory" or "engine"
	onCall   func(*hostproto.Msg)
	onLog    func(level, text string)
	onExit   func()

	baselineKB int64
	exited     chan struct{}
	readyAgain chan struct{} // a reset finished
	stderr     tailBuffer
}

// tailBuffer keeps the last 8 KiB written to it (a dying host's last words).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8192 {
		t.buf = append([]byte{}, t.buf[len(t.buf)-8192:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// hostEnv is a host's whole environment: nothing of the worker's (an
// exec.Cmd with a nil Env would inherit all of it, secrets included), one
// P for the host's Go runtime — its one goroutine drives V8, and with one P
// sysmon and the scheduler wake fewer threads around each long V8 call
// (one-shot throughput +14 %, docs/history/2026-12-03-architecture-notebook.md;
// a host bound to a kept runtime raises it to two, isolatehost.keptProcs) —
// then extra.
func hostEnv(extra []string) []string {
	return append([]string{"GOMAXPROCS=1"}, extra...)
}

// spawnHost starts a host process and waits until its isolate exists.
func spawnHost(ctx context.Context, argv, env []string, heapMB int64, filesOn, rich bool, log, localLog *slog.Logger) (*hostProc, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = hostEnv(env)
	cmd.SysProcAttr = hostSysProcAttr()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("host pipe: %w", err)
	}
	cmd.Stdin = inR
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("host pipe: %w", err)
	}
	cmd.Stdout = pw
	stdout, err := spinread.New(pr, tuning.PipeSpin)
	var stdin *rawconn.Writer
	if err == nil {
		stdin, err = rawconn.NewWriter(inW)
	}
	if err != nil {
		pr.Close()
		pw.Close()
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &hostProc{cmd: cmd, heapMB: heapMB, filesOn: filesOn, log: log, localLog: localLog, wsem: make(chan struct{}, 1), stdin: inW, w: &hostproto.FrameWriter{W: stdin},
		waiters: map[int64]chan *hostproto.Msg{}, exited: make(chan struct{}), readyAgain: make(chan struct{}, 1)}
	cmd.Stderr = &p.stderr
	err = cmd.Start()
	// The child holds its own copies of its pipe ends.
	pw.Close()
	inR.Close()
	if err != nil {
		pr.Close()
		inW.Close()
		return nil, fmt.Errorf("start isolate host: %w", err)
	}
	p.pid = cmd.Process.Pid
	ready := make(chan *hostproto.Msg, 1)
	p.stdout = pr
	go p.readLoop(hostproto.NewFrameReader(stdout), ready)
	if err := p.send(&hostproto.Msg{T: "init", HeapMB: heapMB, FilesOn: filesOn, Rich: rich}); err != nil {
		p.kill("destroy")
		return nil, err
	}
	select {
	case m := <-ready:
		if m == nil || m.T != "ready" {
			p.kill("destroy")
			return nil, fmt.Errorf("isolate host failed to start: %s", p.stderr.String())
		}
		p.baselineKB = rssKB(p.pid)
		return p, nil
	case <-ctx.Done():
		p.kill("destroy")
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		p.kill("destroy")
		return nil, errors.New("isolate host did not start within 30s")
	}
}

// hostWriteWait bounds a write to a host that should be reading (it is
// idle, or answers within its own deadline).
const hostWriteWait = 5 * time.Second

func (p *hostProc) send(m *hostproto.Msg) error {
	return p.sendBy(m, time.Now().Add(hostWriteWait))
}

// sendBy writes m to the host, giving up at deadline. Nothing is ever
// written to a host without a deadline: a host that does not read (guest
// code spinning) would otherwise block the writer, and everyone queued
// behind it, for as long as it spins. A write that times out may have left
// half a frame in the pipe, so the host is killed.
func (p *hostProc) sendBy(m *hostproto.Msg, deadline time.Time) error {
	wait := time.NewTimer(time.Until(deadline))
	defer wait.Stop()
	select {
	case p.wsem <- struct{}{}:
	case <-wait.C:
		return errWriteTimeout
	case <-p.exited:
		return errors.New("isolate host is gone")
	}
	defer func() { <-p.wsem }()
	_ = p.stdin.SetWriteDeadline(deadline)
	err := p.w.Write(m)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		p.kill("timeout")
		return errWriteTimeout
	}
	return err
}

// errWriteTimeout is a write to a host that did not read in time.
var errWriteTimeout = errors.New("isolate host did not read its input in time")

func (p *hostProc) readLoop(fr *hostproto.FrameReader, ready chan *hostproto.Msg) {
	booted := false
	for {
		m, err := fr.Read()
		if err != nil {
			break
		}
		switch m.T {
		case "ready":
			if !booted {
				booted = true
				ready <- m
			} else {
				select {
				case p.readyAgain <- struct{}{}:
				default:
				}
			}
		case "fatal":
			p.log.Error("isolate host failed", "err", m.Error)
		case "warn":
			p.log.Warn(m.Text, "pid", p.pid)
		case "done":
			p.mu.Lock()
			ch := p.waiters[m.Task]
			delete(p.waiters, m.Task)
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case "call":
			p.mu.Lock()
			h := p.onCall
			p.mu.Unlock()
			if h != nil {
				go h(m)
			} else {
				_ = p.send(&hostproto.Msg{T: "reply", Call: m.Call, Error: "this runtime is not bound yet"})
			}
		case "log":
			p.mu.Lock()
			h := p.onLog
			p.mu.Unlock()
			if h != nil {
				h(m.Level, m.Text)
			}
		}
	}
	if !booted {
		close(ready)
	}
	err := p.cmd.Wait()
	p.stdout.Close()
	p.stdin.Close()
	reason := p.classify(err)
	p.mu.Lock()
	p.deathAs = reason
	waiters := p.waiters
	p.waiters = map[int64]chan *hostproto.Msg{}
	onExit := p.onExit
	p.mu.Unlock()
	for id, ch := range waiters {
		ch <- &hostproto.Msg{T: "done", Task: id, Status: hostproto.Died(reason)}
	}
	close(p.exited)
	if onExit != nil {
		onExit()
	}
}

// classify names why the host ended: "memory" for our memory kill or a V8
// fatal out-of-memory abort, else "engine".
func (p *hostProc) classify(err error) string {
	p.mu.Lock()
	killed := p.killedAs
	p.mu.Unlock()
	if killed == "memory" || killed == "external" || killed == "timeout" || killed == "destroy" {
		return killed
	}
	var xe *exec.ExitError
	if errors.As(err, &xe) && xe.ExitCode() == hostproto.ExitDetached {
		return "detached" // its own guest work outside any call overran
	}
	tail := p.stderr.String()
	if strings.Contains(tail, "outside the heap over its cap") {
		return "external"
	}
	if strings.Contains(tail, "out of memory") || strings.Contains(tail, "OOM") || strings.Contains(tail, "Allocation failed") {
		return "memory"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && (ws.Signal() == syscall.SIGTRAP || ws.Signal() == syscall.SIGABRT) {
			return "memory"
		}
	}
	if tail != "" {
		p.localLog.Debug("isolate host exited", "stderr", tail) // may quote guest text: never exported
	}
	return "engine"
}

// kill ends the host at once (its whole process group), recording why.
func (p *hostProc) kill(reason string) {
	p.mu.Lock()
	if p.killedAs == "" {
		p.killedAs = reason
	}
	p.mu.Unlock()
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
}

// dead reports whether the process has exited.
func (p *hostProc) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// start sends a task message, giving up at deadline, and returns the
// channel its done arrives on.
func (p *hostProc) start(m *hostproto.Msg, deadline time.Time) (chan *hostproto.Msg, error) {
	ch := make(chan *hostproto.Msg, 1)
	p.mu.Lock()
	if p.deathAs != "" {
		p.mu.Unlock()
		return nil, errors.New("isolate host is gone")
	}
	p.waiters[m.Task] = ch
	p.mu.Unlock()
	if err := p.sendBy(m, deadline); err != nil {
		p.mu.Lock()
		delete(p.waiters, m.Task)
		p.mu.Unlock()
		return nil, err
	}
	return ch, nil
}

var _ io.Writer = (*tailBuffer)(nil)

// recycle resets the host for another runtime — a new isolate with heapMB
// and iii.files as given — and reports whether it came back in time.
func (p *hostProc) recycle(heapMB int64, filesOn, rich bool) bool {
	p.mu.Lock()
	p.onCall, p.onLog, p.onExit = nil, nil, nil
	p.mu.Unlock()
	// A host is reset only when idle: one still running guest work (a
	// callback that outlived its run) is not waited for — the caller kills it.
	bound := time.Now().Add(resetWait)
	if err := p.sendBy(&hostproto.Msg{T: "reset", HeapMB: heapMB, FilesOn: filesOn, Rich: rich}, bound); err != nil {
		return false
	}
	select {
	case <-p.readyAgain:
		p.heapMB, p.filesOn = heapMB, filesOn
		p.baselineKB = rssKB(p.pid)
		return true
	case <-p.exited:
		return false
	case <-time.After(time.Until(bound)):
		return false
	}
}

// resetWait bounds a recycle: an idle host builds its new isolate in a few
// milliseconds (docs/architecture.md, "Why is a host that does not reset
// within 500 ms killed?").
const resetWait = 500 * time.Millisecond
