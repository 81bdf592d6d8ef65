package capsfilter

import "regexp"

// runtimeIDPattern matches a runtime id anywhere in a string, in any case
// (docs/behaviour.md#runtime-id-capability).
var runtimeIDPattern = regexp.MustCompile(`(?i)rt-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// Redacted is what a redacted field or runtime id is replaced with in logs.
const Redacted = "<redacted>"

// ContainsRuntimeID reports whether s contains something shaped like a
// runtime id.
func ContainsRuntimeID(s string) bool {
	return runtimeIDPattern.MatchString(s)
}

// RedactRuntimeIDs replaces every runtime id in s with "<redacted>", so a
// string can be logged or shown to a caller that does not hold the id.
func RedactRuntimeIDs(s string) string {
	if !runtimeIDPattern.MatchString(s) {
		return s
	}
	return runtimeIDPattern.ReplaceAllLiteralString(s, Redacted)
}
