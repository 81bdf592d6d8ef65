package ui

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchDir interprets III_CODE_RUNNER_UI_WATCH (docs/behaviour.md#console-assets-content): unset, "",
// "0" or "false" is off; "1" or "true" watches ui/dist under the working
// directory; a path ending in .js means its directory; any other value is a
// directory.
func WatchDir(v string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "0", "false":
		return "", false
	case "1", "true":
		return filepath.Join("ui", "dist"), true
	}
	if strings.HasSuffix(v, ".js") {
		return filepath.Dir(v), true
	}
	return v, true
}

// Rebind re-registers an asset's trigger after its bytes changed: register
// a fresh trigger for the path first, then unregister the previous one (so
// open console tabs never see a moment without the asset).
type Rebind func(a Asset)

// Watch reloads changed assets from dir into s until ctx ends: fsnotify on
// the directory, plus a 1 s poll as the baseline (some editors
// and file systems miss events). Each change swaps the served bytes and
// calls rebind.
func Watch(ctx context.Context, dir string, s *Store, rebind Rebind, log *slog.Logger) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return err
	}
	log.Info("watching console UI assets for changes", "dir", dir)
	check := func() {
		for _, a := range Assets {
			b, err := os.ReadFile(filepath.Join(dir, a.File))
			if err != nil || len(b) == 0 {
				continue
			}
			s.mu.RLock()
			same := bytes.Equal(s.bytes[a.Path], b)
			s.mu.RUnlock()
			if same {
				continue
			}
			s.Set(a.Path, b)
			log.Info("console UI asset changed; re-registering its trigger", "path", a.Path)
			rebind(a)
		}
	}
	check()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.Events:
			time.Sleep(50 * time.Millisecond) // let the writer finish
			check()
		case <-tick.C:
			check()
		case err := <-w.Errors:
			log.Warn("console UI watcher error", "err", err)
		}
	}
}
