package worker

import (
	"os"
	"testing"

	"github.com/code-runner-go/code-runner/engines/node/isolatehost"
)

// TestMain doubles as the isolate host for the node engine under test.
func TestMain(m *testing.M) {
	if os.Getenv("CODE_RUNNER_ISOLATE_HOST") == "1" {
		os.Exit(isolatehost.Serve())
	}
	os.Exit(m.Run())
}
