package isolatehost

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
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

// TestThePreludeWritesOnlyTheProtocolsStatuses: every status prelude.js
// finishes a task with is one of hostproto's constants, which the
// supervisor's switches name.
func TestThePreludeWritesOnlyTheProtocolsStatuses(t *testing.T) {
	known := map[string]bool{}
	for _, s := range []string{hostproto.StatusOK, hostproto.StatusError, hostproto.StatusTimeout, hostproto.StatusMemory,
		hostproto.StatusQuota, hostproto.StatusDead, hostproto.StatusParse, hostproto.StatusThrew, hostproto.StatusMissing, hostproto.StatusRefused} {
		known[s] = true
	}
	found := regexp.MustCompile(`finish\(\s*\w+\s*,\s*'([a-z:]+)'`).FindAllStringSubmatch(preludeSource, -1)
	if len(found) == 0 {
		t.Fatal("no finish(task, '<status>') call found in prelude.js: the pattern no longer matches it")
	}
	for _, m := range found {
		if !known[m[1]] {
			t.Errorf("prelude.js finishes a task with %q, which is not a hostproto status", m[1])
		}
	}
}
