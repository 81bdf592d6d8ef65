// Package ui owns code-runner's injected console UI: the TypeScript/React
// sources (src/), their esbuild build into dist/ (committed, so `go build`
// needs no Node), the embedded assets, the code-runner::ui-content function
// that serves them, their console:script / console:style triggers, and the
// dev hot reload (III_CODE_RUNNER_UI_WATCH).
package ui

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
)

//go:embed dist/page.js dist/styles.css
var dist embed.FS

// Asset is one served file.
type Asset struct {
	Path        string // e.g. code-runner/page.js
	File        string // file name in the asset directory
	TriggerType string
	ContentType string
}

// Assets are code-runner's two console assets (docs/behaviour.md#console-assets-content).
var Assets = []Asset{
	{Path: "code-runner/page.js", File: "page.js", TriggerType: "console:script", ContentType: "text/javascript; charset=utf-8"},
	{Path: "code-runner/styles.css", File: "styles.css", TriggerType: "console:style", ContentType: "text/css; charset=utf-8"},
}

// Store holds the bytes served for each asset; hot reload swaps them.
type Store struct {
	mu    sync.RWMutex
	bytes map[string][]byte
}

// NewStore returns a store with the embedded dist/ contents.
func NewStore() *Store {
	s := &Store{bytes: map[string][]byte{}}
	for _, a := range Assets {
		b, err := fs.ReadFile(dist, "dist/"+a.File)
		if err != nil {
			panic(fmt.Sprintf("ui: embedded %s missing: %v", a.File, err))
		}
		s.bytes[a.Path] = b
	}
	return s
}

// Embedded returns the embedded bytes of an asset file (page.js, styles.css).
func Embedded(file string) []byte {
	b, _ := fs.ReadFile(dist, "dist/"+file)
	return b
}

// Set replaces the bytes served for path.
func (s *Store) Set(path string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes[path] = b
}

// Content is the code-runner::ui-content response.
type Content struct {
	Content     string `json:"content"`
	ContentType string `json:"content_type"`
}

// ErrUnknownAsset is returned for a path that is not one of the assets; its
// Error text is the wire message.
type ErrUnknownAsset struct{ Path string }

func (e *ErrUnknownAsset) Error() string {
	paths := make([]string, len(Assets))
	for i, a := range Assets {
		paths[i] = a.Path
	}
	sort.Strings(paths)
	return fmt.Sprintf("UNKNOWN_UI_ASSET: '%s' is not one of this worker's ui assets (expected one of: %s)", e.Path, strings.Join(paths, ", "))
}

// Get serves one asset.
func (s *Store) Get(path string) (Content, error) {
	for _, a := range Assets {
		if a.Path == path {
			s.mu.RLock()
			b := s.bytes[path]
			s.mu.RUnlock()
			return Content{Content: string(b), ContentType: a.ContentType}, nil
		}
	}
	return Content{}, &ErrUnknownAsset{Path: path}
}
