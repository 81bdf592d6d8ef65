package node

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/code-runner-go/code-runner/configsvc"
	"github.com/code-runner-go/code-runner/internal/benchutil"
	"github.com/code-runner-go/code-runner/internal/procfs"
)

func benchRun(b *testing.B, r *rig, req map[string]any) {
	if _, err := r.run(b, req); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkNodeOneShot: one-shot `return 2+2` with a warm pool and
// without, beside `node -e 'console.log(2+2)'` spawned per run.
func BenchmarkNodeOneShot(b *testing.B) {
	n := max(b.N, 20)
	warm := newRig(b, func(c *configsvc.Config) { c.WarmPoolNode = 4 }, nil, nil)
	time.Sleep(2 * time.Second) // let the pool fill
	pooled := benchutil.TimeEach(max(n, 100), func() { benchRun(b, warm, node("return 2+2")) },
		func() { time.Sleep(50 * time.Millisecond) }) // the pool refills in the background between requests
	cold := newRig(b, nil, nil, nil)
	fresh := benchutil.Time(n, func() { benchRun(b, cold, node("return 2+2")) })
	var base benchutil.Samples
	if _, err := exec.LookPath("node"); err == nil {
		base = benchutil.Time(n, func() { benchutil.Spawn(b, "node", "-e", "console.log(2+2)") })
	}
	pooled.Report(b, "warm-pool")
	fresh.Report(b, "no-pool")
	base.Report(b, "node-e")
	benchutil.Ratio(b, "x-faster-than-node-e", pooled, base)
}

// BenchmarkNodeKeptRun: a run in an existing kept runtime.
func BenchmarkNodeKeptRun(b *testing.B) {
	r := newRig(b, nil, nil, nil)
	res, err := r.run(b, map[string]any{"lang": "node", "keep": true, "code": "globalThis.n = 0; return 1"})
	if err != nil {
		b.Fatal(err)
	}
	req := map[string]any{"runtime_id": res.RuntimeID, "code": "return ++n"}
	s := benchutil.Time(max(b.N, 1000), func() { benchRun(b, r, req) }) // ~0.1 s: enough for a stable p50
	s.Report(b, "kept-run")
}

// BenchmarkNodeThroughput: one-shot runs per second with both cores busy.
func BenchmarkNodeThroughput(b *testing.B) {
	r := newRig(b, func(c *configsvc.Config) { c.WarmPoolNode = 8 }, nil, nil)
	time.Sleep(2 * time.Second)
	var done atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 3*time.Second {
				if _, err := r.run(b, node("return 2+2")); err == nil {
					done.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(done.Load())/time.Since(start).Seconds(), "runs/s")
}

// BenchmarkNodeIdleKeptRSS: resident memory of one idle kept runtime,
// counting its isolate-host process.
func BenchmarkNodeIdleKeptRSS(b *testing.B) {
	r := newRig(b, nil, nil, nil)
	const n = 10
	for i := 0; i < n; i++ {
		if _, err := r.run(b, map[string]any{"lang": "node", "keep": true, "code": "return 1"}); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	var rss, pss int64
	for _, pid := range r.eng.HostPIDs() {
		rss += benchutil.RSSKB(pid)
		pss += procfs.PSSKB(pid)
	}
	// RSS counts the pages the hosts share (the binary, the mapped startup
	// snapshot) once per host; PSS divides them among the hosts.
	b.ReportMetric(float64(rss)/n/1024, "MiB/kept-runtime")
	b.ReportMetric(float64(pss)/n/1024, "PSS-MiB/kept-runtime")
}

// BenchmarkNodeExternalCapSlack measures how far off-heap allocation gets
// past external_mb before the resident-memory watchdog kills the host: the
// guest allocates 4 MiB ArrayBuffers and reports each step over the bridge.
func BenchmarkNodeExternalCapSlack(b *testing.B) {
	r, lb := newLoopRig(b, func(c *configsvc.Config) { c.HeapMB = 64; c.ExternalMB = 64 })
	_, err := r.run(b, map[string]any{"lang": "node", "timeout_ms": 20000, "code": `
		const keep = [];
		for (let i = 1; ; i++) {
			keep.push(new Uint8Array(4 * 1048576).fill(1));
			await iii.trigger({ function_id: "test::echo", payload: { mib: i * 4 } });
		}`})
	if err == nil || err.Code != "code-runner::resource_exhausted" {
		b.Fatalf("expected the memory kill, got %v", err)
	}
	last := 0.0
	for _, c := range lb.Seen() {
		var p struct {
			MiB float64 `json:"mib"`
		}
		if json.Unmarshal(c.Data, &p) == nil && p.MiB > last {
			last = p.MiB
		}
	}
	b.ReportMetric(last, "MiB-allocated-before-kill")
	b.ReportMetric(last-64, "MiB-past-external_mb")
}

// envCode is a one-shot that touches the JavaScript environment the way
// agents do; envCodeTS is the same with TypeScript annotations.
const envCode = `import dayjs from "dayjs";
const _ = require("lodash");
const u = new URL("https://example.com/a?b=1");
const bytes = new TextEncoder().encode(u.search);
const copy = structuredClone({ id: crypto.randomUUID(), n: bytes.length });
return [u.host, _.sum([copy.n, 2]), dayjs("2024-01-01").add(1, "day").format("YYYY-MM-DD"), copy.id.length];`

const envCodeTS = `import dayjs from "dayjs";
const _ = require("lodash");
interface Copy { id: string; n: number }
const u: URL = new URL("https://example.com/a?b=1");
const bytes: Uint8Array = new TextEncoder().encode(u.search);
const copy: Copy = structuredClone({ id: crypto.randomUUID(), n: bytes.length }) as Copy;
return [u.host, _.sum([copy.n, 2]) as number, dayjs("2024-01-01").add(1, "day").format("YYYY-MM-DD"), copy.id.length];`

// BenchmarkNodeEnvironmentCost: the CPU a node one-shot costs the worker's
// process tree (the worker, its isolate hosts, the recycle that follows
// each one-shot), per call, for
//   - return 2+2 with the JavaScript environment (contract §25) beside the
//     same build with it switched off (CODE_RUNNER_BENCH_NO_JSENV=1 in the
//     hosts' environment, a bench-only switch): the price of having it;
//   - a one-shot using URL, TextEncoder, crypto.randomUUID, structuredClone,
//     require("lodash") and import dayjs, beside return 2+2;
//   - the same code with TypeScript annotations, beside it without.
//
// The arms alternate call by call, each followed by a pause for the
// recycle, so a slow spell of the machine hits all of them.
func BenchmarkNodeEnvironmentCost(b *testing.B) {
	on := newRig(b, func(c *configsvc.Config) { c.WarmPoolNode = 1 }, nil, nil)
	off := newRigEnv(b, func(c *configsvc.Config) { c.WarmPoolNode = 1 }, nil, nil, "CODE_RUNNER_BENCH_NO_JSENV=1")
	time.Sleep(time.Second)
	arms := []struct {
		name string
		r    *rig
		code string
	}{
		{"bare-env-off", off, "return 2+2"},
		{"bare", on, "return 2+2"},
		{"uses-env", on, envCode},
		{"uses-env-ts", on, envCodeTS},
	}
	for _, a := range arms { // warm every host's code caches first
		for i := 0; i < 3; i++ {
			benchRun(b, a.r, node(a.code))
			time.Sleep(30 * time.Millisecond)
		}
	}
	n := max(b.N, 60)
	cpu := make([]time.Duration, len(arms))
	pid := os.Getpid()
	for i := 0; i < n; i++ {
		for j, a := range arms {
			before := procfs.TreeRunTime(pid)
			benchRun(b, a.r, node(a.code))
			time.Sleep(30 * time.Millisecond) // the recycle runs in the background
			cpu[j] += procfs.TreeRunTime(pid) - before
		}
	}
	per := func(j int) float64 { return float64(cpu[j].Microseconds()) / float64(n) / 1000 }
	for j, a := range arms {
		b.ReportMetric(per(j), "cpu-ms/"+a.name)
	}
	b.ReportMetric(per(1)/per(0), "x-bare-vs-env-off")
	b.ReportMetric(per(2)/per(1), "x-uses-env-vs-bare")
	b.ReportMetric(per(3)/per(2), "x-ts-vs-js")
}

// fsBufferCode times the file and Buffer operations of issue 51 item 3 in
// whatever runs it and answers their milliseconds by name.
const fsBufferCode = `const fs = require("fs");
const t = (f) => { const s = performance.now(); f(); return performance.now() - s; };
const MiB = 1 << 20, chunk = "x".repeat(MiB), big = "y".repeat(8 * MiB), bytes = Buffer.alloc(8 * MiB, 7);
for (const f of ["a.txt", "b.txt", "c.bin"]) { try { fs.unlinkSync(f) } catch (_) {} }
const out = {};
out["append-8x1MiB"] = t(() => { for (let i = 0; i < 8; i++) fs.appendFileSync("a.txt", chunk); });
out["write-8MiB-text"] = t(() => fs.writeFileSync("b.txt", big));
out["read-8MiB-text"] = t(() => fs.readFileSync("b.txt", "utf8").length);
out["write-8MiB-bytes"] = t(() => fs.writeFileSync("c.bin", bytes));
out["read-8MiB-bytes"] = t(() => fs.readFileSync("c.bin").length);
for (const enc of ["utf8", "latin1", "base64", "hex"]) {
  let s;
  out["toString-" + enc] = t(() => { s = bytes.toString(enc); });
  out["from-" + enc] = t(() => Buffer.from(s, enc));
}
return out`

// BenchmarkNodeFsAndBuffer: files and Buffers of megabytes (8 × 1 MiB
// appendFileSync, 8 MiB written and read as text and as bytes, Buffer
// to and from utf8, latin1, base64 and hex), each beside node 20 doing
// the same in the same run; the ratios are the sandbox's median over
// node's.
func BenchmarkNodeFsAndBuffer(b *testing.B) {
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		b.Skip("needs the machine's node for its baseline")
	}
	r := newRig(b, func(c *configsvc.Config) { c.ScratchMB = 64; c.WarmPoolNode = 1 }, nil, nil)
	dir := b.TempDir()
	script := dir + "/fsbuffer.js"
	if err := os.WriteFile(script, []byte("(async () => {"+fsBufferCode+"\n})().then((o) => process.stdout.write(JSON.stringify(o)))"), 0o600); err != nil {
		b.Fatal(err)
	}
	sandbox, native := map[string][]float64{}, map[string][]float64{}
	for i := 0; i < max(b.N, 10); i++ {
		res, cerr := r.run(b, map[string]any{"lang": "node", "code": fsBufferCode, "memory_mb": 512, "timeout_ms": 30000})
		if cerr != nil {
			b.Fatal(cerr)
		}
		var got map[string]float64
		if err := json.Unmarshal(res.Result, &got); err != nil {
			b.Fatalf("%s: %v", res.Stderr, err)
		}
		cmd := exec.Command(nodeBin, script)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			b.Fatal(err)
		}
		var want map[string]float64
		if err := json.Unmarshal(out, &want); err != nil {
			b.Fatal(err)
		}
		for k, v := range got {
			sandbox[k] = append(sandbox[k], v)
			native[k] = append(native[k], want[k])
		}
	}
	for k := range sandbox {
		s, n := median(sandbox[k]), median(native[k])
		b.ReportMetric(s, "ms/"+k)
		b.ReportMetric(n, "node-ms/"+k)
		b.ReportMetric(s/max(n, 0.05), "x-node/"+k)
	}
}

// median is the middle of xs (sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
