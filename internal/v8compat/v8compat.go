// Package v8compat makes the prebuilt V8 of github.com/tommie/v8go/deps link on
// glibc older than 2.38 (Debian 12 ships 2.36).
//
// That V8 references six C23 symbols (__isoc23_strtol, _strtoll, _strtoul,
// _strtoull, _sscanf, _fscanf) that older glibc lacks. This package defines
// them as weak forwarders to the classic functions, so the same tree links on
// old and new glibc alike. Import it for its side effect from every package
// that links that V8 (our binding, engines/node/v8, does):
//
//	import _ "github.com/code-runner-go/code-runner/internal/v8compat"
package v8compat

import "C"
