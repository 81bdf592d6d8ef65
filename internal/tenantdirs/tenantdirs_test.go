package tenantdirs

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A helper process: holds its directory under TENANTDIRS_ROOT until killed.
func TestMain(m *testing.M) {
	if root := os.Getenv("TENANTDIRS_ROOT"); root != "" {
		d := New()
		dir, err := d.Under(root)
		if err != nil {
			os.Exit(3)
		}
		_ = os.WriteFile(filepath.Join(dir, "tenant"), []byte("x"), 0o600)
		os.Stdout.WriteString(dir + "\n")
		for { // held until killed (a bare select{} is a deadlock the runtime ends without -race)
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

// holder starts a process that makes and holds its directory under root.
func holder(t *testing.T, root string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), "TENANTDIRS_ROOT="+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return cmd, strings.TrimSpace(line)
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// A sweep removes the directory of a process that was killed, and leaves
// a live process's — another process's, or this one's own — alone.
func TestSweepRemovesOnlyDeadWorkersDirectories(t *testing.T) {
	root := t.TempDir()
	dead, deadDir := holder(t, root)
	_, liveDir := holder(t, root)
	own := New()
	ownDir, err := own.Under(root)
	if err != nil {
		t.Fatal(err)
	}
	if n := Sweep(nil, root); n != 0 || !exists(deadDir) || !exists(liveDir) || !exists(ownDir) {
		t.Fatalf("a sweep with every owner alive removed %d", n)
	}
	_ = dead.Process.Kill()
	_ = dead.Wait()
	if n := Sweep(nil, root); n != 1 || exists(deadDir) || !exists(liveDir) || !exists(ownDir) {
		t.Fatalf("after the kill: removed %d; dead %v live %v own %v", n, exists(deadDir), exists(liveDir), exists(ownDir))
	}
	if err := own.Close(); err != nil || exists(ownDir) {
		t.Fatalf("Close: %v, still there %v", err, exists(ownDir))
	}
}

// A directory without its lock file is left while it may be being made,
// and removed once it is old; other entries of the root are never touched.
func TestSweepLeavesWhatIsNotAWorkersDirectory(t *testing.T) {
	root := t.TempDir()
	young := filepath.Join(root, Prefix+"young")
	old := filepath.Join(root, Prefix+"old")
	other := filepath.Join(root, "iii-python-work-123")
	for _, d := range []string{young, old, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	past := time.Now().Add(-2 * unmarkedAge)
	if err := os.Chtimes(old, past, past); err != nil {
		t.Fatal(err)
	}
	if n := Sweep(nil, root); n != 1 || !exists(young) || exists(old) || !exists(other) {
		t.Fatalf("removed %d: young %v old %v other %v", n, exists(young), exists(old), exists(other))
	}
}
