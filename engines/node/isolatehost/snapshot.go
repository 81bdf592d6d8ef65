package isolatehost

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
)

// makeSnapshot writes the startup snapshot of the kind its environment
// names (SnapshotKindEnv; lean by default) to path (through a file beside
// it, renamed into place, so a reader never sees half of one) and answers
// the exit status.
func makeSnapshot(path string) int {
	kind := jsenv.Lean
	if os.Getenv(hostproto.SnapshotKindEnv) == string(jsenv.Rich) {
		kind = jsenv.Rich
	}
	file, err := jsenv.MakeSnapshot(kind)
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolate host:", err)
		return 1
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".snapshot-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, "isolate host:", err)
		return 1
	}
	_, werr := tmp.Write(file)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		fmt.Fprintln(os.Stderr, "isolate host: writing the snapshot:", werr, cerr)
		return 1
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		fmt.Fprintln(os.Stderr, "isolate host:", err)
		return 1
	}
	return 0
}
