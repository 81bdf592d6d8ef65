package isolatehost

import (
	"os/exec"
	"strings"
	"testing"
)

// TestTheChildLinksNoConfigurationModel: the isolate host is the V8 child
// every node runtime runs in; it needs the guest limits and the wire
// protocol, never the worker's configuration model (its JSON Schema and
// YAML) or the call pipeline.
func TestTheChildLinksNoConfigurationModel(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		switch {
		case dep == "github.com/code-runner-go/code-runner/configsvc",
			dep == "github.com/code-runner-go/code-runner/core",
			strings.Contains(dep, "jsonschema"), strings.Contains(dep, "yaml"):
			t.Errorf("the isolate host links %s", dep)
		}
	}
}
