package worker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTheWorkerImportsNoEngine: the worker builds the engine modules it is
// given (engines/standard in cmd) and asks them through core's interfaces;
// it links no engine package, so a new language never needs a line here.
func TestTheWorkerImportsNoEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/code-runner-go/code-runner/engines/") {
			t.Errorf("worker links %s", dep)
		}
	}
}
