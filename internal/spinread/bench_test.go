package spinread

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/internal/benchutil"
)

// TestMain doubles as the echo child of BenchmarkPipeRoundTrip: with
// SPINREAD_ECHO set to a duration it copies stdin to stdout through a
// Reader with that spin, the way an isolate host reads its pipe.
func TestMain(m *testing.M) {
	if v := os.Getenv("SPINREAD_ECHO"); v != "" {
		spin, _ := time.ParseDuration(v)
		_ = syscall.SetNonblock(0, true)
		r, err := New(os.NewFile(0, "stdin"), spin)
		if err != nil {
			os.Exit(5)
		}
		buf := make([]byte, 64)
		for {
			n, err := r.Read(buf)
			if err != nil {
				os.Exit(0)
			}
			if _, err := os.Stdout.Write(buf[:n]); err != nil {
				os.Exit(0)
			}
		}
	}
	os.Exit(m.Run())
}

// BenchmarkPipeRoundTrip: a small message to a child process and back, both
// ends reading through a Reader — with the 50 µs spin the worker and its
// isolate hosts use, beside no spin (sleep in the poller at once) measured in
// the same run.
func BenchmarkPipeRoundTrip(b *testing.B) {
	roundTrips := func(spin time.Duration) benchutil.Samples {
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{"SPINREAD_ECHO=" + spin.String()}
		in, err := cmd.StdinPipe()
		if err != nil {
			b.Fatal(err)
		}
		pr, pw, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stdout = pw
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		pw.Close()
		defer func() { in.Close(); _ = cmd.Wait(); pr.Close() }()
		r, err := New(pr, spin)
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 64)
		msg := []byte("ping")
		return benchutil.Time(max(b.N, 2000), func() {
			if _, err := in.Write(msg); err != nil {
				b.Fatal(err)
			}
			for got := 0; got < len(msg); {
				n, err := r.Read(buf)
				if err != nil {
					b.Fatal(err)
				}
				got += n
			}
		})
	}
	plain := roundTrips(0)
	spun := roundTrips(50 * time.Microsecond)
	plain.Report(b, "no-spin")
	spun.Report(b, "spin-50us")
	benchutil.Ratio(b, "x-faster-with-spin", spun, plain)
}
