package v8compat_test

import (
	"strings"
	"testing"

	v8 "github.com/code-runner-go/code-runner/engines/node/v8"

	_ "github.com/code-runner-go/code-runner/internal/v8compat"
)

// TestV8LinksAndEvaluates proves the binary links against the prebuilt V8
// (which needs the __isoc23_* forwarders on glibc < 2.38) and that an isolate
// actually runs code.
func TestV8LinksAndEvaluates(t *testing.T) {
	iso, err := v8.NewIsolate(v8.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer iso.Dispose()
	s, _, err := iso.Compile(v8.Source{Code: "2+2", Origin: "link-proof.js"})
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	v, err := s.Run()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := v.Int(); got != 4 {
		t.Fatalf("2+2 = %d, want 4", got)
	}
	if !strings.HasPrefix(v8.Version(), "13.") {
		t.Fatalf("V8 version %q: want the 13.x line of github.com/tommie/v8go/deps/linux_amd64", v8.Version())
	}
}
