// Package v8 is code-runner's own binding over V8 (13.6, the static
// library of github.com/tommie/v8go/deps/linux_amd64): only what the
// isolate host uses — isolates with a heap cap and a near-heap-limit
// callback, one context each, compiling with code caches, running, values
// and JSON across the boundary, one native function into Go and a set of
// intrinsics answered in C++ (promise states, proxies, modules,
// structured clone, byte encodings), explicit microtasks, the
// promise-rejection, dynamic-import and import.meta hooks, the
// continuation-preserved owner of every promise job, TerminateExecution,
// heap statistics, and startup snapshots.
//
// The C++ side is binding.cc (its C interface binding.h). V8's headers are
// the ones github.com/tommie/v8go ships under deps/include, linked into
// this package's include directory by `make v8headers` (never copied into
// the repository).
//
// Values Go holds are handles into the isolate's handle table. A handle
// belongs to a scope (Mark/Release); once its scope is released the handle
// is refused with ErrStale — never used — so a value cannot outlive its
// scope by accident. Pin keeps a value for the isolate's life.
//
// An Isolate is used from one goroutine at a time; only Terminate may be
// called from any goroutine. The goroutine may move between OS threads:
// every entry takes V8's Locker, which moves V8's thread state with it.
package v8

/*
#cgo CXXFLAGS: -std=c++20 -fno-rtti -fPIC -I${SRCDIR}/include -Wall -Wno-unused-function
#cgo CXXFLAGS: -DV8_COMPRESS_POINTERS -DV8_31BIT_SMIS_ON_64BIT_ARCH -DV8_ENABLE_SANDBOX
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"runtime/cgo"
	"strings"
	"sync"
	"unsafe"

	// The static V8 library and the glibc forwarders it needs here.
	_ "github.com/code-runner-go/code-runner/internal/v8compat"
	_ "github.com/tommie/v8go/deps/linux_amd64"
)

var initOnce sync.Once

// Init sets V8's flags (space-separated, may be empty) and starts its
// platform. Only the first call in a process counts; NewIsolate calls it
// with no flags when nothing did before.
func Init(flags string) {
	initOnce.Do(func() {
		// Every process re-seeds the hash tables of a snapshot it loads
		// (else the seed would be the one the snapshot's maker drew).
		flags = strings.TrimSpace("--rehash-snapshot " + flags)
		p := C.CString(flags)
		defer C.free(unsafe.Pointer(p))
		C.cr_init(p, C.size_t(len(flags)))
	})
}

// Version is V8's version string.
func Version() string { return C.GoString(C.cr_version()) }

// Errors of calls that cannot reach JavaScript.
var (
	// ErrStale is the answer for a value whose scope was released, a
	// value of another isolate, or a value of the wrong kind.
	ErrStale = errors.New("v8: the value's scope was released, or it is not a value of this kind or isolate")
	// ErrGone is the answer for an isolate that was disposed of.
	ErrGone = errors.New("v8: the isolate was disposed of")
)

// Error is what JavaScript threw, or a termination.
type Error struct {
	// Message is String(exception); Stack its stack property when that
	// is a string (for a SyntaxError V8 makes it "SyntaxError: …").
	Message, Stack string
	// Line and Column (1-based) place a compile error; Position is its
	// character offset in the compiled source (-1 when unknown).
	Line, Column, Position int
	// Exception is the thrown value (in the scope the error was read in).
	Exception Value
	// Terminated says TerminateExecution stopped the code.
	Terminated bool
}

func (e *Error) Error() string {
	if e.Terminated {
		return "ExecutionTerminated: script execution has been terminated"
	}
	if e.Stack != "" {
		return e.Stack
	}
	return e.Message
}

// Text is the error's stack when it has one, else its message.
func (e *Error) Text() string {
	if e.Stack != "" && !e.Terminated {
		return e.Stack
	}
	return e.Error()
}

// IsTermination reports whether err is a termination.
func IsTermination(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Terminated
}

// Kind is a value's kind.
type Kind int

// The kinds of values.
const (
	KindUndefined Kind = C.CR_UNDEFINED
	KindNull      Kind = C.CR_NULL
	KindBoolean   Kind = C.CR_BOOLEAN
	KindNumber    Kind = C.CR_NUMBER
	KindString    Kind = C.CR_STRING
	KindBytes     Kind = C.CR_BYTES // ArrayBuffer or a view of one
	KindObject    Kind = C.CR_OBJECT
	KindFunction  Kind = C.CR_FUNCTION
	KindBigInt    Kind = C.CR_BIGINT
	KindSymbol    Kind = C.CR_SYMBOL
)

// Options configure a new isolate.
type Options struct {
	// HeapLimit caps the old generation, in bytes (0: V8's default).
	HeapLimit uint64
	// Snapshot is a startup blob to make the isolate and its context from
	// (nil: V8's own); V8 keeps pointing into it for the isolate's life.
	Snapshot *Blob
	// Creator makes an isolate whose context becomes a snapshot
	// (CreateBlob).
	Creator bool
	// Native answers calls of the native function (NativeFunction).
	Native func(*Call)
}

// HeapStats are V8's heap statistics.
type HeapStats struct {
	TotalHeapSize, UsedHeapSize, HeapSizeLimit, ExternalMemory, MallocedMemory, TotalPhysicalSize uint64
}

// Isolate is one V8 isolate with its one context.
type Isolate struct {
	mu     sync.Mutex // Terminate against Dispose
	c      *C.CrIso
	handle cgo.Handle
	native func(*Call)
	depth  int // native calls on the stack
}

// NewIsolate makes an isolate and its context.
func NewIsolate(o Options) (*Isolate, error) {
	Init("")
	iso := &Isolate{native: o.Native}
	iso.handle = cgo.NewHandle(iso)
	var p C.CrNewParams
	p.heap_limit = C.size_t(o.HeapLimit)
	p.go_handle = C.uintptr_t(iso.handle)
	if o.Creator {
		p.creator = 1
	}
	if o.Snapshot != nil && o.Snapshot.n > 0 && !o.Creator {
		p.snapshot = (*C.char)(o.Snapshot.p)
		p.snapshot_len = C.size_t(o.Snapshot.n)
	}
	iso.c = C.cr_new(&p)
	if iso.c == nil {
		iso.handle.Delete()
		return nil, errors.New("v8: V8 did not make an isolate")
	}
	return iso, nil
}

// FromSnapshot reports whether the context came out of a snapshot.
func (iso *Isolate) FromSnapshot() bool { return iso.c != nil && C.cr_from_snapshot(iso.c) == 1 }

// Dispose ends the isolate; every later use answers ErrGone. It must not
// be called from inside one of the isolate's own native calls.
func (iso *Isolate) Dispose() {
	if iso.depth > 0 {
		panic("v8: Dispose inside a native call of the same isolate")
	}
	iso.mu.Lock()
	c := iso.c
	iso.c = nil
	iso.mu.Unlock()
	if c == nil {
		return
	}
	C.cr_dispose(c)
	iso.handle.Delete()
}

// Terminate stops the JavaScript running in the isolate (any goroutine);
// with none running, the next entry stops at once, and so does every
// later one until CancelTerminate.
func (iso *Isolate) Terminate() {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	if iso.c != nil {
		C.cr_terminate(iso.c)
	}
}

// TerminateNow stops the JavaScript that called the native call being
// answered (process.exit): once it has unwound, the isolate runs again.
func (iso *Isolate) TerminateNow() {
	if iso.c != nil {
		C.cr_terminate_once(iso.c)
	}
}

// CancelTerminate lets the isolate run again after a termination.
func (iso *Isolate) CancelTerminate() {
	if iso.c != nil {
		C.cr_cancel_terminate(iso.c)
	}
}

// Terminating reports whether a termination is in progress.
func (iso *Isolate) Terminating() bool { return iso.c != nil && C.cr_is_terminating(iso.c) == 1 }

// HeapLimitHits counts the times the heap reached its cap: each time the
// near-heap-limit callback terminated execution and gave V8 room to
// unwind.
func (iso *Isolate) HeapLimitHits() int {
	if iso.c == nil {
		return 0
	}
	return int(C.cr_heap_limit_hits(iso.c))
}

// ExternalBytes is what the isolate's ArrayBuffers hold now — the guest's
// memory outside V8's heap (any goroutine).
func (iso *Isolate) ExternalBytes() int64 {
	iso.mu.Lock()
	defer iso.mu.Unlock()
	if iso.c == nil {
		return 0
	}
	return int64(C.cr_external_bytes(iso.c))
}

// HeapStats reads V8's heap statistics.
func (iso *Isolate) HeapStats() HeapStats {
	if iso.c == nil {
		return HeapStats{}
	}
	var s C.CrHeapStats
	C.cr_heap_stats(iso.c, &s)
	return HeapStats{uint64(s.total_heap_size), uint64(s.used_heap_size), uint64(s.heap_size_limit),
		uint64(s.external_memory), uint64(s.malloced_memory), uint64(s.total_physical_size)}
}

// outcome turns a binding status into an error.
func (iso *Isolate) outcome(rc C.int) error {
	switch rc {
	case C.CR_OK:
		return nil
	case C.CR_TERMINATED:
		return &Error{Terminated: true, Position: -1}
	case C.CR_STALE:
		return ErrStale
	case C.CR_GONE:
		return ErrGone
	}
	var e C.CrError
	C.cr_last_error(iso.c, &e)
	return &Error{
		Message:   C.GoStringN(e.message, C.int(e.message_len)),
		Stack:     C.GoStringN(e.stack, C.int(e.stack_len)),
		Line:      int(e.line),
		Column:    int(e.column),
		Position:  int(e.position),
		Exception: Value{iso, e.exception},
	}
}

// Scope marks the handles made so far; Release drops every later one.
type Scope uint64

// Mark starts a scope.
func (iso *Isolate) Mark() Scope {
	if iso.c == nil {
		return 0
	}
	return Scope(C.cr_mark(iso.c))
}

// Release drops every handle made since s was marked: values Go still
// holds from then on answer ErrStale.
func (iso *Isolate) Release(s Scope) {
	if iso.c != nil {
		C.cr_release(iso.c, C.uint64_t(s))
	}
}

// Value is a JavaScript value Go holds (the zero Value is none).
type Value struct {
	iso *Isolate
	h   C.CrHandle
}

// IsZero reports whether v holds no value.
func (v Value) IsZero() bool { return v.iso == nil || v.h == 0 }

// Isolate is the isolate v belongs to.
func (v Value) Isolate() *Isolate { return v.iso }

// Pin keeps v for the isolate's life (or until Unpin).
func (v Value) Pin() Value {
	if v.IsZero() || v.iso.c == nil {
		return Value{}
	}
	return Value{v.iso, C.cr_pin(v.iso.c, v.h)}
}

// Unpin releases a pinned value.
func (v Value) Unpin() {
	if !v.IsZero() && v.iso.c != nil {
		C.cr_unpin(v.iso.c, v.h)
	}
}

func (iso *Isolate) value(h C.CrHandle) Value {
	if h == 0 {
		return Value{}
	}
	return Value{iso, h}
}

// Undefined, Null, Bool, Number, String and Bytes make values.
func (iso *Isolate) Undefined() Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_undefined(iso.c))
}

// Null is null.
func (iso *Isolate) Null() Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_null(iso.c))
}

// Bool is a boolean.
func (iso *Isolate) Bool(b bool) Value {
	if iso.c == nil {
		return Value{}
	}
	n := C.int(0)
	if b {
		n = 1
	}
	return iso.value(C.cr_boolean(iso.c, n))
}

// Number is a number.
func (iso *Isolate) Number(f float64) Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_number(iso.c, C.double(f)))
}

// String is a string (zero Value when over V8's length limit). Every
// character of s counts, NULs included.
func (iso *Isolate) String(s string) Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_string(iso.c, cstr(s), C.size_t(len(s))))
}

// Bytes is a new Uint8Array holding a copy of b.
func (iso *Isolate) Bytes(b []byte) Value {
	if iso.c == nil {
		return Value{}
	}
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	return iso.value(C.cr_bytes(iso.c, p, C.size_t(len(b))))
}

// Global is the context's global object.
func (iso *Isolate) Global() Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_global(iso.c))
}

func cstr(s string) *C.char { return (*C.char)(unsafe.Pointer(unsafe.StringData(s))) }

// Info describes a value: its kind, a number's (or boolean's) value, and
// a string's text or the bytes of an ArrayBuffer or view (copies).
type Info struct {
	Kind  Kind
	Num   float64
	Text  string
	Bytes []byte
}

func (v Value) ok() bool { return !v.IsZero() && v.iso.c != nil }

// Describe reads v.
func (v Value) Describe() (Info, error) {
	if !v.ok() {
		return Info{}, ErrStale
	}
	var d C.CrValueInfo
	if err := v.iso.outcome(C.cr_describe(v.iso.c, v.h, &d)); err != nil {
		return Info{}, err
	}
	in := Info{Kind: Kind(d.kind), Num: float64(d.num)}
	switch in.Kind {
	case KindString:
		in.Text = C.GoStringN(d.data, C.int(d.len))
	case KindBytes:
		in.Bytes = C.GoBytes(unsafe.Pointer(d.data), C.int(d.len))
	}
	return in, nil
}

// Kind is v's kind (KindUndefined when v is stale).
func (v Value) Kind() Kind {
	in, _ := v.Describe()
	return in.Kind
}

// String is a string value's text, else "".
func (v Value) String() string {
	in, _ := v.Describe()
	return in.Text
}

// Float is a number's value (0 for anything else).
func (v Value) Float() float64 {
	in, _ := v.Describe()
	if in.Kind == KindNumber {
		return in.Num
	}
	return 0
}

// Int is a number's value truncated to an integer.
func (v Value) Int() int64 { return int64(v.Float()) }

// UTF8Len is a string's length in UTF-8 bytes, without copying it (0 for
// anything else).
func (v Value) UTF8Len() int {
	if !v.ok() {
		return 0
	}
	return int(C.cr_utf8_length(v.iso.c, v.h))
}

// Get reads v[key].
func (v Value) Get(key string) (Value, error) {
	if !v.ok() {
		return Value{}, ErrStale
	}
	var out C.CrHandle
	err := v.iso.outcome(C.cr_get(v.iso.c, v.h, cstr(key), C.size_t(len(key)), &out))
	return v.iso.value(out), err
}

// Index reads v[i].
func (v Value) Index(i uint32) (Value, error) {
	if !v.ok() {
		return Value{}, ErrStale
	}
	var out C.CrHandle
	err := v.iso.outcome(C.cr_get_index(v.iso.c, v.h, C.uint32_t(i), &out))
	return v.iso.value(out), err
}

// Set writes v[key] = val.
func (v Value) Set(key string, val Value) error {
	if !v.ok() || val.iso != v.iso {
		return ErrStale
	}
	return v.iso.outcome(C.cr_set(v.iso.c, v.h, cstr(key), C.size_t(len(key)), val.h))
}

// Call calls the function v with this set to recv (the zero Value:
// undefined).
func (v Value) Call(recv Value, args ...Value) (Value, error) {
	if !v.ok() {
		return Value{}, ErrStale
	}
	if !recv.IsZero() && recv.iso != v.iso {
		return Value{}, ErrStale
	}
	hs := make([]C.CrHandle, len(args))
	for i, a := range args {
		if a.iso != v.iso {
			return Value{}, ErrStale
		}
		hs[i] = a.h
	}
	var p *C.CrHandle
	if len(hs) > 0 {
		p = &hs[0]
	}
	var out C.CrHandle
	err := v.iso.outcome(C.cr_call(v.iso.c, v.h, recv.h, p, C.int(len(hs)), &out))
	return v.iso.value(out), err
}

// Method calls v[name](args...) with this set to v.
func (v Value) Method(name string, args ...Value) (Value, error) {
	fn, err := v.Get(name)
	if err != nil {
		return Value{}, err
	}
	return fn.Call(v, args...)
}

// JSONParse parses text with V8's JSON (never a global a guest replaced).
func (iso *Isolate) JSONParse(text string) (Value, error) {
	if iso.c == nil {
		return Value{}, ErrGone
	}
	var out C.CrHandle
	err := iso.outcome(C.cr_json_parse(iso.c, cstr(text), C.size_t(len(text)), &out))
	return iso.value(out), err
}

// JSON is JSON.stringify(v) as V8's own JSON makes it (a zero Value for
// undefined, a function or a symbol).
func (v Value) JSON() (Value, error) {
	if !v.ok() {
		return Value{}, ErrStale
	}
	var out C.CrHandle
	err := v.iso.outcome(C.cr_json_stringify(v.iso.c, v.h, &out))
	return v.iso.value(out), err
}

// SetOwner sets the continuation-preserved embedder data to owner: every
// promise job that code running from now on starts runs with it again,
// whichever entry runs that job.
func (iso *Isolate) SetOwner(owner float64) {
	if iso.c != nil {
		C.cr_set_owner(iso.c, C.double(owner))
	}
}

// Owner is the continuation-preserved owner of the code running now.
func (iso *Isolate) Owner() float64 {
	if iso.c == nil {
		return 0
	}
	return float64(C.cr_owner(iso.c))
}

// Microtasks runs the microtask queue until it is empty (the policy is
// explicit: nothing else runs it).
func (iso *Isolate) Microtasks() error {
	if iso.c == nil {
		return ErrGone
	}
	return iso.outcome(C.cr_microtasks(iso.c))
}

// Source is code to compile: its text (every byte counts, NULs included),
// the name stack traces give it, the offsets of its first line and column
// (a negative column offset takes a wrapper's prefix out of the columns
// of line 1), a code cache to consume, and for CompileFunction its
// parameters.
type Source struct {
	Code, Origin string
	Line, Column int
	Cache        []byte
	Params       []string
}

// Script is a compiled, unbound script.
type Script struct{ v Value }

func (iso *Isolate) source(s Source, pin *runtime.Pinner) C.CrSource {
	var src C.CrSource
	pin.Pin(unsafe.StringData(s.Code))
	pin.Pin(unsafe.StringData(s.Origin))
	src.source, src.source_len = cstr(s.Code), C.size_t(len(s.Code))
	src.origin, src.origin_len = cstr(s.Origin), C.size_t(len(s.Origin))
	src.line_offset, src.column_offset = C.int(s.Line), C.int(s.Column)
	if len(s.Cache) > 0 {
		pin.Pin(&s.Cache[0])
		src.cache = (*C.uchar)(unsafe.Pointer(&s.Cache[0]))
		src.cache_len = C.size_t(len(s.Cache))
	}
	if len(s.Params) > 0 {
		ptrs := make([]*C.char, len(s.Params))
		lens := make([]C.size_t, len(s.Params))
		for i, p := range s.Params {
			pin.Pin(unsafe.StringData(p))
			ptrs[i], lens[i] = cstr(p), C.size_t(len(p))
		}
		pin.Pin(&ptrs[0])
		pin.Pin(&lens[0])
		src.params = (**C.char)(unsafe.Pointer(&ptrs[0]))
		src.param_lens = &lens[0]
		src.nparams = C.int(len(s.Params))
	}
	return src
}

// Compile compiles s as a script. rejected reports that V8 refused the
// code cache given (the script was compiled from source instead).
func (iso *Isolate) Compile(s Source) (sc Script, rejected bool, err error) {
	if iso.c == nil {
		return Script{}, false, ErrGone
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	src := iso.source(s, &pin)
	var out C.CrHandle
	var rej C.int
	err = iso.outcome(C.cr_compile(iso.c, &src, &out, &rej))
	return Script{iso.value(out)}, rej == 1, err
}

// Run binds the script to the context and runs it.
func (s Script) Run() (Value, error) {
	if !s.v.ok() {
		return Value{}, ErrStale
	}
	var out C.CrHandle
	err := s.v.iso.outcome(C.cr_run(s.v.iso.c, s.v.h, &out))
	return s.v.iso.value(out), err
}

// Pin keeps the script for the isolate's life (or until Unpin).
func (s Script) Pin() Script { return Script{s.v.Pin()} }

// Unpin releases a pinned script.
func (s Script) Unpin() { s.v.Unpin() }

// CodeCache is V8's code cache of the script (compiled code only, never
// state), nil when V8 made none.
func (s Script) CodeCache() []byte {
	if !s.v.ok() {
		return nil
	}
	var p *C.uchar
	var n C.size_t
	if s.v.iso.outcome(C.cr_code_cache(s.v.iso.c, s.v.h, &p, &n)) != nil || p == nil {
		return nil
	}
	defer C.cr_free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n))
}

// CompileFunction compiles s.Code as the body of a function with s.Params
// (as node's vm.compileFunction): a body that is incomplete reads
// "Unexpected end of input", as it would in a file of its own.
func (iso *Isolate) CompileFunction(s Source) (Value, error) {
	if iso.c == nil {
		return Value{}, ErrGone
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	src := iso.source(s, &pin)
	var out C.CrHandle
	err := iso.outcome(C.cr_compile_function(iso.c, &src, &out))
	return iso.value(out), err
}

// NativeFunction makes a function whose calls Options.Native answers.
func (iso *Isolate) NativeFunction() Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_native_function(iso.c))
}

// Intrinsics makes an object of functions answered in C++: runMicrotasks,
// promiseState, proxyDetails, previewEntries, typeFlags, constructorName,
// structuredClone, encode, decode, the module operations, owner, setOwner,
// ownNonIndexProperties and jsonStringLength (binding.cc says what each
// takes).
func (iso *Isolate) Intrinsics() Value {
	if iso.c == nil {
		return Value{}
	}
	return iso.value(C.cr_intrinsic_function(iso.c))
}

// Hook names a function the binding calls on V8's behalf.
type Hook int

// The hooks.
const (
	// HookReject is called as (event, promise, reason, owner) for each
	// promise-rejection event (V8's PromiseRejectEvent numbers).
	HookReject Hook = 0
	// HookImport is called as (specifier, referrer) for import() and
	// answers its promise.
	HookImport Hook = 1
	// HookImportMeta is called as (module id, meta) when a module first
	// reads import.meta.
	HookImportMeta Hook = 2
	// HookCloneError is called as (message) to make structuredClone's
	// DataCloneError.
	HookCloneError Hook = 3
)

// SetHook installs fn as the hook.
func (iso *Isolate) SetHook(h Hook, fn Value) error {
	if iso.c == nil {
		return ErrGone
	}
	if fn.iso != iso {
		return ErrStale
	}
	return iso.outcome(C.cr_set_hook(iso.c, C.int(h), fn.h))
}

// AddSnapshotData leaves v for the isolates made from the blob this
// creator makes; SnapshotData(index) finds it there.
func (iso *Isolate) AddSnapshotData(v Value) (int, error) {
	if iso.c == nil {
		return 0, ErrGone
	}
	if v.iso != iso {
		return 0, ErrStale
	}
	var idx C.size_t
	err := iso.outcome(C.cr_snapshot_add(iso.c, v.h, &idx))
	return int(idx), err
}

// SnapshotData takes the value a creator left at index (once).
func (iso *Isolate) SnapshotData(index int) (Value, error) {
	if iso.c == nil {
		return Value{}, ErrGone
	}
	var out C.CrHandle
	err := iso.outcome(C.cr_snapshot_data(iso.c, C.size_t(index), &out))
	return iso.value(out), err
}

// CreateBlob makes the startup snapshot of a creator isolate's context
// (with its compiled code) and disposes of the isolate.
func (iso *Isolate) CreateBlob() ([]byte, error) {
	if iso.depth > 0 {
		panic("v8: CreateBlob inside a native call of the same isolate")
	}
	iso.mu.Lock()
	c := iso.c
	iso.c = nil
	iso.mu.Unlock()
	if c == nil {
		return nil, ErrGone
	}
	defer iso.handle.Delete()
	var p *C.char
	var n C.size_t
	if rc := C.cr_create_blob(c, &p, &n); rc != C.CR_OK {
		return nil, fmt.Errorf("v8: V8 made no snapshot (status %d)", int(rc))
	}
	defer C.cr_free(unsafe.Pointer(p))
	return C.GoBytes(unsafe.Pointer(p), C.int(n)), nil
}

// Blob is a startup snapshot in memory V8 may point into for as long as
// the process lives: C memory, or a read-only mapping of a file — never
// Go's heap, which V8 must not hold pointers to.
type Blob struct {
	p unsafe.Pointer
	n int
}

// NewBlob copies b into C memory that is never freed (a process makes a
// few blobs at most: tests, the snapshot's own checks).
func NewBlob(b []byte) *Blob {
	if len(b) == 0 {
		return &Blob{}
	}
	p := C.malloc(C.size_t(len(b)))
	copy(unsafe.Slice((*byte)(p), len(b)), b)
	return &Blob{p: p, n: len(b)}
}

// MappedBlob is a blob over memory the caller mapped read-only from a
// file and never unmaps (mmap's bytes are not Go's heap).
func MappedBlob(mapped []byte) *Blob {
	if len(mapped) == 0 {
		return &Blob{}
	}
	return &Blob{p: unsafe.Pointer(&mapped[0]), n: len(mapped)}
}

// Bytes is the blob's memory (read only).
func (b *Blob) Bytes() []byte {
	if b.n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(b.p), b.n)
}

// LooksValid reports whether V8 takes the blob for a snapshot of this
// build: its own version check, and that its hash tables can be rehashed
// (each process then gets a hash seed of its own). V8 checks nothing else
// in a release build: the caller checks the bytes are whole.
func (b *Blob) LooksValid() bool {
	if b == nil || b.n == 0 {
		return false
	}
	Init("")
	return C.cr_blob_check((*C.char)(b.p), C.size_t(b.n)) == 1
}

// Call is one call of the native function, as its answerer sees it. Its
// arguments are copies made before the call; nothing of it may be kept
// after the answerer returns.
type Call struct {
	c   *C.CrCall
	iso *Isolate
}

// Isolate is the isolate making the call.
func (c *Call) Isolate() *Isolate { return c.iso }

// Len is the number of arguments (at most 8 are read).
func (c *Call) Len() int { return int(C.cr_call_argc(c.c)) }

func (c *Call) arg(i int) *C.CrValueInfo {
	if i < 0 || i >= c.Len() {
		return nil
	}
	return C.cr_call_arg(c.c, C.int(i))
}

// Kind is argument i's kind (KindUndefined when absent).
func (c *Call) Kind(i int) Kind {
	if a := c.arg(i); a != nil {
		return Kind(a.kind)
	}
	return KindUndefined
}

// Str is argument i's text when it is a string ("" otherwise).
func (c *Call) Str(i int) string {
	if a := c.arg(i); a != nil && a.kind == C.CR_STRING {
		return C.GoStringN(a.data, C.int(a.len))
	}
	return ""
}

// StrView is argument i's text without a copy: valid only until the
// answerer returns, and never to be kept.
func (c *Call) StrView(i int) string {
	if a := c.arg(i); a != nil && a.kind == C.CR_STRING && a.len > 0 {
		return unsafe.String((*byte)(unsafe.Pointer(a.data)), int(a.len))
	}
	return ""
}

// Bytes is a copy of argument i's bytes when it is an ArrayBuffer or a
// view of one (nil otherwise).
func (c *Call) Bytes(i int) []byte {
	if a := c.arg(i); a != nil && a.kind == C.CR_BYTES {
		return C.GoBytes(unsafe.Pointer(a.data), C.int(a.len))
	}
	return nil
}

// BytesView is argument i's bytes without a copy: valid only until the
// answerer returns, and never to be kept.
func (c *Call) BytesView(i int) []byte {
	if a := c.arg(i); a != nil && a.kind == C.CR_BYTES && a.len > 0 {
		return unsafe.Slice((*byte)(unsafe.Pointer(a.data)), int(a.len))
	}
	return nil
}

// Num is argument i as a number (booleans 0 or 1, else 0).
func (c *Call) Num(i int) float64 {
	if a := c.arg(i); a != nil && (a.kind == C.CR_NUMBER || a.kind == C.CR_BOOLEAN) {
		return float64(a.num)
	}
	return 0
}

// Value is argument i when it is an object, function, symbol, BigInt or
// bytes (in the scope of the entry that made the call).
func (c *Call) Value(i int) Value {
	if a := c.arg(i); a != nil && a.handle != 0 {
		return Value{c.iso, a.handle}
	}
	return Value{}
}

// Owner is the continuation-preserved owner of the code that called.
func (c *Call) Owner() float64 { return float64(C.cr_call_owner(c.c)) }

// ReturnString answers s.
func (c *Call) ReturnString(s string) { C.cr_ret_string(c.c, cstr(s), C.size_t(len(s))) }

// ReturnBytes answers a new Uint8Array holding a copy of b.
func (c *Call) ReturnBytes(b []byte) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	C.cr_ret_bytes(c.c, p, C.size_t(len(b)))
}

// ReturnBytesFilled answers n bytes that fill writes straight into the new
// ArrayBuffer's memory (no copy on the way); fill answers how many of them
// it wrote, and must not keep the slice. With no memory for them the call
// throws a RangeError and fill does not run.
func (c *Call) ReturnBytesFilled(n int, fill func([]byte) int) {
	p := C.cr_ret_bytes_begin(c.c, C.size_t(n))
	if p == nil && n > 0 {
		return
	}
	var b []byte
	if n > 0 {
		b = unsafe.Slice((*byte)(p), n)
	}
	used := fill(b)
	C.cr_ret_bytes_end(c.c, C.size_t(max(0, min(used, n))))
}

// ReturnNumber answers f.
func (c *Call) ReturnNumber(f float64) { C.cr_ret_number(c.c, C.double(f)) }

// ReturnBool answers b.
func (c *Call) ReturnBool(b bool) {
	n := C.int(0)
	if b {
		n = 1
	}
	C.cr_ret_boolean(c.c, n)
}

// ReturnValue answers v.
func (c *Call) ReturnValue(v Value) {
	if v.iso == c.iso && v.h != 0 {
		C.cr_ret_value(c.c, v.h)
	}
}

// ErrorKind is the constructor of an error a native call throws.
type ErrorKind int

// The error kinds.
const (
	PlainError ErrorKind = 0
	TypeError  ErrorKind = 1
	RangeError ErrorKind = 2
)

// Throw makes the call throw a new error of kind with msg.
func (c *Call) Throw(kind ErrorKind, msg string) {
	C.cr_ret_throw(c.c, C.int(kind), cstr(msg), C.size_t(len(msg)))
}

//export crGoNative
func crGoNative(g C.uintptr_t, call *C.CrCall) {
	iso, ok := cgo.Handle(g).Value().(*Isolate)
	if !ok || iso.native == nil {
		return
	}
	c := &Call{c: call, iso: iso}
	iso.depth++
	defer func() {
		iso.depth--
		// A panic must not unwind through V8's frames: the guest gets an
		// error, the host's log the cause.
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			println("isolate host: internal error in a native call:", msg)
			c.Throw(PlainError, "code-runner: internal error in a native call ("+strings.SplitN(msg, "\n", 2)[0]+")")
		}
	}()
	iso.native(c)
}

//go:embed binding.cc binding.h
var bindingSources embed.FS

// BindingID identifies this binding's C++ (the order of its external
// references above all, which a snapshot records by index): a snapshot
// made by another binding must not be loaded.
func BindingID() string {
	h := sha256.New()
	for _, f := range []string{"binding.h", "binding.cc"} {
		b, _ := bindingSources.ReadFile(f)
		h.Write(b)
	}
	h.Write([]byte(Version()))
	return hex.EncodeToString(h.Sum(nil))
}
