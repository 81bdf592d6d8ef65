package node

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/core"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
)

// lockedBuffer is a log sink several goroutines write.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// snapshotEngine is an engine keeping its snapshots under dir, logging to
// log, and the result of one call that touches the rich environment.
func snapshotEngine(t *testing.T, dir string, log *lockedBuffer) string {
	t.Helper()
	cfg := configsvc.Defaults()
	cfg.WarmPoolNode = 0
	snap := &configsvc.Snapshot{Config: cfg}
	eng, err := New(Options{HostArgv: []string{os.Args[0], HostArg}, Registry: core.NewRegistry(nil), CacheDir: dir,
		Live: func() *configsvc.Snapshot { return snap }, Log: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	rt, err := eng.NewRuntime(context.Background(), core.RuntimeOptions{Config: &cfg, OneShot: true, Code: "require"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Destroy()
	out, err := rt.Run(context.Background(), core.Exec{Code: `return require("lodash").sum([1, 2]) + new URL("https://a.b/?q=4").searchParams.get("q")`})
	if err != nil {
		t.Fatal(err)
	}
	return string(out.Result)
}

// snapshotPaths are the files an engine keeps its snapshots in under dir.
func snapshotPaths(dir string) []string {
	var out []string
	for _, k := range []jsenv.Kind{jsenv.Lean, jsenv.Rich} {
		out = append(out, filepath.Join(dir, "node", "v8-snapshot-"+string(k)+"-"+jsenv.SnapshotKey(k)+".bin"))
	}
	return out
}

// The startup snapshots are made once per build, by a host process, into
// the cache directory; the next worker maps them as they are; a file left
// by another V8 or cut short is made again.
func TestSnapshotsAreMadeOnceAndKept(t *testing.T) {
	dir := t.TempDir()
	var log lockedBuffer
	if got := snapshotEngine(t, dir, &log); got != `"34"` {
		t.Fatalf("result %s", got)
	}
	paths := snapshotPaths(dir)
	var made []time.Time
	for _, p := range paths {
		if err := jsenv.CheckSnapshotFile(p); err != nil {
			t.Fatalf("%s: %v\n%s", p, err, log.String())
		}
		info, _ := os.Stat(p)
		made = append(made, info.ModTime())
	}
	if n := strings.Count(log.String(), "V8 startup snapshot made"); n != 2 {
		t.Fatalf("%d snapshots made, want 2:\n%s", n, log.String())
	}

	var again lockedBuffer
	if got := snapshotEngine(t, dir, &again); got != `"34"` {
		t.Fatalf("result %s", got)
	}
	if strings.Contains(again.String(), "snapshot made") || strings.Contains(again.String(), "WARN") {
		t.Fatalf("the second worker made or refused a snapshot:\n%s", again.String())
	}
	for i, p := range paths {
		if info, _ := os.Stat(p); !info.ModTime().Equal(made[i]) {
			t.Fatalf("%s was written again", p)
		}
	}

	file, _ := os.ReadFile(paths[1])
	if err := os.WriteFile(paths[1], file[:len(file)/3], 0o600); err != nil {
		t.Fatal(err)
	}
	var third lockedBuffer
	if got := snapshotEngine(t, dir, &third); got != `"34"` {
		t.Fatalf("result %s", got)
	}
	if n := strings.Count(third.String(), "V8 startup snapshot made"); n != 1 || jsenv.CheckSnapshotFile(paths[1]) != nil {
		t.Fatalf("the cut snapshot was not made again (%d made):\n%s", n, third.String())
	}
}

// A snapshot file whose envelope is whole but whose blob V8 would not take
// is never given to V8 (which would abort the process): every host warns,
// once, and builds the environment without it; calls answer as ever.
func TestASnapshotV8WouldRefuseIsWarnedAboutAndLeftOut(t *testing.T) {
	dir := t.TempDir()
	paths := snapshotPaths(dir)
	if err := os.MkdirAll(filepath.Dir(paths[0]), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if err := os.WriteFile(p, jsenv.SnapshotFile(bytes.Repeat([]byte("not a V8 snapshot "), 100)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var log lockedBuffer
	if got := snapshotEngine(t, dir, &log); got != `"34"` {
		t.Fatalf("result %s\n%s", got, log.String())
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "V8 startup snapshot could not be loaded") ||
		!strings.Contains(log.String(), "builds the JavaScript environment without it") {
		t.Fatalf("no warning:\n%s", log.String())
	}
}
