package hostproto

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/internal/spinread"
)

// TestFrameReaderSurvivesDeadlines: the host wakes on read deadlines while
// idle; a deadline that cuts a frame in half must lose nothing.
func TestFrameReaderSurvivesDeadlines(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, err := spinread.New(r, 50*time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	fr := NewFrameReader(in)
	frame := func(m *Msg) []byte {
		b, _ := json.Marshal(m)
		out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
		return append(out, b...)
	}
	big := &Msg{T: "run", Task: 7, Code: strings.Repeat("x", 200_000)} // bigger than the initial buffer and a pipe
	whole := append(frame(&Msg{T: "bind", Namespace: "ns::"}), frame(big)...)
	cut := len(whole) - 100_000

	go func() { w.Write(whole[:cut]) }()
	m, err := fr.Read()
	if err != nil {
		t.Fatal(err)
	}
	if m.T != "bind" || m.Namespace != "ns::" {
		t.Fatalf("first frame: %+v", m)
	}
	in.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if _, err := fr.Read(); !os.IsTimeout(err) {
		t.Fatalf("want a timeout with half a frame buffered, got %v", err)
	}
	in.SetReadDeadline(time.Time{})
	go func() { w.Write(whole[cut:]) }()
	if m, err = fr.Read(); err != nil {
		t.Fatal(err)
	}
	if m.T != "run" || m.Task != 7 || m.Code != big.Code {
		t.Fatalf("second frame after the deadline: task %d, %d code bytes", m.Task, len(m.Code))
	}
	// A length prefix past the limit is refused, not allocated.
	go func() { w.Write(binary.BigEndian.AppendUint32(nil, MaxFrame+1)) }()
	if _, err := fr.Read(); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Fatalf("oversized frame: %v", err)
	}
}
