package sources

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
)

// TestFileSourceCatchesAnEditBeforeTheWatchStarts: an edit that lands
// between Load and the start of the watch raises no event; it must still
// be applied (the worker starts watching only after it has booted).
func TestFileSourceCatchesAnEditBeforeTheWatchStarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "code-runner.yaml")
	if err := os.WriteFile(path, []byte("max_result_bytes: 1000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	applied := make(chan configsvc.Config, 4)
	f := &FileSource{Path: path, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Apply: func(c configsvc.Config) { applied <- c }}
	cfg, found, err := f.Load(configsvc.Defaults())
	if err != nil || !found || cfg.MaxResultBytes != 1000 {
		t.Fatalf("load: %+v %v %v", cfg.MaxResultBytes, found, err)
	}
	if err := os.WriteFile(path, []byte("max_result_bytes: 2000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = f.Watch(ctx) }()
	select {
	case c := <-applied:
		if c.MaxResultBytes != 2000 {
			t.Fatalf("applied %d, want 2000", c.MaxResultBytes)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the edit made before the watch started was never applied")
	}
	// An unchanged file at watch start applies nothing.
	f2 := &FileSource{Path: path, Log: f.Log, Apply: func(c configsvc.Config) { applied <- c }}
	if _, _, err := f2.Load(configsvc.Defaults()); err != nil {
		t.Fatal(err)
	}
	go func() { _ = f2.Watch(ctx) }()
	select {
	case c := <-applied:
		t.Fatalf("an unchanged file was applied again (%d)", c.MaxResultBytes)
	case <-time.After(300 * time.Millisecond):
	}
}
