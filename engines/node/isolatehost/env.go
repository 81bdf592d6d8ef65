package isolatehost

import (
	"crypto/hmac"
	"crypto/md5"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/code-runner-go/code-runner/engines/node/jsenv"
	"github.com/code-runner-go/code-runner/internal/buildinfo"
	"github.com/code-runner-go/code-runner/internal/jsonx"

	v8 "github.com/tommie/v8go"
)

// The JavaScript environment's host side (contract §25): the units the
// prelude compiles on first touch, module compilation, the clock, the
// process object's few facts, Go's hashes and randomness, and the exit of
// a call by process.exit. Timers are in timers.go.

// unitCacheRemakes is how many times a host process makes a unit's code
// cache: after the first use, and again after the next uses, so that the
// functions later tenants reach are in it too.
const unitCacheRemakes = 4

// pendingCache is a unit compiled from source in this entry whose code
// cache is made once the entry ends (so the functions it ran are in it).
type pendingCache struct {
	name   string
	script *v8.UnboundScript
}

// envOp answers the environment's native operations; ok is false for an
// op it does not know.
func (h *host) envOp(op string, args []*v8.Value) (*v8.Value, bool) {
	arg := ""
	if len(args) > 1 {
		arg = args[1].String()
	}
	switch op {
	case "unit":
		return h.loadUnit(arg), true
	case "hasUnit":
		_, ok, _ := jsenv.Source(arg)
		return h.str(boolDigit(ok)), true
	case "compile":
		src := ""
		if len(args) > 2 {
			src = args[2].String()
		}
		return h.compileModule(arg, src), true
	case "now":
		return h.str(strconv.FormatFloat(float64(time.Since(h.origin).Nanoseconds())/1e6, 'f', 6, 64)), true
	case "timeOrigin":
		return h.str(strconv.FormatFloat(float64(h.originWall.UnixNano())/1e6, 'f', 3, 64)), true
	case "hrtime":
		return h.str(strconv.FormatInt(time.Since(h.origin).Nanoseconds()+int64(time.Hour), 10)), true
	case "info":
		b, _ := jsonx.Marshal(map[string]string{"v8": v8.Version(), "version": buildinfo.Version})
		return h.str(string(b)), true
	case "memory":
		st := h.iso.GetHeapStatistics()
		b, _ := jsonx.Marshal(map[string]uint64{"rss": uint64(h.mem.guestKB()) << 10, "heapTotal": st.TotalHeapSize,
			"heapUsed": st.UsedHeapSize, "external": st.ExternalMemory, "arrayBuffers": 0})
		return h.str(string(b)), true
	case "write":
		h.consoleRaw(arg)
		return nil, true
	case "exit":
		code, _ := strconv.Atoi(arg)
		h.exitReq = &exitRequest{task: h.owner, code: code}
		h.iso.TerminateExecution()
		return nil, true
	case "exitCode":
		// Per call: the task whose work set it (detached work's is ignored).
		if owner := h.activeOwner(); owner != 0 {
			code, _ := strconv.Atoi(arg)
			h.exitCodes[owner] = code
		}
		return nil, true
	case "uncaught":
		h.uncaughtError(arg)
		return nil, true
	case "crypto.random":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 || n > 65536 {
			return h.str(`{"e":"crypto: at most 65536 random bytes per call"}`), true
		}
		b := make([]byte, n)
		_, _ = rand.Read(b)
		return h.str("\x01" + bytesToBinaryString(b)), true
	case "crypto.hash":
		data := ""
		if len(args) > 2 {
			data = args[2].String()
		}
		return h.str(hashOp(arg, data)), true
	case "crypto.hashOpen":
		// A digest fed in pieces (crypto.hashWrite, at most hashPiece bytes
		// each), so hashing a large buffer never turns it into one huge
		// string on its way here.
		mk, key, isHmac, ok := hashSpec(arg)
		if !ok {
			return h.str(`{"e":"Digest method not supported","c":"ERR_CRYPTO_INVALID_DIGEST"}`), true
		}
		if len(h.hashes) >= maxOpenHashes {
			return h.str(`{"e":"too many hashes in progress (limit 256): call digest() on some first"}`), true
		}
		h.hashSeq++
		if isHmac {
			h.hashes[h.hashSeq] = hmac.New(mk, key)
		} else {
			h.hashes[h.hashSeq] = mk()
		}
		return h.str(strconv.FormatInt(h.hashSeq, 10)), true
	case "crypto.hashWrite":
		id, _ := strconv.ParseInt(arg, 10, 64)
		if hh, ok := h.hashes[id]; ok && len(args) > 2 {
			data := args[2].String()
			if len(data) <= 2*hashPiece { // a one-byte string of at most hashPiece chars, as UTF-8
				hh.Write(binaryStringToBytes(data))
			}
		}
		return nil, true
	case "crypto.hashSum":
		id, _ := strconv.ParseInt(arg, 10, 64)
		hh, ok := h.hashes[id]
		if !ok {
			return h.str(`{"e":"Digest already called","c":"ERR_CRYPTO_HASH_FINALIZED"}`), true
		}
		delete(h.hashes, id)
		return h.str("\x01" + bytesToBinaryString(hh.Sum(nil))), true
	case "crypto.pbkdf2":
		password := ""
		if len(args) > 2 {
			password = args[2].String()
		}
		return h.str(pbkdf2Op(arg, password)), true
	}
	if strings.HasPrefix(op, "timer.") {
		return h.str(h.timerOp(strings.TrimPrefix(op, "timer."), arg)), true
	}
	return nil, false
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// loadUnit compiles the named unit (from this process's code cache when
// there is one) and answers its function, or a string saying why not.
func (h *host) loadUnit(name string) *v8.Value {
	src, ok, err := jsenv.Source(name)
	if err != nil {
		return h.str(err.Error())
	}
	if !ok {
		return h.str("code-runner: no such module unit " + name)
	}
	origin := "node:" + strings.TrimPrefix(strings.TrimPrefix(name, "node/"), "internal/")
	var script *v8.UnboundScript
	if cd, ok := h.unitCache[name]; ok {
		cached := &v8.CompilerCachedData{Bytes: cd}
		script, err = h.iso.CompileUnboundScript(src, origin, v8.CompileOptions{CachedData: cached})
		if err == nil && cached.Rejected {
			delete(h.unitCache, name)
		}
		if err == nil && h.unitCacheMade[name] < unitCacheRemakes {
			// The cache is made again after the next few tenants' use: each
			// adds the functions it compiled that the last cache lacked (a
			// TypeScript transform after a JavaScript-only one, say).
			h.pendingCaches = append(h.pendingCaches, pendingCache{name: name, script: script})
		}
	} else {
		script, err = h.iso.CompileUnboundScript(src, origin, v8.CompileOptions{})
		if err == nil {
			h.pendingCaches = append(h.pendingCaches, pendingCache{name: name, script: script})
		}
	}
	if err != nil {
		return h.str("code-runner: module unit " + name + " does not compile: " + err.Error())
	}
	v, err := script.Run(h.ctx)
	if err != nil {
		return h.str("code-runner: module unit " + name + ": " + err.Error())
	}
	return h.keep(v)
}

// makeCaches makes the code caches of the units first compiled in this
// entry, after it ran them. The caches hold compiled code only, never
// state: the next isolate of this process (the next tenant) evaluates each
// unit anew.
func (h *host) makeCaches() {
	for _, p := range h.pendingCaches {
		if h.noPreludeCache || h.unitCacheMade[p.name] >= unitCacheRemakes {
			continue
		}
		if cd := p.script.CreateCodeCache(); len(cd.Bytes) > 0 {
			h.unitCache[p.name] = cd.Bytes
			h.unitCacheMade[p.name]++
		}
	}
	h.pendingCaches = h.pendingCaches[:0]
}

// compileModule compiles a module file's code in its CommonJS wrapper
// (compileWrapped) and answers the function, or as a string the
// SyntaxError's text (without "SyntaxError: ") when it does not compile, or
// "\x01" and the error's text when the compiled script threw (code that
// closed the wrapper early).
func (h *host) compileModule(filename, src string) *v8.Value {
	script, err := h.compileWrapped(runParams, func(p string) string { return "(function (" + p + ") {" }, src, "\n})", filename)
	if err != nil {
		return h.str(strings.TrimPrefix(jsErrorText(err), "SyntaxError: "))
	}
	v, err := script.Run(h.ctx)
	if err != nil {
		return h.str("\x01" + jsErrorText(err))
	}
	return h.keep(v)
}

// exitRequest is a process.exit the host is carrying out: the task whose
// work called it, and the code.
type exitRequest struct {
	task int64
	code int
}

// exitText is a failed call's text for process.exit(code) or
// process.exitCode = code with code ≠ 0.
func exitText(code int) string {
	return fmt.Sprintf("process.exit(%d): the call ended with exit code %d", code, code)
}

// uncaughtError fails the task whose work threw text with nothing to catch
// it (a timer callback, a microtask), as node ends its process; with no
// task in flight it is logged.
func (h *host) uncaughtError(text string) {
	if _, ok := h.tasks[h.owner]; ok && h.owner != 0 {
		if _, seen := h.uncaught[h.owner]; !seen {
			h.uncaught[h.owner] = text
		}
		return
	}
	h.detachedLog("error", "Uncaught "+text)
}

// consoleRaw writes process.stdout/stderr text: it joins the call's
// stream without a newline of its own.
func (h *host) consoleRaw(arg string) {
	level, text, _ := strings.Cut(arg, "\x00")
	if text != "" {
		h.consoleWrite(level, text, false)
	}
}

func newHash(alg string) (func() hash.Hash, bool) {
	switch alg {
	case "md5":
		return md5.New, true
	case "sha1":
		return sha1.New, true
	case "sha224":
		return sha256.New224, true
	case "sha256":
		return sha256.New, true
	case "sha384":
		return sha512.New384, true
	case "sha512":
		return sha512.New, true
	case "sha512-256":
		return sha512.New512_256, true
	}
	return nil, false
}

// Streamed digests: a piece's size, and how many may be open at once.
const (
	hashPiece     = 1 << 20
	maxOpenHashes = 256
)

// hashSpec reads "alg" or, for an HMAC, "alg\x00key" (key a one-byte
// string).
func hashSpec(head string) (mk func() hash.Hash, key []byte, isHmac, ok bool) {
	alg, k, isHmac := strings.Cut(head, "\x00")
	mk, ok = newHash(alg)
	return mk, binaryStringToBytes(k), isHmac, ok
}

// hashOp digests data (a one-byte string) with "alg" or, for an HMAC,
// "alg\x00key", answering "\x01" and the digest as a one-byte string.
func hashOp(head, data string) string {
	mk, key, isHmac, ok := hashSpec(head)
	if !ok {
		return `{"e":"Digest method not supported","c":"ERR_CRYPTO_INVALID_DIGEST"}`
	}
	var hh hash.Hash
	if isHmac {
		hh = hmac.New(mk, key)
	} else {
		hh = mk()
	}
	hh.Write(binaryStringToBytes(data))
	return "\x01" + bytesToBinaryString(hh.Sum(nil))
}

func pbkdf2Op(head, password string) string {
	var req struct {
		Digest     string `json:"digest"`
		Iterations int    `json:"iterations"`
		Keylen     int    `json:"keylen"`
		Salt       string `json:"salt"`
	}
	if err := json.Unmarshal([]byte(head), &req); err != nil {
		return `{"e":"malformed pbkdf2 request"}`
	}
	mk, ok := newHash(req.Digest)
	if !ok {
		return `{"e":"Invalid digest: ` + strings.ReplaceAll(req.Digest, `"`, "") + `","c":"ERR_CRYPTO_INVALID_DIGEST"}`
	}
	if req.Iterations < 1 || req.Iterations > 10_000_000 || req.Keylen < 0 || req.Keylen > 1<<20 {
		return `{"e":"pbkdf2: iterations must be 1..10000000 and keylen 0..1048576","c":"ERR_OUT_OF_RANGE"}`
	}
	key, err := pbkdf2.Key(mk, password, binaryStringToBytes(req.Salt), req.Iterations, req.Keylen)
	if err != nil {
		return `{"e":"pbkdf2 failed"}`
	}
	return "\x01" + bytesToBinaryString(key)
}
