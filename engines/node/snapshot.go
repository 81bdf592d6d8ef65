package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	"github.com/code-runner-go/code-runner/engines/node/jsenv"
)

// The startup snapshot (contract §25.7; docs/architecture.md, "Why a
// startup snapshot?"): the JavaScript environment compiled and initialised
// once, by a host process that never runs tenant code, and kept in the
// cache directory under a key that changes with anything that goes into
// it. Every host maps the file and makes its isolates from it.

// snapshotMakeTimeout bounds the making of a snapshot.
const snapshotMakeTimeout = 60 * time.Second

// prepareSnapshot finds this build's snapshots (lean and rich) in the
// cache or makes them, and gives their paths to every host. Without them
// (the cache disabled or unusable, the making failed) hosts build the
// environment themselves, as they always could: slower, never wrong.
func (e *Engine) prepareSnapshot() {
	base := e.opts.CacheDir
	if base == "-" {
		return
	}
	if base == "" {
		if x := os.Getenv("XDG_CACHE_HOME"); x != "" {
			base = filepath.Join(x, "code-runner")
		} else if h, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(h, ".cache", "code-runner")
		} else {
			e.log.Warn("no cache directory for the V8 startup snapshots; isolates build the JavaScript environment themselves (slower)", "err", err)
			return
		}
	}
	dir := filepath.Join(base, "node")
	env := slices.Clone(e.opts.HostEnv)
	for _, k := range []struct {
		kind jsenv.Kind
		env  string
	}{{jsenv.Lean, hostproto.SnapshotEnv}, {jsenv.Rich, hostproto.RichSnapshotEnv}} {
		path := filepath.Join(dir, "v8-snapshot-"+string(k.kind)+"-"+jsenv.SnapshotKey(k.kind)+".bin")
		if err := jsenv.CheckSnapshotFile(path); err != nil {
			start := time.Now()
			if err := os.MkdirAll(dir, 0o700); err != nil {
				e.log.Warn("the V8 startup snapshots' cache directory is unusable; isolates build the JavaScript environment themselves (slower)", "dir", dir, "err", err)
				return
			}
			if err := e.makeSnapshot(path, k.kind); err != nil {
				e.log.Warn("a V8 startup snapshot could not be made; isolates build the JavaScript environment themselves (slower)", "kind", k.kind, "err", err)
				continue
			}
			e.log.Debug("V8 startup snapshot made", "kind", k.kind, "path", path, "took", time.Since(start))
		}
		env = append(env, k.env+"="+path)
	}
	e.opts.HostEnv = env
}

// makeSnapshot runs a host in its snapshot mode, which writes the file.
func (e *Engine) makeSnapshot(path string, kind jsenv.Kind) error {
	ctx, cancel := context.WithTimeout(context.Background(), snapshotMakeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.opts.HostArgv[0], e.opts.HostArgv[1:]...)
	cmd.Env = append(slices.Clone(e.opts.HostEnv), hostproto.MakeSnapshotEnv+"="+path, hostproto.SnapshotKindEnv+"="+string(kind))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return jsenv.CheckSnapshotFile(path)
}

// kindDemand follows which snapshot recent runtimes wanted (their first
// code, jsenv.WantsRich): a host is made, and recycled, with the kind most
// of them wanted lately, so that a stream of calls gets the isolates it
// uses without paying for the rest (docs/architecture.md, "Why two
// snapshots?"). A call that finds the other kind runs as well, a little
// slower.
type kindDemand struct {
	// share is the moving average of the rich share, in millionths.
	share atomic.Int64
}

// kindWindow is how many recent runtimes the average follows (an
// exponential one: each new runtime weighs 1/kindWindow).
const kindWindow = 16

func (d *kindDemand) saw(rich bool) {
	x := int64(0)
	if rich {
		x = 1_000_000
	}
	for {
		old := d.share.Load()
		next := old + (x-old)/kindWindow
		if d.share.CompareAndSwap(old, next) {
			return
		}
	}
}

// rich reports whether enough recent runtimes wanted the rich snapshot.
func (d *kindDemand) rich() bool { return d.share.Load() >= richShare }

// richShare is the share of recent runtimes wanting the rich snapshot from
// which hosts are made rich: a rich isolate costs lean code some 4 ms
// more, a lean one costs rich code 20–30 ms to load its units, so rich
// wins from about one call in seven.
const richShare = 150_000
