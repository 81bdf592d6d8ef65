package ui

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestPageJSIsTheRightModule(t *testing.T) {
	js := string(Embedded("page.js"))
	if len(js) < 1000 || !strings.Contains(js, "export {") || !strings.Contains(js, "as default") {
		t.Fatal("page.js is not a non-empty ES module with a default export")
	}
	for _, id := range []string{"code-runner/page.js#run", "code-runner/page.js#register_function", "code-runner/page.js#teardown", "cr-ui-result-body"} {
		if !strings.Contains(js, id) {
			t.Errorf("page.js lacks %q", id)
		}
	}
	for _, bad := range []string{"inject-guidance", "cr-run-net", "react.production", "__SECRET_INTERNALS", "__CLIENT_INTERNALS"} {
		if strings.Contains(js, bad) {
			t.Errorf("page.js contains %q (a renderer for the hook, a network chip, or bundled React)", bad)
		}
	}
	for _, ext := range []string{`from "react"`, `from "react/jsx-runtime"`} {
		if !strings.Contains(js, ext) {
			t.Errorf("page.js does not import %s as an external", ext)
		}
	}
}

// TestStylesAreFullyScoped parses every rule of styles.css: each selector
// must sit under [data-iii-ui="code-runner"]; no @font-face; keyframes are
// prefixed code-runner-.
func TestStylesAreFullyScoped(t *testing.T) {
	css := string(Embedded("styles.css"))
	css = regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(css, "")
	if strings.Contains(css, "@font-face") || strings.Contains(css, ":root") {
		t.Fatal("styles.css has @font-face or :root")
	}
	for _, m := range regexp.MustCompile(`@keyframes\s+([\w-]+)`).FindAllStringSubmatch(css, -1) {
		if !strings.HasPrefix(m[1], "code-runner-") {
			t.Errorf("keyframes %q is not prefixed code-runner-", m[1])
		}
	}
	body := regexp.MustCompile(`(?s)@keyframes[^{]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}`).ReplaceAllString(css, "")
	rules := 0
	for _, m := range regexp.MustCompile(`([^{}]+)\{[^{}]*\}`).FindAllStringSubmatch(body, -1) {
		for _, sel := range strings.Split(m[1], ",") {
			sel = strings.TrimSpace(sel)
			if !strings.HasPrefix(sel, `[data-iii-ui="code-runner"] `) && sel != `[data-iii-ui="code-runner"]` {
				t.Errorf("unscoped selector %q", sel)
			}
			rules++
		}
	}
	if rules < 10 {
		t.Fatalf("only %d selectors parsed", rules)
	}
}

func TestStoreServesAssetsAndRefusesOthers(t *testing.T) {
	s := NewStore()
	c, err := s.Get("code-runner/page.js")
	if err != nil || c.ContentType != "text/javascript; charset=utf-8" || c.Content != string(Embedded("page.js")) {
		t.Fatalf("%v %q", err, c.ContentType)
	}
	c, err = s.Get("code-runner/styles.css")
	if err != nil || c.ContentType != "text/css; charset=utf-8" {
		t.Fatal(err)
	}
	_, err = s.Get("code-runner/evil.js")
	if err == nil || err.Error() != "UNKNOWN_UI_ASSET: 'code-runner/evil.js' is not one of this worker's ui assets (expected one of: code-runner/page.js, code-runner/styles.css)" {
		t.Fatalf("%v", err)
	}
}

// TestDistIsFreshAgainstSources rebuilds the UI in check mode: dist/ must be
// exactly what esbuild makes of src/ (run `make ui` and commit otherwise).
func TestDistIsFreshAgainstSources(t *testing.T) {
	cmd := exec.Command("node", "build.mjs", "--check")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
}

func TestWatchDir(t *testing.T) {
	tests := map[string]struct {
		dir string
		on  bool
	}{"": {"", false}, "0": {"", false}, "false": {"", false}, "1": {"ui/dist", true}, "true": {"ui/dist", true},
		"/srv/ui": {"/srv/ui", true}, "/srv/ui/page.js": {"/srv/ui", true}}
	for in, want := range tests {
		dir, on := WatchDir(in)
		if dir != want.dir || on != want.on {
			t.Errorf("%q → %q %v", in, dir, on)
		}
	}
}

func TestHotReloadSwapsBytesAndRebinds(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"page.js", "styles.css"} {
		_ = os.WriteFile(filepath.Join(dir, f), Embedded(f), 0o644)
	}
	s := NewStore()
	var mu sync.Mutex
	var rebound []string
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = Watch(ctx, dir, s, func(a Asset) { mu.Lock(); rebound = append(rebound, a.Path); mu.Unlock() }, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	newJS := []byte("export default function setup() { /* v2 */ }\n")
	// The watcher starts in the background: the edit is repeated until the
	// served bytes change (an edit before the watch begins is not an event)
	// and the trigger was re-registered (the watcher does that just after
	// it swaps the bytes, so a look between the two sees no rebind yet).
	rebinds := func() int { mu.Lock(); defer mu.Unlock(); return len(rebound) }
	deadline := time.Now().Add(5 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		if c, _ := s.Get("code-runner/page.js"); c.Content == string(newJS) && rebinds() > 0 {
			break
		}
		if n%25 == 0 {
			_ = os.WriteFile(filepath.Join(dir, "page.js"), newJS, 0o644)
		}
		time.Sleep(20 * time.Millisecond)
	}
	c, _ := s.Get("code-runner/page.js")
	if !bytes.Equal([]byte(c.Content), newJS) {
		t.Fatal("served bytes were not swapped")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(rebound) != 1 || rebound[0] != "code-runner/page.js" {
		t.Fatalf("rebinds %v", rebound)
	}
}
