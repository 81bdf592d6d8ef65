package v8compat_test

import (
	"strings"
	"testing"

	v8 "github.com/tommie/v8go"

	_ "github.com/code-runner-go/code-runner/internal/v8compat"
)

// TestV8LinksAndEvaluates proves the binary links against the prebuilt V8
// (which needs the __isoc23_* forwarders on glibc < 2.38) and that an isolate
// actually runs code.
func TestV8LinksAndEvaluates(t *testing.T) {
	iso := v8.NewIsolate()
	defer iso.Dispose()
	ctx := v8.NewContext(iso)
	defer ctx.Close()

	v, err := ctx.RunScript("2+2", "link-proof.js")
	if err != nil {
		t.Fatalf("RunScript: %v", err)
	}
	if got := v.Integer(); got != 4 {
		t.Fatalf("2+2 = %d, want 4", got)
	}
	if !strings.HasPrefix(v8.Version(), "13.") {
		t.Fatalf("V8 version %q: want the 13.x line shipped by tommie/v8go v0.34.0", v8.Version())
	}
}

// TestICUParsesNumbers exercises ICU number formatting, one of the code paths
// that calls the forwarded strtol family.
func TestICUParsesNumbers(t *testing.T) {
	iso := v8.NewIsolate()
	defer iso.Dispose()
	ctx := v8.NewContext(iso)
	defer ctx.Close()
	v, err := ctx.RunScript(`new Intl.NumberFormat("de-DE").format(1234567.891)`, "icu.js")
	if err != nil {
		t.Fatalf("RunScript: %v", err)
	}
	if got := v.String(); got != "1.234.567,891" {
		t.Fatalf("Intl format = %q, want 1.234.567,891", got)
	}
}
