package jsenv

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"

	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

// The startup snapshot (contract §25.7): the environment — the prelude,
// the globals and the units tenants touch most, compiled and initialised —
// made once, before any tenant, by a process that never runs tenant code;
// every isolate then starts from it instead of running the prelude.
//
// Warm is what the snapshot holds initialised beyond the prelude: code
// run once in the isolate that makes it, so that the units tenants touch
// most are loaded and the functions their everyday use reaches are
// compiled (a function V8 has not compiled is compiled on its first call,
// in every isolate, which for URL's parser alone was 4–5 ms). What runs
// leaves nothing behind but the units' own state (the snapshot's full GC
// takes the rest); nothing of the clock or of randomness may be read.
// What goes in is decided by measurement (docs/architecture.md, "What is
// in the startup snapshot?"): every isolate deserializes all of it, used
// or not.
var Warm = []string{
	leanWarm,
	`console.log("x"); console.log("%s %d", "x", 1); console.log({ a: [1, "b"], m: new Map([[1, { s: new Set([2]) }]]) }); console.error(new Error("x"))`,
	`const u = new URL("https://user@example.com:8080/a/b?c=1&d=e#f"); u.searchParams.append("x", "y"); String(u); new URLSearchParams("a=1&b=2").get("a")`,
	`new TextDecoder().decode(new TextEncoder().encode("héllo"))`,
	`Buffer.from("aGVsbG8=", "base64").toString("utf8"); Buffer.concat([Buffer.alloc(2), Buffer.from([1])]).toString("hex")`,
	`structuredClone({ a: [1, { b: new Date(0) }] }); typeof crypto.randomUUID; typeof crypto.getRandomValues`,
	`const _ = require("lodash"); _.sum([1, 2]); _.chunk([1, 2, 3], 2); _.groupBy([1, 2], (x) => x % 2); _.cloneDeep({ a: [1] }); _.sortBy([3, 1], (x) => x); _.uniq([1, 1]); _.get({ a: { b: 1 } }, "a.b")`,
	`const dayjs = require("dayjs"); dayjs("2024-01-01").add(1, "day").format("YYYY-MM-DD"); dayjs("2024-01-01").diff(dayjs("2023-01-01"), "day")`,
	`process.nextTick(() => {}); process.env; process.argv; process.platform`,
	`require("util").format("%s", 1); require("events"); require("path").join("a", "b")`,
}

// SnapshotKey names the snapshot of kind this binary makes: it changes
// with anything that goes into one (the binding, V8, the prelude, the
// transform's driver, every unit, what is warmed), so a snapshot file
// cached under its key is never one another build made.
func SnapshotKey(k Kind) string {
	h := sha256.New()
	h.Write([]byte(snapshotMagic + v8.BindingID() + "\n" + string(k) + "\n" + strings.Join(warmOf(k), "\x00") + "\n"))
	h.Write([]byte(preludeSource))
	h.Write([]byte(transformDriver))
	_ = fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(assets, path)
			h.Write([]byte(path + "\n"))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// leanWarm is what the lean snapshot holds warm: the paths every run takes
// (a call's promise tracked, the jobs after it drained, the finished tasks
// taken) and the console with util.inspect, which must be loaded before
// any tenant code runs: it captures the intrinsics it uses when it loads
// (node's primordials), so a tenant that replaces a prototype's methods
// still gets its objects printed.
const leanWarm = `api.track(0, Promise.resolve(1)); api.drain(); api.takeDone(); console.log("x %s", "y"); console.log({ a: [1] });`

// Kind names one of the two startup snapshots. An isolate host process
// makes its isolates from one of them at a time (V8 shares the read-only
// heap between a process's isolates, which must come from one blob):
//   - Lean holds the prelude alone, warmed: an isolate from it costs about
//     what one from V8's own snapshot does;
//   - Rich holds Warm besides: the units tenants touch most, loaded and
//     warmed. An isolate from it costs some 3–4 ms more to make; the same
//     units loaded on first touch cost a tenant 20 ms and more.
//
// The worker asks each host for the kind recent calls wanted (WantsRich);
// a guess that was wrong costs time, never correctness: a lean isolate
// loads any unit on first touch.
type Kind string

// The kinds of snapshot.
const (
	Lean Kind = "lean"
	Rich Kind = "rich"
)

// warmOf is what a kind holds warm.
func warmOf(k Kind) []string {
	if k == Rich {
		return Warm
	}
	return []string{leanWarm}
}

// richNames are what code mentions when it will likely use the rich
// snapshot's units: modules, the web and node globals it holds, console
// output that is not a plain string (util.inspect).
var richNames = regexp.MustCompile(`\b(require|import|URL|URLSearchParams|TextEncoder|TextDecoder|Buffer|crypto|process|structuredClone|util|lodash|dayjs)\b|console\.\w+\(\s*[^'"` + "`" + `\s)]`)

// WantsRich reports whether code (a run's, a source) looks as if it will
// use the rich snapshot's units.
func WantsRich(code string) bool { return richNames.MatchString(code) }

// snapshotMagic starts a snapshot file: then V8's version, a line, the
// blob's SHA-256 in hex, a line, and the blob. V8 itself checks only its
// version (and crashes the process on a mismatch or a corrupt blob), so a
// host checks all of it before giving a blob to V8.
const snapshotMagic = "code-runner v8 startup snapshot 1\n"

// MakeSnapshot makes the startup snapshot of kind. The process that calls it must never have run tenant code;
// the isolate hosts' snapshot mode is such a process (it locks its thread:
// a snapshot creator stays on the thread that made it).
func MakeSnapshot(kind Kind) ([]byte, error) {
	runtime.LockOSThread()
	// Bytecode the warm-up compiled must reach the snapshot: V8 would flush
	// what has not run for a few collections.
	v8.Init("--no-flush-bytecode")
	sh := NewShared(nil)
	sh.NoCache = true
	e := NewUnmade(sh)
	e.making = true
	iso, err := v8.NewIsolate(v8.Options{Creator: true, Native: func(c *v8.Call) {
		switch op := c.Str(0); {
		case op == "log" || op == "write" || op == "uncaught":
			// The warm-up's output goes nowhere.
		case !e.Op(c, op):
			c.Throw(v8.PlainError, "code-runner: "+op+" is not available while the startup snapshot is made")
		}
	}})
	if err != nil {
		return nil, err
	}
	if err := e.makeForSnapshot(iso, warmOf(kind)); err != nil {
		iso.Dispose()
		return nil, fmt.Errorf("making the %s startup snapshot: %w", kind, err)
	}
	blob, err := iso.CreateBlob()
	if err != nil {
		return nil, err
	}
	return SnapshotFile(blob), nil
}

// SnapshotFile is the file that holds blob: the envelope a host checks
// (this build's V8, the blob's checksum) and the blob.
func SnapshotFile(blob []byte) []byte {
	sum := sha256.Sum256(blob)
	return slices.Concat([]byte(snapshotMagic+v8.Version()+"\n"+hex.EncodeToString(sum[:])+"\n"), blob)
}

// makeForSnapshot builds the environment in the creator's current context,
// runs warm in it, and leaves its API and require for the isolates made
// from the snapshot.
func (e *Env) makeForSnapshot(iso *v8.Isolate, warm []string) error {
	if err := e.Make(iso); err != nil {
		return err
	}
	scope := iso.Mark()
	defer iso.Release(scope)
	var err error
	for _, code := range warm {
		var fn v8.Value
		fn, err = iso.CompileFunction(v8.Source{Code: code, Origin: "node:internal/warm", Params: []string{"api", "require"}})
		if err == nil {
			_, err = fn.Call(v8.Value{}, e.API, e.Require)
		}
		if err == nil {
			_, err = e.API.Method("drain")
		}
		if err != nil {
			err = fmt.Errorf("warming %q: %w", code, err)
			break
		}
	}
	if err == nil {
		_, err = e.API.Method("takeDone")
	}
	if err == nil {
		_, err = e.API.Method("resetConsole")
	}
	if err != nil {
		return err
	}
	e.MakeCaches() // the units' scripts are let go: nothing but the context stays
	if _, err = iso.AddSnapshotData(e.API); err == nil {
		_, err = iso.AddSnapshotData(e.Require)
	}
	e.API.Unpin()
	e.Require.Unpin()
	return err
}

// OpenSnapshot maps the snapshot file at path read-only (the pages are
// shared by every host of the machine that maps it, and never unmapped:
// V8 keeps pointing into the blob) and checks it: made by this build's V8,
// whole, and accepted by V8's own check.
func OpenSnapshot(path string) (*v8.Blob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() < int64(len(snapshotMagic)) || info.Size() > 1<<30 {
		return nil, fmt.Errorf("%s is not a code-runner startup snapshot (%d bytes)", path, info.Size())
	}
	mapped, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map %s: %w", path, err)
	}
	blob, err := checkSnapshot(mapped)
	if err != nil {
		_ = syscall.Munmap(mapped)
		return nil, err
	}
	return v8.MappedBlob(blob), nil
}

// CheckSnapshotFile reads the snapshot file at path and checks that it is
// whole and made by this build's V8 (without starting V8: the worker,
// which never does, keeps its cache with it).
func CheckSnapshotFile(path string) error {
	file, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	_, err = checkEnvelope(file)
	return err
}

// checkSnapshot checks a snapshot file's bytes and answers its blob.
func checkSnapshot(file []byte) ([]byte, error) {
	blob, err := checkEnvelope(file)
	if err != nil {
		return nil, err
	}
	if !v8.MappedBlob(blob).LooksValid() {
		return nil, errors.New("V8 does not accept the snapshot")
	}
	return blob, nil
}

// checkEnvelope checks what the file says of its blob: this build's V8,
// and the blob's checksum.
func checkEnvelope(file []byte) ([]byte, error) {
	rest, ok := bytes.CutPrefix(file, []byte(snapshotMagic))
	if !ok {
		return nil, errors.New("not a code-runner startup snapshot")
	}
	version, rest, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || string(version) != v8.Version() {
		return nil, fmt.Errorf("the snapshot was made by V8 %q, this is %s", version, v8.Version())
	}
	sumHex, blob, ok := bytes.Cut(rest, []byte("\n"))
	want, err := hex.DecodeString(string(sumHex))
	if !ok || err != nil || len(want) != sha256.Size {
		return nil, errors.New("the snapshot's checksum is unreadable")
	}
	if sum := sha256.Sum256(blob); !bytes.Equal(sum[:], want) {
		return nil, errors.New("the snapshot is corrupt or truncated (its checksum does not match)")
	}
	return blob, nil
}
