package sources

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/code-runner-go/code-runner/configsvc"
)

// FileSource watches the local configuration file (docs/behaviour.md#configuration-file): fsnotify
// on its directory (editors replace files by rename), events for the file
// debounced, then re-read, validated and applied. An invalid edit is one
// WARN line listing every problem, and the previous configuration stays.
type FileSource struct {
	Path     string
	Env      configsvc.LookupEnv
	Log      *slog.Logger
	Debounce time.Duration // default 500 ms
	// Apply receives every valid configuration read after a change.
	Apply func(configsvc.Config)
	// Rejected, when set, is called for each change that did not validate.
	Rejected func()

	loaded []byte // the file's bytes as Load saw them (nil: missing)
}

// Load reads the file once. A missing file reports (fallback, false, nil).
func (f *FileSource) Load(fallback configsvc.Config) (configsvc.Config, bool, error) {
	f.loaded, _ = os.ReadFile(f.Path)
	cfg, err := configsvc.LoadFile(f.Path, f.Env)
	if errors.Is(err, os.ErrNotExist) {
		return fallback, false, nil
	}
	if err != nil {
		return configsvc.Config{}, true, fmt.Errorf("invalid config file %s: %w", f.Path, err)
	}
	return cfg, true, nil
}

// Watch runs until ctx ends, watching the file's directory (created when
// missing, so a file that does not exist yet is picked up when it appears).
func (f *FileSource) Watch(ctx context.Context) error {
	if f.Debounce == 0 {
		f.Debounce = 500 * time.Millisecond
	}
	if f.Log == nil {
		f.Log = slog.Default()
	}
	dir := filepath.Dir(f.Path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	name := filepath.Base(f.Path)
	var timer *time.Timer
	fire := make(chan struct{}, 1)
	// An edit between Load and the watch has no event: compare, and
	// reload at once if the file is not what Load read.
	if now, _ := os.ReadFile(f.Path); !bytes.Equal(now, f.loaded) {
		fire <- struct{}{}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if filepath.Base(ev.Name) != name {
				continue
			}
			if timer != nil {
				timer.Stop()
			}
			timer = time.AfterFunc(f.Debounce, func() {
				select {
				case fire <- struct{}{}:
				default:
				}
			})
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			f.Log.Warn("config file watcher error", "err", err)
		case <-fire:
			f.reload()
		}
	}
}

func (f *FileSource) reload() {
	cfg, err := configsvc.LoadFile(f.Path, f.Env)
	if errors.Is(err, os.ErrNotExist) {
		f.Log.Info("config file removed; the current configuration stays live until it reappears", "path", f.Path)
		return
	}
	if err != nil {
		probs := configsvc.Problems(err)
		f.Log.Warn(fmt.Sprintf("config file %s rejected (%d problem(s)): %s; the previous configuration stays live", f.Path, len(probs), strings.Join(probs, "; ")))
		if f.Rejected != nil {
			f.Rejected()
		}
		return
	}
	f.Apply(cfg)
}
