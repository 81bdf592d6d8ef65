package core

import "context"

// CallNotes receives what a service learned about the call it serves — the
// language and the kind of runtime — once it knows them (after the request
// decoded and, for a kept runtime, its lookup). The language is always one
// of the worker's engines' (the decoder refuses any other). Telemetry uses it instead
// of decoding the request a second time.
type CallNotes func(lang Lang, mode string)

type callNotesKey struct{}

// Runtime kinds a call is noted with.
const (
	ModeOneShot   = "one-shot"
	ModeKept      = "kept"
	ModeNamespace = "namespace"
)

// WithCallNotes returns ctx carrying f.
func WithCallNotes(ctx context.Context, f CallNotes) context.Context {
	return context.WithValue(ctx, callNotesKey{}, f)
}

// noteCall tells the CallNotes in ctx, if any.
func noteCall(ctx context.Context, lang Lang, mode string) {
	if f, ok := ctx.Value(callNotesKey{}).(CallNotes); ok && f != nil {
		f(lang, mode)
	}
}
