// code-runner's binding over V8's C++ API (C++20). See binding.h for the
// interface and v8.go for how Go drives it.
//
// Rules every function here keeps:
//  * Entering: a v8::Locker, the isolate's scope, a HandleScope and the
//    context's scope, every time: the Go goroutine that calls may run on
//    another OS thread than the last call did, and the Locker is what makes
//    V8 move its thread-local state (the stack limit above all) with it.
//  * Nothing JavaScript throws crosses into Go: a TryCatch records it for
//    cr_last_error and the call answers CR_THREW or CR_TERMINATED.
//  * Go holds values only through the handle table. A handle names its
//    slot and the epoch of the scope it was made in; once that scope is
//    released the handle is refused (CR_STALE), never dereferenced.
//  * Nothing runs in an isolate that is being disposed of (CR_GONE).

#include "binding.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "libplatform/libplatform.h"
#include "v8.h"

#include "_cgo_export.h"

using v8::Array;
using v8::ArrayBuffer;
using v8::ArrayBufferView;
using v8::BackingStore;
using v8::Boolean;
using v8::Context;
using v8::Data;
using v8::EscapableHandleScope;
using v8::Exception;
using v8::FixedArray;
using v8::Function;
using v8::FunctionCallbackInfo;
using v8::FunctionTemplate;
using v8::Global;
using v8::HandleScope;
using v8::Int32;
using v8::Integer;
using v8::Isolate;
using v8::JSON;
using v8::Local;
using v8::Locker;
using v8::Maybe;
using v8::MaybeLocal;
using v8::Message;
using v8::Module;
using v8::ModuleRequest;
using v8::NewStringType;
using v8::Number;
using v8::Object;
using v8::Promise;
using v8::PromiseRejectMessage;
using v8::ScriptCompiler;
using v8::ScriptOrigin;
using v8::SharedArrayBuffer;
using v8::SnapshotCreator;
using v8::StartupData;
using v8::String;
using v8::TryCatch;
using v8::Uint8Array;
using v8::UnboundScript;
using v8::Value;
using v8::ValueDeserializer;
using v8::ValueSerializer;

namespace {

std::unique_ptr<v8::Platform> g_platform;
ArrayBuffer::Allocator* g_allocator = nullptr;

enum SlotKind : uint8_t { kValue = 0, kScript = 1 };

struct Slot {
  Global<Data> data;
  uint32_t epoch = 0;
  SlotKind kind = kValue;
};

constexpr uint64_t kPinnedBit = uint64_t{1} << 63;
constexpr int kMaxArgs = 8;
constexpr int kHooks = 4;  // reject, import, import.meta, clone error

// CountingAllocator is an isolate's ArrayBuffer allocator: V8's own
// (inside the sandbox), counting what the isolate's ArrayBuffers hold —
// the guest's memory outside the heap, which the off-heap cap is about.
// The count is read from any thread.
class CountingAllocator : public ArrayBuffer::Allocator {
 public:
  void* Allocate(size_t n) override { return count(g_allocator->Allocate(n), n); }
  void* AllocateUninitialized(size_t n) override { return count(g_allocator->AllocateUninitialized(n), n); }
  void Free(void* p, size_t n) override {
    g_allocator->Free(p, n);
    if (p != nullptr) bytes.fetch_sub(int64_t(n));
  }
  size_t MaxAllocationSize() const override { return g_allocator->MaxAllocationSize(); }
  v8::PageAllocator* GetPageAllocator() override { return g_allocator->GetPageAllocator(); }
  std::atomic<int64_t> bytes{0};

 private:
  void* count(void* p, size_t n) {
    if (p != nullptr) bytes.fetch_add(int64_t(n));
    return p;
  }
};

}  // namespace

struct CrIso {
  Isolate* iso = nullptr;
  SnapshotCreator* creator = nullptr;  // owns iso when set
  // The snapshot this isolate came from: V8 keeps pointing into its
  // bytes, which the caller keeps for the process's life (never Go's heap).
  StartupData startup{nullptr, 0};
  bool from_snapshot = false;
  uintptr_t go = 0;
  std::atomic<bool> disposing{false};
  std::atomic<int> heap_hits{0};
  // A termination the host asked for (cr_terminate) stays asked for: V8
  // drops a pending termination when a top-level Locker is taken, so
  // every entry asks again until cr_cancel_terminate.
  std::atomic<bool> terminate_pending{false};
  CountingAllocator allocator;

  Global<Context> ctx;
  std::vector<Slot> scoped;
  uint32_t epoch = 1;
  std::vector<Slot> pinned;
  std::vector<uint32_t> pinned_free;
  uint32_t pin_gen = 1;

  Global<Function> hooks[kHooks];
  Global<Function> resolver;  // set while a module instantiates
  int evaluating = 0;         // module evaluations on the stack
  std::vector<Global<Module>> modules;
  std::vector<Global<Object>> synth_values;  // a synthetic module's exports

  // The last error, for cr_last_error.
  Global<Value> err_exception;
  std::string err_message, err_stack;
  int err_line = 0, err_column = 0, err_position = -1;
  std::string scratch;  // cr_describe's string
};

struct CrCall {
  CrIso* c = nullptr;
  const FunctionCallbackInfo<Value>* info = nullptr;
  int argc = 0;
  CrValueInfo args[kMaxArgs];
  std::string bufs[kMaxArgs];
  double owner = 0;
  Local<Value> ret;
  bool throws = false;
  int throw_kind = 0;
  std::string throw_message;
  // The store cr_ret_bytes_begin handed out, until cr_ret_bytes_end.
  std::unique_ptr<v8::BackingStore> pending;
};

namespace {

// --- handles ---

CrHandle keep(CrIso* c, Local<Data> d, SlotKind kind = kValue) {
  if (d.IsEmpty()) return 0;
  Slot s;
  s.data.Reset(c->iso, d);
  s.epoch = c->epoch;
  s.kind = kind;
  c->scoped.push_back(std::move(s));
  return (uint64_t{c->epoch} << 32) | uint64_t(c->scoped.size());
}

const Slot* slot(CrIso* c, CrHandle h) {
  if (h == 0) return nullptr;
  uint32_t idx = uint32_t(h);
  uint32_t tag = uint32_t(h >> 32);
  if (idx == 0) return nullptr;
  if (h & kPinnedBit) {
    uint32_t gen = tag & 0x7fffffffu;
    if (idx > c->pinned.size()) return nullptr;
    const Slot& s = c->pinned[idx - 1];
    if (s.epoch != gen || s.data.IsEmpty()) return nullptr;
    return &s;
  }
  if (idx > c->scoped.size()) return nullptr;
  const Slot& s = c->scoped[idx - 1];
  if (s.epoch != tag || s.data.IsEmpty()) return nullptr;
  return &s;
}

bool value(CrIso* c, CrHandle h, Local<Value>* out) {
  const Slot* s = slot(c, h);
  if (s == nullptr || s->kind != kValue) return false;
  *out = s->data.Get(c->iso).As<Value>();
  return true;
}

bool script(CrIso* c, CrHandle h, Local<UnboundScript>* out) {
  const Slot* s = slot(c, h);
  if (s == nullptr || s->kind != kScript) return false;
  *out = s->data.Get(c->iso).As<UnboundScript>();
  return true;
}

Local<String> str(Isolate* iso, const char* p, size_t n) {
  if (n > size_t(String::kMaxLength) * 3) return String::Empty(iso);
  return String::NewFromUtf8(iso, p, NewStringType::kNormal, int(n)).FromMaybe(String::Empty(iso));
}

Local<String> lit(Isolate* iso, const char* s) {
  return String::NewFromUtf8(iso, s, NewStringType::kInternalized).ToLocalChecked();
}

void utf8(Isolate* iso, Local<String> s, std::string* out) {
  size_t n = s->Utf8LengthV2(iso);
  out->resize(n);
  if (n > 0) s->WriteUtf8V2(iso, out->data(), n, String::WriteFlags::kReplaceInvalidUtf8);
}

// --- errors ---

void clear_error(CrIso* c) {
  c->err_exception.Reset();
  c->err_message.clear();
  c->err_stack.clear();
  c->err_line = c->err_column = 0;
  c->err_position = -1;
}

// ok is a call's outcome when JavaScript returned normally: a kill the
// host asked for meanwhile (cr_terminate) wins even when V8 dropped it on
// the way (an exception out of the rejection hook, say).
int ok(CrIso* c) { return c->terminate_pending.load() ? CR_TERMINATED : CR_OK; }

// failed records what tc caught and answers the outcome: a termination, or
// an exception (its text, its stack, where a compile error is).
int failed(CrIso* c, Local<Context> ctx, TryCatch& tc) {
  Isolate* iso = c->iso;
  clear_error(c);
  if (tc.HasTerminated() || iso->IsExecutionTerminating()) return CR_TERMINATED;
  if (!tc.HasCaught()) {
    c->err_message = "Error: the operation failed without an exception";
    return CR_THREW;
  }
  Local<Value> e = tc.Exception();
  c->err_exception.Reset(iso, e);
  Local<Message> m = tc.Message();
  if (!m.IsEmpty()) {
    c->err_line = m->GetLineNumber(ctx).FromMaybe(0);
    c->err_column = m->GetStartColumn(ctx).FromMaybe(-1) + 1;
    c->err_position = m->GetStartPosition();
  }
  // Reading the text may run guest code (a toString, a stack getter): it
  // runs in this entry, under its deadline, and its own failure is not the
  // error.
  {
    TryCatch inner(iso);
    Local<String> s;
    if (e->ToString(ctx).ToLocal(&s)) {
      utf8(iso, s, &c->err_message);
    } else {
      if (inner.HasTerminated() || iso->IsExecutionTerminating()) return CR_TERMINATED;
      c->err_message = "unstringifiable thrown value";
    }
  }
  if (e->IsObject()) {
    TryCatch inner(iso);
    Local<Value> st;
    if (e.As<Object>()->Get(ctx, lit(iso, "stack")).ToLocal(&st) && st->IsString()) {
      utf8(iso, st.As<String>(), &c->err_stack);
    } else if (inner.HasTerminated() || iso->IsExecutionTerminating()) {
      return CR_TERMINATED;
    }
  }
  return CR_THREW;
}

// --- native calls ---

void describe_arg(CrIso* c, Local<Context> ctx, Local<Value> v, CrValueInfo* out, std::string* buf) {
  Isolate* iso = c->iso;
  *out = CrValueInfo{};
  if (v->IsUndefined()) {
    out->kind = CR_UNDEFINED;
  } else if (v->IsNull()) {
    out->kind = CR_NULL;
  } else if (v->IsBoolean()) {
    out->kind = CR_BOOLEAN;
    out->num = v->IsTrue() ? 1 : 0;
  } else if (v->IsNumber()) {
    out->kind = CR_NUMBER;
    out->num = v.As<Number>()->Value();
  } else if (v->IsString()) {
    out->kind = CR_STRING;
    utf8(iso, v.As<String>(), buf);
    out->data = buf->data();
    out->len = buf->size();
  } else if (v->IsArrayBufferView()) {
    // The bytes are copied: an on-heap typed array moves with the heap,
    // and Go must never see memory the guest can free or detach.
    Local<ArrayBufferView> view = v.As<ArrayBufferView>();
    size_t n = view->ByteLength();
    buf->resize(n);
    if (n > 0) view->CopyContents(buf->data(), n);
    out->kind = CR_BYTES;
    out->data = buf->data();
    out->len = n;
  } else if (v->IsArrayBuffer() || v->IsSharedArrayBuffer()) {
    std::shared_ptr<BackingStore> bs = v->IsArrayBuffer() ? v.As<ArrayBuffer>()->GetBackingStore()
                                                          : v.As<SharedArrayBuffer>()->GetBackingStore();
    size_t n = v->IsArrayBuffer() ? v.As<ArrayBuffer>()->ByteLength() : v.As<SharedArrayBuffer>()->ByteLength();
    buf->assign(static_cast<const char*>(bs->Data()), n);
    out->kind = CR_BYTES;
    out->data = buf->data();
    out->len = n;
  } else if (v->IsFunction()) {
    out->kind = CR_FUNCTION;
  } else if (v->IsBigInt()) {
    out->kind = CR_BIGINT;
  } else if (v->IsSymbol()) {
    out->kind = CR_SYMBOL;
  } else {
    out->kind = CR_OBJECT;
  }
  if (!v->IsNullOrUndefined() && !v->IsString() && !v->IsNumber() && !v->IsBoolean()) out->handle = keep(c, v);
}

double owner_of(Isolate* iso) {
  Local<Value> d = iso->GetContinuationPreservedEmbedderData();
  if (!d.IsEmpty() && d->IsNumber()) return d.As<Number>()->Value();
  return 0;
}

void native_callback(const FunctionCallbackInfo<Value>& info) {
  Isolate* iso = info.GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  if (c == nullptr || c->go == 0 || c->disposing.load()) return;
  HandleScope hs(iso);
  Local<Context> ctx = iso->GetCurrentContext();
  auto call = std::make_unique<CrCall>();
  call->c = c;
  call->info = &info;
  call->argc = std::min(info.Length(), kMaxArgs);
  // Every handle made during the call (its arguments, what Go makes) is
  // released when it returns: Go keeps none of them (it pins what it must).
  size_t mark = c->scoped.size();
  for (int i = 0; i < call->argc; i++) describe_arg(c, ctx, info[i], &call->args[i], &call->bufs[i]);
  call->owner = owner_of(iso);
  crGoNative(c->go, call.get());
  if (!c->disposing.load() && c->scoped.size() >= mark) {
    c->scoped.resize(mark);
    c->epoch++;
  }
  if (iso->IsExecutionTerminating()) return;
  if (call->throws) {
    Local<String> msg = str(iso, call->throw_message.data(), call->throw_message.size());
    Local<Value> e;
    switch (call->throw_kind) {
      case 1:
        e = Exception::TypeError(msg);
        break;
      case 2:
        e = Exception::RangeError(msg);
        break;
      default:
        e = Exception::Error(msg);
    }
    iso->ThrowException(e);
    return;
  }
  if (!call->ret.IsEmpty()) info.GetReturnValue().Set(call->ret);
}

// --- intrinsics: what only V8 knows, answered without Go ---

enum Intrinsic {
  kRunMicrotasks,
  kPromiseState,
  kProxyDetails,
  kPreviewEntries,
  kTypeFlags,
  kConstructorName,
  kStructuredClone,
  kEncode,
  kDecode,
  kModuleCompile,
  kModuleSynthetic,
  kModuleRequests,
  kModuleInstantiate,
  kModuleEvaluate,
  kModuleNamespace,
  kModuleStatus,
  kOwner,
  kSetOwner,
  kOwnNonIndexProperties,
  kJsonStringLength,
  kDetailString,
  kUtf8Length,
  kIntrinsicCount
};

const char* const kIntrinsicNames[kIntrinsicCount] = {
    "runMicrotasks",  "promiseState",       "proxyDetails",   "previewEntries",     "typeFlags",
    "constructorName", "structuredClone",   "encode",         "decode",             "moduleCompile",
    "moduleSynthetic", "moduleRequests",    "moduleInstantiate", "moduleEvaluate",  "moduleNamespace",
    "moduleStatus",   "owner",              "setOwner",       "ownNonIndexProperties", "jsonStringLength",
    "detailString",   "utf8Length",
};

// Byte encodings, as node names them.
enum Encoding { kUtf8 = 0, kLatin1 = 1, kAscii = 2, kBase64 = 3, kBase64Url = 4, kHex = 5, kUtf16le = 6 };

void throw_type(Isolate* iso, const char* msg) { iso->ThrowException(Exception::TypeError(lit(iso, msg))); }

bool module_id(CrIso* c, Local<Value> v, Local<Module>* out, size_t* id_out = nullptr) {
  if (!v->IsNumber()) return false;
  double d = v.As<Number>()->Value();
  if (!(d >= 0) || d >= double(c->modules.size()) || d != std::floor(d)) return false;
  size_t id = size_t(d);
  if (c->modules[id].IsEmpty()) return false;
  *out = c->modules[id].Get(c->iso);
  if (id_out) *id_out = id;
  return true;
}

int find_module(CrIso* c, Local<Module> m) {
  for (size_t i = 0; i < c->modules.size(); i++) {
    if (!c->modules[i].IsEmpty() && c->modules[i].Get(c->iso) == m) return int(i);
  }
  return -1;
}

MaybeLocal<Value> synthetic_steps(Local<Context> ctx, Local<Module> m) {
  Isolate* iso = ctx->GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  int id = find_module(c, m);
  if (id < 0 || size_t(id) >= c->synth_values.size() || c->synth_values[id].IsEmpty()) {
    throw_type(iso, "code-runner: unknown synthetic module");
    return MaybeLocal<Value>();
  }
  Local<Object> values = c->synth_values[id].Get(iso);
  Local<Array> names;
  if (!values->GetOwnPropertyNames(ctx).ToLocal(&names)) return MaybeLocal<Value>();
  for (uint32_t i = 0; i < names->Length(); i++) {
    Local<Value> k, v;
    if (!names->Get(ctx, i).ToLocal(&k) || !k->IsString()) continue;
    if (!values->Get(ctx, k).ToLocal(&v)) return MaybeLocal<Value>();
    if (m->SetSyntheticModuleExport(iso, k.As<String>(), v).IsNothing()) return MaybeLocal<Value>();
  }
  c->synth_values[id].Reset();
  Local<Promise::Resolver> r;
  if (!Promise::Resolver::New(ctx).ToLocal(&r)) return MaybeLocal<Value>();
  std::ignore = r->Resolve(ctx, v8::Undefined(iso));
  return r->GetPromise();
}

MaybeLocal<Module> resolve_static(Local<Context> ctx, Local<String> specifier, Local<FixedArray>,
                                  Local<Module> referrer) {
  Isolate* iso = ctx->GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  if (c->resolver.IsEmpty()) {
    throw_type(iso, "code-runner: no module resolver");
    return MaybeLocal<Module>();
  }
  Local<Value> args[2] = {specifier, Integer::New(iso, find_module(c, referrer))};
  Local<Value> r;
  if (!c->resolver.Get(iso)->Call(ctx, v8::Undefined(iso), 2, args).ToLocal(&r)) return MaybeLocal<Module>();
  Local<Module> m;
  if (!module_id(c, r, &m)) {
    throw_type(iso, "code-runner: the module resolver answered no module");
    return MaybeLocal<Module>();
  }
  return m;
}

// --- structured clone (V8's serializer, as node's structuredClone) ---

class Cloner : public ValueSerializer::Delegate, public ValueDeserializer::Delegate {
 public:
  explicit Cloner(CrIso* c) : c_(c) {}
  void ThrowDataCloneError(Local<String> message) override {
    Isolate* iso = c_->iso;
    Local<Context> ctx = iso->GetCurrentContext();
    Local<Value> e;
    if (!c_->hooks[3].IsEmpty()) {
      Local<Value> args[1] = {message};
      TryCatch tc(iso);
      if (!c_->hooks[3].Get(iso)->Call(ctx, v8::Undefined(iso), 1, args).ToLocal(&e)) {
        if (tc.HasTerminated() || iso->IsExecutionTerminating()) {
          iso->TerminateExecution();
          return;
        }
        e = Local<Value>();
      }
    }
    // Thrown outside the TryCatch above, which would otherwise swallow it.
    iso->ThrowException(e.IsEmpty() ? Exception::Error(message) : e);
  }
  Maybe<uint32_t> GetSharedArrayBufferId(Isolate* iso, Local<SharedArrayBuffer> sab) override {
    for (size_t i = 0; i < sabs_.size(); i++) {
      if (sabs_[i].Get(iso) == sab) return v8::Just(uint32_t(i));
    }
    sabs_.emplace_back(iso, sab);
    return v8::Just(uint32_t(sabs_.size() - 1));
  }
  MaybeLocal<SharedArrayBuffer> GetSharedArrayBufferFromId(Isolate* iso, uint32_t id) override {
    if (id >= sabs_.size()) return MaybeLocal<SharedArrayBuffer>();
    return sabs_[id].Get(iso);
  }

 private:
  CrIso* c_;
  std::vector<Global<SharedArrayBuffer>> sabs_;
};

void structured_clone(CrIso* c, const FunctionCallbackInfo<Value>& info) {
  Isolate* iso = c->iso;
  Local<Context> ctx = iso->GetCurrentContext();
  Cloner cloner(c);
  ValueSerializer ser(iso, &cloner);
  std::vector<Local<ArrayBuffer>> transfer;
  if (info.Length() > 1 && info[1]->IsArray()) {
    Local<Array> list = info[1].As<Array>();
    for (uint32_t i = 0; i < list->Length(); i++) {
      Local<Value> v;
      if (!list->Get(ctx, i).ToLocal(&v)) return;
      if (!v->IsArrayBuffer()) return throw_type(iso, "Found invalid object in transferList");
      Local<ArrayBuffer> ab = v.As<ArrayBuffer>();
      if (std::find(transfer.begin(), transfer.end(), ab) != transfer.end()) {
        cloner.ThrowDataCloneError(lit(iso, "Transfer list contains duplicate ArrayBuffer"));
        return;
      }
      if (!ab->IsDetachable()) {
        cloner.ThrowDataCloneError(lit(iso, "An ArrayBuffer could not be transferred."));
        return;
      }
      ser.TransferArrayBuffer(uint32_t(transfer.size()), ab);
      transfer.push_back(ab);
    }
  }
  ser.WriteHeader();
  if (ser.WriteValue(ctx, info.Length() > 0 ? info[0] : Local<Value>(v8::Undefined(iso))).IsNothing()) return;
  std::vector<std::shared_ptr<BackingStore>> stores;
  for (Local<ArrayBuffer> ab : transfer) {
    stores.push_back(ab->GetBackingStore());
    if (ab->Detach(Local<Value>()).IsNothing()) return;
  }
  std::pair<uint8_t*, size_t> out = ser.Release();
  struct Freer {
    void operator()(uint8_t* p) const { free(p); }
  };
  std::unique_ptr<uint8_t, Freer> owned(out.first);
  ValueDeserializer des(iso, out.first, out.second, &cloner);
  for (size_t i = 0; i < stores.size(); i++) des.TransferArrayBuffer(uint32_t(i), ArrayBuffer::New(iso, stores[i]));
  if (des.ReadHeader(ctx).IsNothing()) return;
  Local<Value> v;
  if (!des.ReadValue(ctx).ToLocal(&v)) return;
  info.GetReturnValue().Set(v);
}

// --- byte encodings (node's Buffer) ---

const char kBase64Chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const char kBase64UrlChars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// kBase64Table is node's lenient base64 table: both alphabets' values,
// -1 for every other byte (which the decoder skips).
struct Base64Table {
  int8_t v[256];
  constexpr Base64Table() : v{} {
    for (int i = 0; i < 256; i++) {
      int x = -1;
      if (i >= 'A' && i <= 'Z') x = i - 'A';
      if (i >= 'a' && i <= 'z') x = i - 'a' + 26;
      if (i >= '0' && i <= '9') x = i - '0' + 52;
      if (i == '+' || i == '-') x = 62;
      if (i == '/' || i == '_') x = 63;
      v[i] = int8_t(x);
    }
  }
  int operator[](uint8_t c) const { return v[c]; }
};
constexpr Base64Table kBase64Table;

int hex_value(unsigned c) {
  if (c >= '0' && c <= '9') return int(c - '0');
  if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
  return -1;
}

// new_store is a backing store of n bytes the caller fills whole (so not
// zeroed first), or null — with a RangeError thrown, as V8's own
// allocations throw — when there is no memory for it.
std::unique_ptr<BackingStore> new_store(Isolate* iso, size_t n) {
  std::unique_ptr<BackingStore> bs = ArrayBuffer::NewBackingStore(
      iso, n, v8::BackingStoreInitializationMode::kUninitialized, v8::BackingStoreOnFailureMode::kReturnNull);
  if (!bs) iso->ThrowException(Exception::RangeError(lit(iso, "Array buffer allocation failed")));
  return bs;
}

Local<Value> new_bytes(Isolate* iso, const uint8_t* p, size_t n) {
  std::unique_ptr<BackingStore> bs = new_store(iso, n);
  if (!bs) return Local<Value>();
  if (n > 0) memcpy(bs->Data(), p, n);
  Local<ArrayBuffer> ab = ArrayBuffer::New(iso, std::move(bs));
  return Uint8Array::New(ab, 0, n);
}

// one_byte reads s as Latin-1 (each char's low byte).
std::string one_byte(Isolate* iso, Local<String> s) {
  std::string out;
  out.resize(s->Length());
  if (!out.empty()) s->WriteOneByteV2(iso, 0, s->Length(), reinterpret_cast<uint8_t*>(out.data()));
  return out;
}

void encode(CrIso* c, const FunctionCallbackInfo<Value>& info) {
  Isolate* iso = c->iso;
  if (info.Length() < 2 || !info[0]->IsString() || !info[1]->IsInt32()) return throw_type(iso, "encode(string, encoding)");
  Local<String> s = info[0].As<String>();
  int enc = info[1].As<Int32>()->Value();
  std::unique_ptr<BackingStore> bs;
  switch (enc) {
    case kUtf8: {
      size_t n = s->Utf8LengthV2(iso);
      bs = new_store(iso, n);
      if (!bs) return;
      if (n > 0) s->WriteUtf8V2(iso, static_cast<char*>(bs->Data()), n, String::WriteFlags::kReplaceInvalidUtf8);
      break;
    }
    case kLatin1:
    case kAscii: {
      size_t n = s->Length();
      bs = new_store(iso, n);
      if (!bs) return;
      if (n > 0) s->WriteOneByteV2(iso, 0, uint32_t(n), static_cast<uint8_t*>(bs->Data()));
      break;
    }
    case kUtf16le: {
      size_t n = s->Length();
      bs = new_store(iso, n * 2);
      if (!bs) return;
      if (n > 0) {
        std::vector<uint16_t> units(n);
        s->WriteV2(iso, 0, uint32_t(n), units.data());
        uint8_t* p = static_cast<uint8_t*>(bs->Data());
        for (size_t i = 0; i < n; i++) {
          p[2 * i] = uint8_t(units[i] & 0xff);
          p[2 * i + 1] = uint8_t(units[i] >> 8);
        }
      }
      break;
    }
    case kHex: {
      std::string in = one_byte(iso, s);
      size_t n = in.size() / 2;
      std::vector<uint8_t> out;
      out.reserve(n);
      for (size_t i = 0; i < n; i++) {
        int hi = hex_value(uint8_t(in[2 * i])), lo = hex_value(uint8_t(in[2 * i + 1]));
        if (hi < 0 || lo < 0) break;  // as node: stop at the first non-hex pair
        out.push_back(uint8_t(hi << 4 | lo));
      }
      bs = new_store(iso, out.size());
      if (!bs) return;
      if (!out.empty()) memcpy(bs->Data(), out.data(), out.size());
      break;
    }
    case kBase64:
    case kBase64Url: {
      // node's decoder: both alphabets; characters outside them are
      // skipped; the first '=' ends the data. Whole groups of four clean
      // characters go four at a time.
      std::string in = one_byte(iso, s);
      const uint8_t* q = reinterpret_cast<const uint8_t*>(in.data());
      size_t len = in.size();
      std::vector<uint8_t> out(len / 4 * 3 + 3);
      uint8_t* w = out.data();
      size_t i = 0;
      for (; i + 4 <= len; i += 4) {
        int a = kBase64Table[q[i]], b = kBase64Table[q[i + 1]], c2 = kBase64Table[q[i + 2]], d = kBase64Table[q[i + 3]];
        if ((a | b | c2 | d) < 0) break;
        uint32_t v = uint32_t(a) << 18 | uint32_t(b) << 12 | uint32_t(c2) << 6 | uint32_t(d);
        w[0] = uint8_t(v >> 16);
        w[1] = uint8_t(v >> 8);
        w[2] = uint8_t(v);
        w += 3;
      }
      uint32_t acc = 0;
      int bits = 0;
      for (; i < len; i++) {
        if (q[i] == '=') break;
        int v = kBase64Table[q[i]];
        if (v < 0) continue;
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
          bits -= 8;
          *w++ = uint8_t(acc >> bits);
        }
      }
      size_t n = size_t(w - out.data());
      bs = new_store(iso, n);
      if (!bs) return;
      if (n > 0) memcpy(bs->Data(), out.data(), n);
      break;
    }
    default:
      return throw_type(iso, "encode: unknown encoding");
  }
  size_t n = bs->ByteLength();
  Local<ArrayBuffer> ab = ArrayBuffer::New(iso, std::move(bs));
  info.GetReturnValue().Set(Uint8Array::New(ab, 0, n));
}

void string_too_long(Isolate* iso) {
  Local<Value> e = Exception::Error(lit(iso, "Cannot create a string longer than 0x1fffffe8 characters"));
  Local<Context> ctx = iso->GetCurrentContext();
  std::ignore = e.As<Object>()->Set(ctx, lit(iso, "code"), lit(iso, "ERR_STRING_TOO_LONG"));
  iso->ThrowException(e);
}

void decode(CrIso* c, const FunctionCallbackInfo<Value>& info) {
  Isolate* iso = c->iso;
  if (info.Length() < 4 || !info[0]->IsArrayBufferView() || !info[3]->IsInt32()) {
    return throw_type(iso, "decode(view, start, end, encoding)");
  }
  Local<ArrayBufferView> view = info[0].As<ArrayBufferView>();
  size_t len = view->ByteLength();
  double ds = info[1]->IsNumber() ? info[1].As<Number>()->Value() : 0;
  double de = info[2]->IsNumber() ? info[2].As<Number>()->Value() : double(len);
  size_t start = ds > 0 ? size_t(std::min(ds, double(len))) : 0;
  size_t end = de > 0 ? size_t(std::min(de, double(len))) : 0;
  if (end < start) end = start;
  size_t n = end - start;
  // The view's bytes, read where they are (an on-heap array is copied
  // first: it can move). Nothing below allocates on V8's heap until the
  // string is made from them.
  std::string copy;
  const uint8_t* base;
  if (view->HasBuffer()) {
    std::shared_ptr<BackingStore> bs = view->Buffer()->GetBackingStore();
    base = static_cast<const uint8_t*>(bs->Data()) + view->ByteOffset();
    if (bs->Data() == nullptr) base = reinterpret_cast<const uint8_t*>("");
  } else {
    copy.resize(len);
    if (len > 0) view->CopyContents(copy.data(), len);
    base = reinterpret_cast<const uint8_t*>(copy.data());
  }
  const uint8_t* p = base + start;
  int enc = info[3].As<Int32>()->Value();
  MaybeLocal<String> out;
  switch (enc) {
    case kUtf8:
      if (n > size_t(String::kMaxLength) * 3) return string_too_long(iso);
      out = String::NewFromUtf8(iso, reinterpret_cast<const char*>(p), NewStringType::kNormal, int(n));
      break;
    case kLatin1:
      if (n > size_t(String::kMaxLength)) return string_too_long(iso);
      out = String::NewFromOneByte(iso, p, NewStringType::kNormal, int(n));
      break;
    case kAscii: {
      if (n > size_t(String::kMaxLength)) return string_too_long(iso);
      size_t high = 0;  // the first byte with its top bit set, if any
      while (high < n && p[high] < 0x80) high++;
      if (high == n) {
        out = String::NewFromOneByte(iso, p, NewStringType::kNormal, int(n));
        break;
      }
      std::string a(reinterpret_cast<const char*>(p), n);
      for (size_t i = high; i < n; i++) a[i] = char(uint8_t(a[i]) & 0x7f);
      out = String::NewFromOneByte(iso, reinterpret_cast<const uint8_t*>(a.data()), NewStringType::kNormal, int(n));
      break;
    }
    case kUtf16le: {
      size_t units = n / 2;
      if (units > size_t(String::kMaxLength)) return string_too_long(iso);
      std::vector<uint16_t> u(units);
      for (size_t i = 0; i < units; i++) u[i] = uint16_t(p[2 * i] | (p[2 * i + 1] << 8));
      out = String::NewFromTwoByte(iso, u.data(), NewStringType::kNormal, int(units));
      break;
    }
    case kHex: {
      if (n * 2 > size_t(String::kMaxLength)) return string_too_long(iso);
      static const char digits[] = "0123456789abcdef";
      std::string h(n * 2, '0');
      for (size_t i = 0; i < n; i++) {
        h[2 * i] = digits[p[i] >> 4];
        h[2 * i + 1] = digits[p[i] & 15];
      }
      out = String::NewFromOneByte(iso, reinterpret_cast<const uint8_t*>(h.data()), NewStringType::kNormal, int(h.size()));
      break;
    }
    case kBase64:
    case kBase64Url: {
      const char* alpha = enc == kBase64 ? kBase64Chars : kBase64UrlChars;
      size_t m = (n + 2) / 3 * 4;
      if (m > size_t(String::kMaxLength)) return string_too_long(iso);
      std::string b(m, '=');
      char* w = b.data();
      size_t i = 0;
      for (; i + 2 < n; i += 3) {
        uint32_t v = uint32_t(p[i]) << 16 | uint32_t(p[i + 1]) << 8 | p[i + 2];
        w[0] = alpha[v >> 18];
        w[1] = alpha[(v >> 12) & 63];
        w[2] = alpha[(v >> 6) & 63];
        w[3] = alpha[v & 63];
        w += 4;
      }
      if (i < n) {
        uint32_t v = uint32_t(p[i]) << 16 | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0);
        *w++ = alpha[v >> 18];
        *w++ = alpha[(v >> 12) & 63];
        if (i + 1 < n) *w++ = alpha[(v >> 6) & 63];
        if (enc == kBase64) w = b.data() + m;  // the '=' padding stays
      }
      size_t used = size_t(w - b.data());
      out = String::NewFromOneByte(iso, reinterpret_cast<const uint8_t*>(b.data()), NewStringType::kNormal, int(used));
      break;
    }
    default:
      return throw_type(iso, "decode: unknown encoding");
  }
  Local<String> s;
  if (!out.ToLocal(&s)) return string_too_long(iso);
  info.GetReturnValue().Set(s);
}

// json_string_length is the length in UTF-8 bytes of JSON.stringify(s),
// counted without making it; *pairs gets the number of surrogate pairs in s
// (its code points are its length less them).
double json_string_length(Isolate* iso, Local<String> s, double* pairs) {
  *pairs = 0;
  int n = s->Length();
  double total = 2;
  const int chunk = 4096;
  std::vector<uint16_t> buf(chunk);
  for (int at = 0; at < n; at += chunk) {
    int k = std::min(chunk, n - at);
    s->WriteV2(iso, uint32_t(at), uint32_t(k), buf.data());
    for (int i = 0; i < k; i++) {
      uint16_t u = buf[i];
      if (u == '"' || u == '\\' || u == '\b' || u == '\f' || u == '\n' || u == '\r' || u == '\t') {
        total += 2;
      } else if (u < 0x20) {
        total += 6;
      } else if (u < 0x80) {
        total += 1;
      } else if (u < 0x800) {
        total += 2;
      } else if (u >= 0xD800 && u <= 0xDBFF) {
        // A pair is 4 bytes; a lone surrogate is escaped as \uXXXX.
        uint16_t next = 0;
        if (i + 1 < k) {
          next = buf[i + 1];
        } else if (at + i + 1 < n) {
          s->WriteV2(iso, uint32_t(at + i + 1), 1, &next);
        }
        if (next >= 0xDC00 && next <= 0xDFFF) {
          total += 4;
          *pairs += 1;
          if (i + 1 < k) {
            i++;
          } else {
            at++;  // the pair's low half starts the next chunk: skip it
          }
        } else {
          total += 6;
        }
      } else if (u >= 0xDC00 && u <= 0xDFFF) {
        total += 6;
      } else {
        total += 3;
      }
    }
  }
  return total;
}

enum TypeFlag {
  kIsPromise = 1 << 0,
  kIsProxy = 1 << 1,
  kIsMapIterator = 1 << 2,
  kIsSetIterator = 1 << 3,
  kIsGeneratorObject = 1 << 4,
  kIsModuleNamespace = 1 << 5,
  kIsExternal = 1 << 6,
  kIsAsyncFunction = 1 << 7,
  kIsGeneratorFunction = 1 << 8,
  kIsArgumentsObject = 1 << 9,
  kIsBoxedPrimitive = 1 << 10,
  kIsNativeError = 1 << 11,
  kIsWeakMap = 1 << 12,
  kIsWeakSet = 1 << 13,
  kIsMap = 1 << 14,
  kIsSet = 1 << 15,
  kIsDate = 1 << 16,
  kIsRegExp = 1 << 17,
  kIsArrayBuffer = 1 << 18,
  kIsSharedArrayBuffer = 1 << 19,
  kIsTypedArray = 1 << 20,
  kIsDataView = 1 << 21,
  kIsStringObject = 1 << 22,
  kIsNumberObject = 1 << 23,
  kIsBooleanObject = 1 << 24,
  kIsBigIntObject = 1 << 25,
  kIsSymbolObject = 1 << 26,
  kIsWeakRef = 1 << 27,
};

int type_flags(Local<Value> v) {
  int f = 0;
  if (v->IsPromise()) f |= kIsPromise;
  if (v->IsProxy()) f |= kIsProxy;
  if (v->IsMapIterator()) f |= kIsMapIterator;
  if (v->IsSetIterator()) f |= kIsSetIterator;
  if (v->IsGeneratorObject()) f |= kIsGeneratorObject;
  if (v->IsModuleNamespaceObject()) f |= kIsModuleNamespace;
  if (v->IsExternal()) f |= kIsExternal;
  if (v->IsAsyncFunction()) f |= kIsAsyncFunction;
  if (v->IsGeneratorFunction()) f |= kIsGeneratorFunction;
  if (v->IsArgumentsObject()) f |= kIsArgumentsObject;
  if (v->IsStringObject() || v->IsNumberObject() || v->IsBooleanObject() || v->IsBigIntObject() || v->IsSymbolObject()) {
    f |= kIsBoxedPrimitive;
  }
  if (v->IsNativeError()) f |= kIsNativeError;
  if (v->IsWeakMap()) f |= kIsWeakMap;
  if (v->IsWeakSet()) f |= kIsWeakSet;
  if (v->IsMap()) f |= kIsMap;
  if (v->IsSet()) f |= kIsSet;
  if (v->IsDate()) f |= kIsDate;
  if (v->IsRegExp()) f |= kIsRegExp;
  if (v->IsArrayBuffer()) f |= kIsArrayBuffer;
  if (v->IsSharedArrayBuffer()) f |= kIsSharedArrayBuffer;
  if (v->IsTypedArray()) f |= kIsTypedArray;
  if (v->IsDataView()) f |= kIsDataView;
  if (v->IsStringObject()) f |= kIsStringObject;
  if (v->IsNumberObject()) f |= kIsNumberObject;
  if (v->IsBooleanObject()) f |= kIsBooleanObject;
  if (v->IsBigIntObject()) f |= kIsBigIntObject;
  if (v->IsSymbolObject()) f |= kIsSymbolObject;
  if (v->IsWeakRef()) f |= kIsWeakRef;
  return f;
}

void intrinsic_callback(const FunctionCallbackInfo<Value>& info) {
  Isolate* iso = info.GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  if (c == nullptr || c->disposing.load()) return;
  HandleScope hs(iso);
  Local<Context> ctx = iso->GetCurrentContext();
  int op = info.Data()->IsInt32() ? info.Data().As<Int32>()->Value() : -1;
  Local<Value> a1 = info.Length() > 0 ? info[0] : Local<Value>(v8::Undefined(iso));
  auto rv = info.GetReturnValue();
  switch (op) {
    case kRunMicrotasks:
      iso->PerformMicrotaskCheckpoint();
      return;
    case kPromiseState: {
      if (!a1->IsPromise()) return;
      Local<Promise> p = a1.As<Promise>();
      Local<Array> out = Array::New(iso, 2);
      int state = p->State() == Promise::kPending ? 0 : p->State() == Promise::kFulfilled ? 1 : 2;
      std::ignore = out->Set(ctx, 0, Integer::New(iso, state));
      if (state != 0) std::ignore = out->Set(ctx, 1, p->Result());
      rv.Set(out);
      return;
    }
    case kProxyDetails: {
      if (!a1->IsProxy()) return;
      Local<v8::Proxy> p = a1.As<v8::Proxy>();
      bool full = info.Length() < 2 || info[1]->BooleanValue(iso);
      if (!full) {
        rv.Set(p->GetTarget());
        return;
      }
      Local<Array> out = Array::New(iso, 2);
      std::ignore = out->Set(ctx, 0, p->GetTarget());
      std::ignore = out->Set(ctx, 1, p->GetHandler());
      rv.Set(out);
      return;
    }
    case kPreviewEntries: {
      if (!a1->IsObject()) return;
      bool is_key_value = false;
      Local<Array> entries;
      if (!a1.As<Object>()->PreviewEntries(&is_key_value).ToLocal(&entries)) return;
      if (info.Length() < 2 || !info[1]->BooleanValue(iso)) {
        rv.Set(entries);
        return;
      }
      Local<Array> out = Array::New(iso, 2);
      std::ignore = out->Set(ctx, 0, entries);
      std::ignore = out->Set(ctx, 1, Boolean::New(iso, is_key_value));
      rv.Set(out);
      return;
    }
    case kTypeFlags:
      rv.Set(Integer::New(iso, type_flags(a1)));
      return;
    case kConstructorName:
      if (!a1->IsObject()) return throw_type(iso, "The \"object\" argument must be of type object");
      rv.Set(a1.As<Object>()->GetConstructorName());
      return;
    case kStructuredClone:
      structured_clone(c, info);
      return;
    case kEncode:
      encode(c, info);
      return;
    case kDecode:
      decode(c, info);
      return;
    case kModuleCompile: {
      if (info.Length() < 2 || !info[0]->IsString() || !info[1]->IsString()) return throw_type(iso, "moduleCompile(source, name)");
      ScriptOrigin origin(info[1], 0, 0, false, -1, Local<Value>(), false, false, true);
      ScriptCompiler::Source src(info[0].As<String>(), origin);
      Local<Module> m;
      if (!ScriptCompiler::CompileModule(iso, &src).ToLocal(&m)) return;
      c->modules.emplace_back(iso, m);
      c->synth_values.emplace_back();
      rv.Set(Integer::New(iso, int(c->modules.size() - 1)));
      return;
    }
    case kModuleSynthetic: {
      // (name, values): the module exports every own string key of values.
      if (info.Length() < 2 || !info[0]->IsString() || !info[1]->IsObject()) return throw_type(iso, "moduleSynthetic(name, values)");
      Local<Object> values = info[1].As<Object>();
      Local<Array> names;
      if (!values->GetOwnPropertyNames(ctx).ToLocal(&names)) return;
      std::vector<Local<String>> exports;
      for (uint32_t i = 0; i < names->Length(); i++) {
        Local<Value> k;
        if (!names->Get(ctx, i).ToLocal(&k)) return;
        if (k->IsString()) exports.push_back(k.As<String>());
      }
      Local<Module> m = Module::CreateSyntheticModule(
          iso, info[0].As<String>(), v8::MemorySpan<const Local<String>>(exports.data(), exports.size()), synthetic_steps);
      c->modules.emplace_back(iso, m);
      c->synth_values.emplace_back(iso, values);
      rv.Set(Integer::New(iso, int(c->modules.size() - 1)));
      return;
    }
    case kModuleRequests: {
      Local<Module> m;
      if (!module_id(c, a1, &m)) return throw_type(iso, "moduleRequests: no such module");
      Local<FixedArray> reqs = m->GetModuleRequests();
      Local<Array> out = Array::New(iso, reqs->Length());
      for (int i = 0; i < reqs->Length(); i++) {
        Local<ModuleRequest> r = reqs->Get(ctx, i).As<ModuleRequest>();
        std::ignore = out->Set(ctx, uint32_t(i), r->GetSpecifier());
      }
      rv.Set(out);
      return;
    }
    case kModuleInstantiate: {
      Local<Module> m;
      if (!module_id(c, a1, &m) || info.Length() < 2 || !info[1]->IsFunction()) {
        return throw_type(iso, "moduleInstantiate(id, resolve)");
      }
      // V8's linking is not re-entrant: a graph instantiated from inside
      // the resolver of another that shares a module still linking faults
      // inside V8. Nothing legitimate nests (import() is deferred to a job
      // of its own), so nesting is refused.
      if (!c->resolver.IsEmpty()) {
        return throw_type(iso, "moduleInstantiate: a module graph is already being instantiated");
      }
      if (m->GetStatus() != Module::kUninstantiated) return;  // linked before, or failed before
      c->resolver.Reset(iso, info[1].As<Function>());
      std::ignore = m->InstantiateModule(ctx, resolve_static);
      c->resolver.Reset();
      return;
    }
    case kModuleEvaluate: {
      Local<Module> m;
      if (!module_id(c, a1, &m)) return throw_type(iso, "moduleEvaluate: no such module");
      // Evaluate CHECKs (aborting the process) on a module not linked or
      // still being evaluated; a module whose evaluation was terminated is
      // errored with no exception, and evaluating it again would answer a
      // promise that never settles.
      Module::Status st = m->GetStatus();
      if (st == Module::kUninstantiated || st == Module::kInstantiating) {
        return throw_type(iso, "moduleEvaluate: the module is not instantiated");
      }
      if (st == Module::kEvaluating || c->evaluating > 0 || !c->resolver.IsEmpty()) {
        return throw_type(iso, "moduleEvaluate: a module is being instantiated or evaluated");
      }
      if (st == Module::kErrored && m->GetException()->IsNull()) {
        return throw_type(iso, "moduleEvaluate: the module's evaluation was stopped");
      }
      c->evaluating++;
      Local<Value> r;
      bool ok = m->Evaluate(ctx).ToLocal(&r);
      c->evaluating--;
      if (!ok) return;
      rv.Set(r);
      return;
    }
    case kModuleNamespace: {
      Local<Module> m;
      if (!module_id(c, a1, &m)) return throw_type(iso, "moduleNamespace: no such module");
      if (m->GetStatus() < Module::kInstantiated) return throw_type(iso, "moduleNamespace: the module is not instantiated");
      rv.Set(m->GetModuleNamespace());
      return;
    }
    case kModuleStatus: {
      Local<Module> m;
      if (!module_id(c, a1, &m)) return throw_type(iso, "moduleStatus: no such module");
      Local<Array> out = Array::New(iso, 2);
      std::ignore = out->Set(ctx, 0, Integer::New(iso, int(m->GetStatus())));
      if (m->GetStatus() == Module::kErrored) std::ignore = out->Set(ctx, 1, m->GetException());
      rv.Set(out);
      return;
    }
    case kOwner:
      rv.Set(Number::New(iso, owner_of(iso)));
      return;
    case kSetOwner:
      if (a1->IsNumber()) iso->SetContinuationPreservedEmbedderData(a1);
      return;
    case kOwnNonIndexProperties: {
      if (!a1->IsObject()) return;
      bool only_enumerable = info.Length() > 1 && info[1]->IsNumber() && info[1].As<Number>()->Value() == 2;
      v8::PropertyFilter filter = only_enumerable ? v8::PropertyFilter::ONLY_ENUMERABLE : v8::PropertyFilter::ALL_PROPERTIES;
      Local<Array> keys;
      if (!a1.As<Object>()
               ->GetPropertyNames(ctx, v8::KeyCollectionMode::kOwnOnly, filter, v8::IndexFilter::kSkipIndices,
                                  v8::KeyConversionMode::kConvertToString)
               .ToLocal(&keys)) {
        return;
      }
      rv.Set(keys);
      return;
    }
    case kJsonStringLength: {
      // [bytes of JSON.stringify(s), code points of s], neither made.
      if (!a1->IsString()) return;
      double pairs = 0;
      double bytes = json_string_length(iso, a1.As<String>(), &pairs);
      Local<Array> out = Array::New(iso, 2);
      std::ignore = out->Set(ctx, 0, Number::New(iso, bytes));
      std::ignore = out->Set(ctx, 1, Number::New(iso, double(a1.As<String>()->Length()) - pairs));
      rv.Set(out);
      return;
    }
    case kUtf8Length:
      // The bytes of s in UTF-8 (a lone surrogate counts as U+FFFD's 3).
      if (!a1->IsString()) return;
      rv.Set(Number::New(iso, double(a1.As<String>()->Utf8LengthV2(iso))));
      return;
    case kDetailString: {
      // V8's string of a value that runs none of its code (node's
      // noSideEffectsToString): "#<Object>" for a plain object.
      Local<String> s;
      if (a1->ToDetailString(ctx).ToLocal(&s)) rv.Set(s);
      return;
    }
  }
  throw_type(iso, "code-runner: unknown intrinsic");
}

// --- isolate callbacks ---

size_t near_heap_limit(void* data, size_t current, size_t) {
  CrIso* c = static_cast<CrIso*>(data);
  c->heap_hits.fetch_add(1);
  c->iso->TerminateExecution();
  // Room to unwind the termination: returning the same limit would let V8
  // end the process.
  return current + current / 2 + (16u << 20);
}

[[noreturn]] void die_oom(const char* location, const v8::OOMDetails& details) {
  // The host's memory exit (hostproto): the worker answers the memory
  // cap's text. Only async-signal-safe calls from here on.
  static const char msg[] = "isolate host: guest memory over its cap (out of memory in V8)\n";
  ssize_t w = write(2, msg, sizeof msg - 1);
  (void)w;
  (void)location;
  (void)details;
  _exit(9);
}

// die_v8_fatal sees V8's own fatal errors (FATAL and CHECK), which end
// the process whatever it does: the ones a guest's allocation causes
// ("invalid size", "invalid table size") are its memory cap's death.
void die_v8_fatal(const char* file, int line, const char* message) {
  bool memory = message != nullptr && (strstr(message, "invalid size") != nullptr ||
                                       strstr(message, "invalid table size") != nullptr ||
                                       strstr(message, "nvalid array length") != nullptr);
  fprintf(stderr, "isolate host: V8 fatal error%s: %s\n", memory ? " (out of memory)" : "", message ? message : "?");
  fflush(stderr);
  (void)file;
  (void)line;
  _exit(memory ? 9 : 8);
}

[[noreturn]] void die_fatal(const char* location, const char* message) {
  fprintf(stderr, "isolate host: V8 fatal error in %s: %s\n", location ? location : "?", message ? message : "?");
  fflush(stderr);
  _exit(8);
}

void on_reject(PromiseRejectMessage msg) {
  Local<Promise> p = msg.GetPromise();
  Isolate* iso = p->GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  if (c == nullptr || c->disposing.load() || c->hooks[0].IsEmpty() || iso->IsExecutionTerminating()) return;
  HandleScope hs(iso);
  Local<Context> ctx = iso->GetCurrentContext();
  if (ctx.IsEmpty()) return;
  Local<Value> v = msg.GetValue();
  if (v.IsEmpty()) v = v8::Undefined(iso);
  Local<Value> args[4] = {Integer::New(iso, int(msg.GetEvent())), p, v, Number::New(iso, owner_of(iso))};
  TryCatch tc(iso);
  std::ignore = c->hooks[0].Get(iso)->Call(ctx, v8::Undefined(iso), 4, args);
  // V8 drops an exception thrown out of this callback, a termination
  // included: it is asked for again, so the code that rejected stops too.
  if (tc.HasTerminated() || iso->IsExecutionTerminating()) iso->TerminateExecution();
}

MaybeLocal<Promise> on_import(Local<Context> ctx, Local<Data>, Local<Value> resource_name, Local<String> specifier,
                              Local<FixedArray>) {
  Isolate* iso = ctx->GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  EscapableHandleScope hs(iso);
  Local<Promise::Resolver> r;
  if (!Promise::Resolver::New(ctx).ToLocal(&r)) return MaybeLocal<Promise>();
  if (c == nullptr || c->hooks[1].IsEmpty()) {
    std::ignore = r->Reject(ctx, Exception::Error(lit(iso, "import() is not available here")));
    return hs.Escape(r->GetPromise());
  }
  Local<Value> referrer = resource_name.IsEmpty() ? Local<Value>(v8::Undefined(iso)) : resource_name;
  Local<Value> args[2] = {specifier, referrer};
  Local<Value> out;
  if (!c->hooks[1].Get(iso)->Call(ctx, v8::Undefined(iso), 2, args).ToLocal(&out)) return MaybeLocal<Promise>();
  if (out->IsPromise()) return hs.Escape(out.As<Promise>());
  std::ignore = r->Resolve(ctx, out);
  return hs.Escape(r->GetPromise());
}

void on_import_meta(Local<Context> ctx, Local<Module> m, Local<Object> meta) {
  Isolate* iso = ctx->GetIsolate();
  CrIso* c = static_cast<CrIso*>(iso->GetData(0));
  if (c == nullptr || c->hooks[2].IsEmpty()) return;
  Local<Value> args[2] = {Integer::New(iso, find_module(c, m)), meta};
  std::ignore = c->hooks[2].Get(iso)->Call(ctx, v8::Undefined(iso), 2, args);
}

// Every C++ function V8 may find in a snapshot: the native and intrinsic
// callbacks and a synthetic module's steps. Null-terminated.
const intptr_t kExternalRefs[] = {
    reinterpret_cast<intptr_t>(native_callback),
    reinterpret_cast<intptr_t>(intrinsic_callback),
    reinterpret_cast<intptr_t>(synthetic_steps),
    0,
};

void setup_isolate(CrIso* c) {
  Isolate* iso = c->iso;
  iso->SetData(0, c);
  iso->SetMicrotasksPolicy(v8::MicrotasksPolicy::kExplicit);
  iso->AddNearHeapLimitCallback(near_heap_limit, c);
  iso->SetOOMErrorHandler(die_oom);
  iso->SetFatalErrorHandler(die_fatal);
  iso->SetPromiseRejectCallback(on_reject);
  iso->SetHostImportModuleDynamicallyCallback(on_import);
  iso->SetHostInitializeImportMetaObjectCallback(on_import_meta);
}

#define ENTER_OR(c, failure)                                    \
  if (c == nullptr || c->disposing.load()) {                    \
    return failure;                                             \
  }                                                             \
  Locker locker(c->iso);                                        \
  Isolate::Scope isolate_scope(c->iso);                         \
  if (c->terminate_pending.load()) c->iso->TerminateExecution(); \
  HandleScope handle_scope(c->iso);                             \
  Local<Context> ctx = c->ctx.Get(c->iso);                      \
  Context::Scope context_scope(ctx);

#define ENTER(c) ENTER_OR(c, CR_GONE)

}  // namespace

extern "C" {

void cr_init(const char* flags, size_t flags_len) {
  if (g_platform) return;
  if (flags_len > 0) v8::V8::SetFlagsFromString(flags, flags_len);
  v8::V8::SetFatalErrorHandler(die_v8_fatal);
  g_platform = v8::platform::NewDefaultPlatform();
  v8::V8::InitializePlatform(g_platform.get());
  v8::V8::Initialize();
  g_allocator = ArrayBuffer::Allocator::NewDefaultAllocator();
}

const char* cr_version(void) { return v8::V8::GetVersion(); }

CrIso* cr_new(const CrNewParams* p) {
  auto* c = new CrIso();
  c->go = p->go_handle;
  Isolate::CreateParams params;
  params.array_buffer_allocator = &c->allocator;
  params.external_references = kExternalRefs;
  if (p->heap_limit > 0) params.constraints.ConfigureDefaultsFromHeapSize(0, p->heap_limit);
  if (p->snapshot != nullptr && p->snapshot_len > 0 && !p->creator) {
    c->startup = StartupData{p->snapshot, int(p->snapshot_len)};
    params.snapshot_blob = &c->startup;
    c->from_snapshot = true;
  }
  if (p->creator) {
    c->creator = new SnapshotCreator(params);
    c->iso = c->creator->GetIsolate();
  } else {
    c->iso = Isolate::New(params);
  }
  if (c->iso == nullptr) {
    delete c;
    return nullptr;
  }
  setup_isolate(c);
  Locker locker(c->iso);
  Isolate::Scope isolate_scope(c->iso);
  HandleScope handle_scope(c->iso);
  Local<Context> ctx = Context::New(c->iso);
  if (ctx.IsEmpty()) return nullptr;  // V8 would rather abort; kept as a guard
  c->ctx.Reset(c->iso, ctx);
  return c;
}

int cr_from_snapshot(CrIso* c) { return c->from_snapshot ? 1 : 0; }

void cr_dispose(CrIso* c) {
  if (c == nullptr || c->disposing.exchange(true)) return;
  {
    Locker locker(c->iso);
    Isolate::Scope isolate_scope(c->iso);
    c->scoped.clear();
    c->pinned.clear();
    for (auto& h : c->hooks) h.Reset();
    c->resolver.Reset();
    c->modules.clear();
    c->synth_values.clear();
    c->err_exception.Reset();
    c->ctx.Reset();
  }
  if (c->creator != nullptr) {
    delete c->creator;  // disposes of its isolate
  } else {
    c->iso->Dispose();
  }
  delete c;
}

void cr_terminate(CrIso* c) {
  if (c != nullptr && !c->disposing.load()) {
    c->terminate_pending.store(true);
    c->iso->TerminateExecution();
  }
}

void cr_terminate_once(CrIso* c) {
  if (c != nullptr && !c->disposing.load()) c->iso->TerminateExecution();
}

int cr_is_terminating(CrIso* c) { return c != nullptr && c->iso->IsExecutionTerminating() ? 1 : 0; }

void cr_cancel_terminate(CrIso* c) {
  if (c != nullptr && !c->disposing.load()) {
    c->terminate_pending.store(false);
    c->iso->CancelTerminateExecution();
  }
}

int cr_heap_limit_hits(CrIso* c) { return c->heap_hits.load(); }

int64_t cr_external_bytes(CrIso* c) { return c == nullptr ? 0 : c->allocator.bytes.load(); }

void cr_heap_stats(CrIso* c, CrHeapStats* out) {
  *out = CrHeapStats{};
  if (c == nullptr || c->disposing.load()) return;
  Locker locker(c->iso);
  Isolate::Scope isolate_scope(c->iso);
  v8::HeapStatistics hs;
  c->iso->GetHeapStatistics(&hs);
  out->total_heap_size = hs.total_heap_size();
  out->used_heap_size = hs.used_heap_size();
  out->heap_size_limit = hs.heap_size_limit();
  out->external_memory = hs.external_memory();
  out->malloced_memory = hs.malloced_memory();
  out->total_physical_size = hs.total_physical_size();
}

void cr_last_error(CrIso* c, CrError* out) {
  *out = CrError{};
  out->message = c->err_message.data();
  out->message_len = c->err_message.size();
  out->stack = c->err_stack.data();
  out->stack_len = c->err_stack.size();
  out->line = c->err_line;
  out->column = c->err_column;
  out->position = c->err_position;
  if (!c->err_exception.IsEmpty() && !c->disposing.load()) {
    Locker locker(c->iso);
    Isolate::Scope isolate_scope(c->iso);
    HandleScope hs(c->iso);
    out->exception = keep(c, c->err_exception.Get(c->iso));
  }
}

uint64_t cr_mark(CrIso* c) { return (uint64_t{c->epoch} << 32) | uint64_t(c->scoped.size()); }

void cr_release(CrIso* c, uint64_t mark) {
  if (c == nullptr || c->disposing.load()) return;
  size_t size = size_t(uint32_t(mark));
  if (size < c->scoped.size()) {
    Locker locker(c->iso);
    Isolate::Scope isolate_scope(c->iso);
    c->scoped.resize(size);
  }
  c->epoch++;
}

CrHandle cr_pin(CrIso* c, CrHandle h) {
  const Slot* s;
  {
    if (c == nullptr || c->disposing.load()) return 0;
    s = slot(c, h);
    if (s == nullptr) return 0;
    if (h & kPinnedBit) return h;
  }
  Locker locker(c->iso);
  Isolate::Scope isolate_scope(c->iso);
  HandleScope hs(c->iso);
  Slot p;
  p.data.Reset(c->iso, s->data.Get(c->iso));
  p.kind = s->kind;
  p.epoch = c->pin_gen++ & 0x7fffffffu;
  if (p.epoch == 0) p.epoch = c->pin_gen++ & 0x7fffffffu;
  size_t idx;
  if (!c->pinned_free.empty()) {
    idx = c->pinned_free.back();
    c->pinned_free.pop_back();
    c->pinned[idx] = std::move(p);
  } else {
    c->pinned.push_back(std::move(p));
    idx = c->pinned.size() - 1;
  }
  return kPinnedBit | (uint64_t(c->pinned[idx].epoch) << 32) | uint64_t(idx + 1);
}

void cr_unpin(CrIso* c, CrHandle h) {
  if (c == nullptr || c->disposing.load() || !(h & kPinnedBit) || slot(c, h) == nullptr) return;
  Locker locker(c->iso);
  Isolate::Scope isolate_scope(c->iso);
  size_t idx = uint32_t(h) - 1;
  c->pinned[idx].data.Reset();
  c->pinned[idx].epoch = 0;
  c->pinned_free.push_back(uint32_t(idx));
}

CrHandle cr_undefined(CrIso* c) {
  ENTER_OR(c, 0)
  return keep(c, v8::Undefined(c->iso));
}

CrHandle cr_null(CrIso* c) {
  ENTER_OR(c, 0)
  return keep(c, v8::Null(c->iso));
}

CrHandle cr_boolean(CrIso* c, int b) {
  ENTER_OR(c, 0)
  return keep(c, Boolean::New(c->iso, b != 0));
}

CrHandle cr_number(CrIso* c, double n) {
  ENTER_OR(c, 0)
  return keep(c, Number::New(c->iso, n));
}

CrHandle cr_string(CrIso* c, const char* s, size_t n) {
  ENTER_OR(c, 0)
  if (n > size_t(String::kMaxLength)) return 0;
  Local<String> v;
  if (!String::NewFromUtf8(c->iso, s, NewStringType::kNormal, int(n)).ToLocal(&v)) return 0;
  return keep(c, v);
}

CrHandle cr_bytes(CrIso* c, const void* p, size_t n) {
  ENTER_OR(c, 0)
  TryCatch tc(c->iso);  // no memory for them: no handle, nothing left thrown
  return keep(c, new_bytes(c->iso, static_cast<const uint8_t*>(p), n));
}

CrHandle cr_global(CrIso* c) {
  ENTER_OR(c, 0)
  return keep(c, ctx->Global());
}

int cr_describe(CrIso* c, CrHandle h, CrValueInfo* out) {
  ENTER(c)
  Local<Value> v;
  if (!value(c, h, &v)) return CR_STALE;
  describe_arg(c, ctx, v, out, &c->scratch);
  out->handle = h;
  return CR_OK;
}

size_t cr_utf8_length(CrIso* c, CrHandle h) {
  ENTER_OR(c, 0)
  Local<Value> v;
  if (!value(c, h, &v) || !v->IsString()) return 0;
  return v.As<String>()->Utf8LengthV2(c->iso);
}

int cr_get(CrIso* c, CrHandle obj, const char* key, size_t key_len, CrHandle* out) {
  ENTER(c)
  *out = 0;
  Local<Value> o;
  if (!value(c, obj, &o) || !o->IsObject()) return CR_STALE;
  TryCatch tc(c->iso);
  Local<Value> v;
  if (!o.As<Object>()->Get(ctx, str(c->iso, key, key_len)).ToLocal(&v)) return failed(c, ctx, tc);
  *out = keep(c, v);
  return ok(c);
}

int cr_get_index(CrIso* c, CrHandle obj, uint32_t i, CrHandle* out) {
  ENTER(c)
  *out = 0;
  Local<Value> o;
  if (!value(c, obj, &o) || !o->IsObject()) return CR_STALE;
  TryCatch tc(c->iso);
  Local<Value> v;
  if (!o.As<Object>()->Get(ctx, i).ToLocal(&v)) return failed(c, ctx, tc);
  *out = keep(c, v);
  return ok(c);
}

int cr_set(CrIso* c, CrHandle obj, const char* key, size_t key_len, CrHandle h) {
  ENTER(c)
  Local<Value> o, v;
  if (!value(c, obj, &o) || !o->IsObject() || !value(c, h, &v)) return CR_STALE;
  TryCatch tc(c->iso);
  if (o.As<Object>()->Set(ctx, str(c->iso, key, key_len), v).IsNothing()) return failed(c, ctx, tc);
  return ok(c);
}

int cr_call(CrIso* c, CrHandle fn, CrHandle recv, const CrHandle* args, int n, CrHandle* out) {
  ENTER(c)
  *out = 0;
  Local<Value> f, r;
  if (!value(c, fn, &f) || !f->IsFunction()) return CR_STALE;
  if (recv == 0) {
    r = v8::Undefined(c->iso);
  } else if (!value(c, recv, &r)) {
    return CR_STALE;
  }
  std::vector<Local<Value>> argv(size_t(std::max(n, 0)));
  for (int i = 0; i < n; i++) {
    if (!value(c, args[i], &argv[i])) return CR_STALE;
  }
  TryCatch tc(c->iso);
  Local<Value> v;
  if (!f.As<Function>()->Call(ctx, r, n, argv.data()).ToLocal(&v)) return failed(c, ctx, tc);
  *out = keep(c, v);
  return ok(c);
}

int cr_json_parse(CrIso* c, const char* s, size_t n, CrHandle* out) {
  ENTER(c)
  *out = 0;
  TryCatch tc(c->iso);
  Local<Value> v;
  if (!JSON::Parse(ctx, str(c->iso, s, n)).ToLocal(&v)) return failed(c, ctx, tc);
  *out = keep(c, v);
  return ok(c);
}

int cr_json_stringify(CrIso* c, CrHandle h, CrHandle* out) {
  ENTER(c)
  *out = 0;
  Local<Value> v;
  if (!value(c, h, &v)) return CR_STALE;
  TryCatch tc(c->iso);
  Local<String> s;
  if (!JSON::Stringify(ctx, v).ToLocal(&s)) return failed(c, ctx, tc);
  *out = keep(c, s);
  return ok(c);
}

void cr_set_owner(CrIso* c, double owner) {
  if (c == nullptr || c->disposing.load()) return;
  Locker locker(c->iso);
  Isolate::Scope isolate_scope(c->iso);
  HandleScope hs(c->iso);
  c->iso->SetContinuationPreservedEmbedderData(Number::New(c->iso, owner));
}

double cr_owner(CrIso* c) {
  if (c == nullptr || c->disposing.load()) return 0;
  Locker locker(c->iso);
  Isolate::Scope isolate_scope(c->iso);
  HandleScope hs(c->iso);
  return owner_of(c->iso);
}

int cr_microtasks(CrIso* c) {
  ENTER(c)
  TryCatch tc(c->iso);
  c->iso->PerformMicrotaskCheckpoint();
  if (tc.HasTerminated() || c->iso->IsExecutionTerminating()) return CR_TERMINATED;
  return ok(c);
}

static ScriptOrigin origin_of(CrIso* c, const CrSource* src, bool module) {
  return ScriptOrigin(str(c->iso, src->origin, src->origin_len), src->line_offset, src->column_offset, false, -1,
                      Local<Value>(), false, false, module);
}

int cr_compile(CrIso* c, const CrSource* src, CrHandle* out, int* rejected) {
  ENTER(c)
  *out = 0;
  *rejected = 0;
  if (src->source_len > size_t(String::kMaxLength)) {
    clear_error(c);
    c->err_message = "RangeError: the source is too long";
    return CR_THREW;
  }
  TryCatch tc(c->iso);
  Local<String> text;
  if (!String::NewFromUtf8(c->iso, src->source, NewStringType::kNormal, int(src->source_len)).ToLocal(&text)) {
    return failed(c, ctx, tc);
  }
  ScriptCompiler::CachedData* cache = nullptr;
  if (src->cache != nullptr && src->cache_len > 0) {
    cache = new ScriptCompiler::CachedData(src->cache, int(src->cache_len), ScriptCompiler::CachedData::BufferNotOwned);
  }
  ScriptCompiler::Source source(text, origin_of(c, src, false), cache);  // owns cache
  ScriptCompiler::CompileOptions opts = cache ? ScriptCompiler::kConsumeCodeCache : ScriptCompiler::kNoCompileOptions;
  Local<UnboundScript> s;
  if (!ScriptCompiler::CompileUnboundScript(c->iso, &source, opts).ToLocal(&s)) return failed(c, ctx, tc);
  if (cache != nullptr && source.GetCachedData()->rejected) *rejected = 1;
  *out = keep(c, s, kScript);
  return ok(c);
}

int cr_run(CrIso* c, CrHandle h, CrHandle* out) {
  ENTER(c)
  *out = 0;
  Local<UnboundScript> s;
  if (!script(c, h, &s)) return CR_STALE;
  TryCatch tc(c->iso);
  Local<Value> v;
  if (!s->BindToCurrentContext()->Run(ctx).ToLocal(&v)) return failed(c, ctx, tc);
  *out = keep(c, v);
  return ok(c);
}

int cr_compile_function(CrIso* c, const CrSource* src, CrHandle* out) {
  ENTER(c)
  *out = 0;
  TryCatch tc(c->iso);
  Local<String> text;
  if (src->source_len > size_t(String::kMaxLength) ||
      !String::NewFromUtf8(c->iso, src->source, NewStringType::kNormal, int(src->source_len)).ToLocal(&text)) {
    if (tc.HasCaught() || tc.HasTerminated()) return failed(c, ctx, tc);
    clear_error(c);
    c->err_message = "RangeError: the source is too long";
    return CR_THREW;
  }
  std::vector<Local<String>> params;
  for (int i = 0; i < src->nparams; i++) params.push_back(str(c->iso, src->params[i], src->param_lens[i]));
  ScriptCompiler::Source source(text, origin_of(c, src, false));
  Local<Function> fn;
  if (!ScriptCompiler::CompileFunction(ctx, &source, params.size(), params.data(), 0, nullptr).ToLocal(&fn)) {
    return failed(c, ctx, tc);
  }
  *out = keep(c, fn);
  return ok(c);
}

int cr_code_cache(CrIso* c, CrHandle h, unsigned char** out, size_t* out_len) {
  ENTER(c)
  *out = nullptr;
  *out_len = 0;
  Local<UnboundScript> s;
  if (!script(c, h, &s)) return CR_STALE;
  std::unique_ptr<ScriptCompiler::CachedData> cd(ScriptCompiler::CreateCodeCache(s));
  if (!cd || cd->length <= 0) return CR_OK;
  *out = static_cast<unsigned char*>(malloc(size_t(cd->length)));
  memcpy(*out, cd->data, size_t(cd->length));
  *out_len = size_t(cd->length);
  return CR_OK;
}

void cr_free(void* p) { free(p); }

CrHandle cr_native_function(CrIso* c) {
  ENTER_OR(c, 0)
  Local<FunctionTemplate> t = FunctionTemplate::New(c->iso, native_callback, Local<Value>(), v8::Local<v8::Signature>(),
                                                    0, v8::ConstructorBehavior::kThrow);
  Local<Function> f;
  if (!t->GetFunction(ctx).ToLocal(&f)) return 0;
  f->SetName(lit(c->iso, "native"));
  return keep(c, f);
}

CrHandle cr_intrinsic_function(CrIso* c) {
  ENTER_OR(c, 0)
  Local<Object> o = Object::New(c->iso, v8::Null(c->iso), nullptr, nullptr, 0);
  for (int i = 0; i < kIntrinsicCount; i++) {
    Local<FunctionTemplate> t = FunctionTemplate::New(c->iso, intrinsic_callback, Integer::New(c->iso, i),
                                                      v8::Local<v8::Signature>(), 0, v8::ConstructorBehavior::kThrow);
    Local<Function> f;
    if (!t->GetFunction(ctx).ToLocal(&f)) return 0;
    Local<String> name = lit(c->iso, kIntrinsicNames[i]);
    f->SetName(name);
    if (o->Set(ctx, name, f).IsNothing()) return 0;
  }
  return keep(c, o);
}

int cr_set_hook(CrIso* c, int which, CrHandle fn) {
  ENTER(c)
  if (which < 0 || which >= kHooks) return CR_STALE;
  Local<Value> f;
  if (!value(c, fn, &f) || !f->IsFunction()) return CR_STALE;
  c->hooks[which].Reset(c->iso, f.As<Function>());
  return CR_OK;
}

int cr_snapshot_add(CrIso* c, CrHandle h, size_t* index) {
  ENTER(c)
  if (c->creator == nullptr) return CR_STALE;
  Local<Value> v;
  if (!value(c, h, &v)) return CR_STALE;
  *index = c->creator->AddData(ctx, v);
  return CR_OK;
}

int cr_snapshot_data(CrIso* c, size_t index, CrHandle* out) {
  ENTER(c)
  *out = 0;
  Local<Value> v;
  if (!ctx->GetDataFromSnapshotOnce<Value>(index).ToLocal(&v)) return CR_STALE;
  *out = keep(c, v);
  return CR_OK;
}

int cr_create_blob(CrIso* c, char** out, size_t* out_len) {
  *out = nullptr;
  *out_len = 0;
  if (c == nullptr || c->creator == nullptr || c->disposing.exchange(true)) return CR_GONE;
  {
    Locker locker(c->iso);
    Isolate::Scope isolate_scope(c->iso);
    HandleScope hs(c->iso);
    Local<Context> ctx = c->ctx.Get(c->iso);
    c->scoped.clear();
    c->pinned.clear();
    for (auto& h : c->hooks) h.Reset();
    c->resolver.Reset();
    c->modules.clear();
    c->synth_values.clear();
    c->err_exception.Reset();
    c->ctx.Reset();
    c->iso->SetContinuationPreservedEmbedderData(v8::Undefined(c->iso));
    c->creator->SetDefaultContext(ctx);
  }
  StartupData blob;
  {
    Locker locker(c->iso);
    blob = c->creator->CreateBlob(SnapshotCreator::FunctionCodeHandling::kKeep);
  }
  delete c->creator;
  delete c;
  if (blob.data == nullptr || blob.raw_size <= 0) return CR_THREW;
  *out = static_cast<char*>(malloc(size_t(blob.raw_size)));
  memcpy(*out, blob.data, size_t(blob.raw_size));
  *out_len = size_t(blob.raw_size);
  delete[] blob.data;
  return CR_OK;
}

int cr_blob_check(const char* blob, size_t len) {
  // IsValid reads a 64-byte version string at offset 16 and CHECKs the
  // blob is longer: a short blob is refused here first.
  if (blob == nullptr || len <= 256 || len > size_t(INT32_MAX)) return 0;
  StartupData d{blob, int(len)};
  return d.IsValid() && d.CanBeRehashed() ? 1 : 0;
}

int cr_call_argc(CrCall* call) { return call->argc; }
const CrValueInfo* cr_call_arg(CrCall* call, int i) { return &call->args[i]; }
double cr_call_owner(CrCall* call) { return call->owner; }

void cr_ret_undefined(CrCall* call) { call->ret = Local<Value>(); }

void cr_ret_string(CrCall* call, const char* s, size_t n) {
  Isolate* iso = call->c->iso;
  Local<String> v;
  if (n > size_t(String::kMaxLength) * 3 || !String::NewFromUtf8(iso, s, NewStringType::kNormal, int(n)).ToLocal(&v)) {
    call->throws = true;
    call->throw_kind = 2;
    call->throw_message = "Cannot create a string longer than 0x1fffffe8 characters";
    return;
  }
  call->ret = v;
}

void cr_ret_bytes(CrCall* call, const void* p, size_t n) {
  TryCatch tc(call->c->iso);
  call->ret = new_bytes(call->c->iso, static_cast<const uint8_t*>(p), n);
  if (call->ret.IsEmpty()) {
    call->throws = true;
    call->throw_kind = 2;
    call->throw_message = "Array buffer allocation failed";
  }
}

void* cr_ret_bytes_begin(CrCall* call, size_t n) {
  TryCatch tc(call->c->iso);
  call->pending = new_store(call->c->iso, n);
  if (!call->pending) {
    call->throws = true;
    call->throw_kind = 2;
    call->throw_message = "Array buffer allocation failed";
    return nullptr;
  }
  return call->pending->Data();
}

void cr_ret_bytes_end(CrCall* call, size_t used) {
  if (!call->pending) return;
  Isolate* iso = call->c->iso;
  size_t n = std::min(used, call->pending->ByteLength());
  Local<ArrayBuffer> ab = ArrayBuffer::New(iso, std::move(call->pending));
  call->ret = Uint8Array::New(ab, 0, n);
}

void cr_ret_number(CrCall* call, double n) { call->ret = Number::New(call->c->iso, n); }
void cr_ret_boolean(CrCall* call, int b) { call->ret = Boolean::New(call->c->iso, b != 0); }

void cr_ret_value(CrCall* call, CrHandle h) {
  Local<Value> v;
  if (value(call->c, h, &v)) call->ret = v;
}

void cr_ret_throw(CrCall* call, int kind, const char* msg, size_t n) {
  call->throws = true;
  call->throw_kind = kind;
  call->throw_message.assign(msg, n);
}

}  // extern "C"
