package core

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreAndTheConfigModelLinkNoTransport: the call pipeline, the hooks and the
// configuration model build without the WebSocket client, the wire client
// or the file watcher (those belong to the worker and the config sources).
func TestCoreAndTheConfigModelLinkNoTransport(t *testing.T) {
	for _, pkg := range []string{".", "../configsvc", "../hooks"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/code-runner-go/code-runner/iii" || strings.HasPrefix(dep, "github.com/coder/websocket") || strings.HasPrefix(dep, "github.com/fsnotify/") {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
