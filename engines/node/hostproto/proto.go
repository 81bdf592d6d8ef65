package hostproto

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"

	"github.com/code-runner-go/code-runner/internal/jsonx"
)

// MaxFrame bounds one frame between parent and host. Guest data crossing it
// is already capped (code 1 MiB, payloads 1 MiB, console 256 KiB per call,
// results by the output cap); 64 MiB leaves room for scratch file reads.
const MaxFrame = 64 << 20

// Msg is every message exchanged between the worker and an isolate host,
// framed as a 4-byte big-endian length followed by JSON.
type Msg struct {
	T    string `json:"t"`
	Task int64  `json:"task,omitempty"`
	Call int64  `json:"call,omitempty"`

	// init / bind
	HeapMB     int64 `json:"heap_mb,omitempty"`
	ExternalMB int64 `json:"external_mb,omitempty"` // bind: the off-heap cap
	FilesOn    bool  `json:"files_on,omitempty"`
	// Rich asks init and reset for an isolate from the rich startup
	// snapshot (jsenv.Rich) rather than the lean one.
	Rich      bool       `json:"rich,omitempty"`
	Namespace string     `json:"namespace,omitempty"`
	Files     *FilesConf `json:"files,omitempty"`
	Kept      bool       `json:"kept,omitempty"` // bind: a kept runtime (not a one-shot)

	// run / invoke / define / trigger-type tasks
	Code string `json:"code,omitempty"`
	// MaxResult is a run's result cap in bytes (0: none): a result the
	// host measures over it is answered as the cap's marker, never encoded
	// whole.
	MaxResult int64 `json:"max_result,omitempty"`
	// Omitted (a run's "done") says Result is the result cap's marker for
	// a result the host measured over MaxResult.
	Omitted    bool            `json:"omitted,omitempty"`
	BudgetMS   int64           `json:"budget_ms,omitempty"` // a task's budget; bind: the budget of work with no call (max_timeout_ms)
	FunctionID string          `json:"function_id,omitempty"`
	Payload    json.RawMessage `json:"payload,omitempty"`
	Binding    json.RawMessage `json:"binding,omitempty"`
	TypeID     string          `json:"type_id,omitempty"`

	// bridge calls (host → parent) and their replies
	Op         string          `json:"op,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	OK         bool            `json:"ok,omitempty"`
	Value      json.RawMessage `json:"value,omitempty"`
	Error      string          `json:"error,omitempty"`
	DeadlineMS int64           `json:"deadline_ms,omitempty"` // unix ms of the enclosing task's deadline, 0 = none

	// done
	Status string          `json:"status,omitempty"`
	Stdout string          `json:"stdout,omitempty"`
	Stderr string          `json:"stderr,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`

	// log
	Level string `json:"level,omitempty"`
	Text  string `json:"text,omitempty"`
}

// FilesConf configures iii.files in a host.
type FilesConf struct {
	Dir      string `json:"dir"`
	MaxBytes int64  `json:"max_bytes"`
	MaxFiles int64  `json:"max_files"`
}

// ExitDetached is the isolate host's exit status when guest work that ran
// with no task in flight (a callback after its call ended) overran its
// deadline or memory cap: the runtime was destroyed by its own detached work.
const ExitDetached = 12

// Task outcomes reported in done.status.
const (
	StatusOK      = "ok"      // completed; result holds the JSON
	StatusError   = "error"   // threw or rejected; error holds the text
	StatusTimeout = "timeout" // the task's deadline passed; the isolate is dead
	StatusMemory  = "memory"  // the heap cap was hit; the isolate is dead
	// StatusExternal: the guest's memory outside V8's heap (ArrayBuffers,
	// typed arrays, Buffers) passed the off-heap cap; the isolate is dead.
	StatusExternal = "external"
	StatusQuota    = "quota" // an iii.files quota refusal escaped; error holds its text
	StatusDead     = "dead"  // the isolate died for another task's kill
	StatusExit     = "exit"  // a run ended by process.exit / exitCode with a non-zero code
	// Statuses of the prelude's define and handler tasks (prelude.js
	// writes the same strings).
	StatusParse   = "parse"   // the source does not compile; error holds the text
	StatusThrew   = "threw"   // defining or running a handler threw; error holds the text
	StatusMissing = "missing" // no handler of that id (it was unregistered)
	StatusRefused = "refused" // a registration the prelude refused; error holds the text
	// StatusOmitted is the prelude's record of a run's result measured over
	// the run's cap ("<bytes> string|array <n>"); the host answers it as
	// StatusOK with the cap's marker, so the worker never sees it.
	StatusOmitted = "omitted"
	// The supervisor's statuses, never a host's: the host died with the
	// task in flight, killed for the task's deadline, for memory, or for
	// its own detached work (Died names the rest).
	StatusDiedTimeout  = "died:timeout"
	StatusDiedMemory   = "died:memory"
	StatusDiedExternal = "died:external"
	StatusDiedDetached = "died:detached"
)

// Died is the status the supervisor gives a task whose host died for
// reason (a kill reason such as "timeout", or "engine").
func Died(reason string) string { return "died:" + reason }

type FrameWriter struct {
	W io.Writer
}

func (fw *FrameWriter) Write(m *Msg) error {
	b, err := jsonx.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.T, err)
	}
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
	if _, err := fw.W.Write(append(hdr[:], b...)); err != nil {
		return err
	}
	return nil
}

// FrameReader reads frames. A read error that is only a deadline (the
// host's idle wake-up) loses nothing: the bytes of a frame cut short stay
// buffered and the next read completes it.
type FrameReader struct {
	r   io.Reader
	buf []byte // buf[off:] holds bytes read but not yet consumed
	off int
}

func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: r, buf: make([]byte, 0, 64<<10)}
}

func (fr *FrameReader) Read() (*Msg, error) {
	for {
		if b := fr.buf[fr.off:]; len(b) >= 4 {
			n := binary.BigEndian.Uint32(b[:4])
			if n > MaxFrame {
				return nil, fmt.Errorf("frame of %d bytes exceeds %d", n, MaxFrame)
			}
			if uint32(len(b)-4) >= n {
				var m Msg
				err := json.Unmarshal(b[4:4+n], &m)
				fr.off += 4 + int(n)
				if fr.off == len(fr.buf) {
					fr.buf, fr.off = fr.buf[:0], 0
					if cap(fr.buf) > 1<<20 {
						fr.buf = make([]byte, 0, 64<<10) // let a big frame's buffer go
					}
				}
				if err != nil {
					return nil, fmt.Errorf("decode frame: %w", err)
				}
				return &m, nil
			}
			fr.reserve(4 + int(n))
		} else {
			fr.reserve(4)
		}
		k, err := fr.r.Read(fr.buf[len(fr.buf):cap(fr.buf)])
		fr.buf = fr.buf[:len(fr.buf)+k]
		if err != nil {
			if err == io.EOF && len(fr.buf) > fr.off {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

// reserve makes room for a frame of total bytes starting at off, moving
// the unconsumed bytes to the front.
func (fr *FrameReader) reserve(total int) {
	if fr.off > 0 {
		n := copy(fr.buf, fr.buf[fr.off:])
		fr.buf, fr.off = fr.buf[:n], 0
	}
	if cap(fr.buf) < total {
		nb := make([]byte, len(fr.buf), total)
		copy(nb, fr.buf)
		fr.buf = nb
	}
}

// The isolate host's environment variables for its startup snapshot
// (contract §25.7): SnapshotEnv gives a serving host the snapshot file to
// make its isolates from; MakeSnapshotEnv makes a host write one there and
// exit instead of serving.
const (
	SnapshotEnv     = "CODE_RUNNER_V8_SNAPSHOT"
	RichSnapshotEnv = "CODE_RUNNER_V8_SNAPSHOT_RICH"
	MakeSnapshotEnv = "CODE_RUNNER_MAKE_V8_SNAPSHOT"
	// SnapshotKindEnv names the kind (jsenv.Kind) a snapshot-making host
	// makes.
	SnapshotKindEnv = "CODE_RUNNER_V8_SNAPSHOT_KIND"
)
