// The C interface of code-runner's binding over V8's C++ API
// (binding.cc). Go (v8.go) is its only caller. Every function that can run
// JavaScript locks and enters the isolate itself, catches what JavaScript
// throws and reports it through cr_last_error; none lets a C++ exception
// or a V8 exception cross into Go.
#ifndef CODE_RUNNER_V8_BINDING_H_
#define CODE_RUNNER_V8_BINDING_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CrIso CrIso;
typedef struct CrCall CrCall;

// A value Go holds: the low 32 bits index the isolate's handle table, the
// high 32 bits are the epoch of the scope it was made in (bit 63 marks a
// pinned handle). 0 is no value. A handle whose scope was released is
// refused (CR_STALE), never dereferenced.
typedef uint64_t CrHandle;

// Outcomes of a call that may run JavaScript.
enum {
  CR_OK = 0,
  CR_THREW = 1,       // an exception: cr_last_error describes it
  CR_TERMINATED = 2,  // TerminateExecution stopped it
  CR_STALE = 3,       // a handle outlived its scope, or a wrong kind
  CR_GONE = 4,        // the isolate is being disposed of
};

// Kinds of values, as cr_describe and native call arguments report them.
enum {
  CR_UNDEFINED = 0,
  CR_NULL = 1,
  CR_BOOLEAN = 2,
  CR_NUMBER = 3,
  CR_STRING = 4,
  CR_BYTES = 5,  // an ArrayBufferView or ArrayBuffer: data/len are its bytes
  CR_OBJECT = 6,
  CR_FUNCTION = 7,
  CR_BIGINT = 8,
  CR_SYMBOL = 9,
};

typedef struct {
  int kind;
  double num;        // numbers; booleans as 0/1
  const char* data;  // strings (UTF-8) and bytes; valid until the next call
  size_t len;
  CrHandle handle;   // the value itself (0 for primitives in native args)
} CrValueInfo;

typedef struct {
  size_t heap_limit;       // the old generation's cap in bytes (0: V8's default)
  const char* snapshot;    // a startup blob (NULL: V8's own), kept by the caller for good
  size_t snapshot_len;
  uintptr_t go_handle;     // the Go isolate's handle, given back to callbacks
  int creator;             // 1: an isolate that makes a snapshot
} CrNewParams;

typedef struct {
  size_t total_heap_size, used_heap_size, heap_size_limit, external_memory,
      malloced_memory, total_physical_size;
} CrHeapStats;

typedef struct {
  const char* message;  // String(exception)
  size_t message_len;
  const char* stack;  // exception.stack when a string, else empty
  size_t stack_len;
  int line, column;   // where a compile error is (1-based; 0: unknown)
  int position;       // its character offset in the compiled source (-1: unknown)
  CrHandle exception;
} CrError;

typedef struct {
  const char* source;
  size_t source_len;
  const char* origin;
  size_t origin_len;
  int line_offset, column_offset;
  const unsigned char* cache;  // a code cache to consume, or NULL
  size_t cache_len;
  const char* const* params;  // CompileFunction's parameter names
  const size_t* param_lens;
  int nparams;
} CrSource;

// Process-wide set-up: V8's flags (may be empty) and its platform. Once.
void cr_init(const char* flags, size_t flags_len);
const char* cr_version(void);

// Isolates. cr_new answers NULL when V8 would not make one; *from_snapshot
// says whether the context came out of params->snapshot.
CrIso* cr_new(const CrNewParams* params);
void cr_dispose(CrIso* c);
void cr_terminate(CrIso* c);       // any thread; stays asked for until cancelled
void cr_terminate_once(CrIso* c);  // from inside a native call: this unwinding only
int cr_is_terminating(CrIso* c);
void cr_cancel_terminate(CrIso* c);
int cr_heap_limit_hits(CrIso* c);  // times the near-heap-limit callback fired
int64_t cr_external_bytes(CrIso* c);  // what its ArrayBuffers hold (any thread)
void cr_heap_stats(CrIso* c, CrHeapStats* out);
int cr_from_snapshot(CrIso* c);
void cr_last_error(CrIso* c, CrError* out);

// Handles.
uint64_t cr_mark(CrIso* c);
void cr_release(CrIso* c, uint64_t mark);
CrHandle cr_pin(CrIso* c, CrHandle h);
void cr_unpin(CrIso* c, CrHandle h);

// Values.
CrHandle cr_undefined(CrIso* c);
CrHandle cr_null(CrIso* c);
CrHandle cr_boolean(CrIso* c, int b);
CrHandle cr_number(CrIso* c, double n);
CrHandle cr_string(CrIso* c, const char* s, size_t n);
CrHandle cr_bytes(CrIso* c, const void* p, size_t n);  // a Uint8Array
CrHandle cr_global(CrIso* c);
int cr_describe(CrIso* c, CrHandle h, CrValueInfo* out);  // strings: UTF-8
size_t cr_utf8_length(CrIso* c, CrHandle h);  // 0 for non-strings
int cr_get(CrIso* c, CrHandle obj, const char* key, size_t key_len, CrHandle* out);
int cr_get_index(CrIso* c, CrHandle obj, uint32_t i, CrHandle* out);
int cr_set(CrIso* c, CrHandle obj, const char* key, size_t key_len, CrHandle v);
int cr_call(CrIso* c, CrHandle fn, CrHandle recv, const CrHandle* args, int n, CrHandle* out);
int cr_json_parse(CrIso* c, const char* s, size_t n, CrHandle* out);
int cr_json_stringify(CrIso* c, CrHandle v, CrHandle* out);

// The continuation-preserved embedder data: the owner every promise job
// started from the code that runs now will run for.
void cr_set_owner(CrIso* c, double owner);
double cr_owner(CrIso* c);

// Microtasks (the policy is explicit: nothing runs them but this).
int cr_microtasks(CrIso* c);

// Compiling. cr_compile makes an unbound script (its code cache consumed
// when given: *rejected says whether V8 refused it); cr_run binds and
// runs it; cr_compile_function compiles a function body with parameters.
int cr_compile(CrIso* c, const CrSource* src, CrHandle* script, int* rejected);
int cr_run(CrIso* c, CrHandle script, CrHandle* out);
int cr_compile_function(CrIso* c, const CrSource* src, CrHandle* out);
// cr_code_cache answers V8's code cache of a script (malloc'd, cr_free).
int cr_code_cache(CrIso* c, CrHandle script, unsigned char** out, size_t* out_len);
void cr_free(void* p);
void* cr_malloc(size_t n);

// The two native functions: `native` calls Go (crGoNative), `intrinsic`
// answers in C++ what only V8 knows (promise states, modules, clones,
// byte encodings).
CrHandle cr_native_function(CrIso* c);
CrHandle cr_intrinsic_function(CrIso* c);
// Hooks the prelude provides: 0 promise rejections (event, promise,
// reason, owner), 1 dynamic import (specifier, referrer) → promise,
// 2 import.meta (module id, meta object).
int cr_set_hook(CrIso* c, int which, CrHandle fn);

// Snapshots: data a creator leaves for the isolates made from its blob,
// and the blob (malloc'd, cr_free). cr_create_blob disposes of the creator.
int cr_snapshot_add(CrIso* c, CrHandle v, size_t* index);
int cr_snapshot_data(CrIso* c, size_t index, CrHandle* out);
int cr_create_blob(CrIso* c, char** out, size_t* out_len);
// cr_blob_check answers 1 when V8 accepts a blob as made by this build.
int cr_blob_check(const char* blob, size_t len);

// Native calls: the arguments Go reads and the answer it gives.
int cr_call_argc(CrCall* call);
const CrValueInfo* cr_call_arg(CrCall* call, int i);
double cr_call_owner(CrCall* call);
void cr_ret_undefined(CrCall* call);
void cr_ret_string(CrCall* call, const char* s, size_t n);
void cr_ret_bytes(CrCall* call, const void* p, size_t n);
// cr_ret_bytes_begin answers the memory of a new n-byte ArrayBuffer for the
// caller to fill (null, with a RangeError to throw, when there is none);
// cr_ret_bytes_end answers its first used bytes as a Uint8Array.
void* cr_ret_bytes_begin(CrCall* call, size_t n);
void cr_ret_bytes_end(CrCall* call, size_t used);
void cr_ret_number(CrCall* call, double n);
void cr_ret_boolean(CrCall* call, int b);
void cr_ret_value(CrCall* call, CrHandle h);
// kind: 0 Error, 1 TypeError, 2 RangeError
void cr_ret_throw(CrCall* call, int kind, const char* msg, size_t n);

#ifdef __cplusplus
}
#endif

#endif  // CODE_RUNNER_V8_BINDING_H_
