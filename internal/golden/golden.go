// Package golden compares test output with files under testdata/; running
// the tests with UPDATE_GOLDEN=1 rewrites them.
package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with testdata/<name>.
func Check(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden %s: %v (run with UPDATE_GOLDEN=1 to create it)", path, err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s differs:\n got: %s\nwant: %s", name, got, want)
	}
}
