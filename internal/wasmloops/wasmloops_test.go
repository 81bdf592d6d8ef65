package wasmloops

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// module assembles a binary from sections (id, body).
func module(secs ...[]byte) []byte {
	out := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range secs {
		out = append(out, s[0])
		out = appendU32(out, uint32(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

func sec(id byte, parts ...[]byte) []byte { return append([]byte{id}, bytes.Join(parts, nil)...) }

func vec(items ...[]byte) []byte {
	return append(appendU32(nil, uint32(len(items))), bytes.Join(items, nil)...)
}

func str(s string) []byte { return append(appendU32(nil, uint32(len(s))), s...) }

func body(locals []byte, code ...byte) []byte {
	b := append(append([]byte{}, locals...), code...)
	return append(appendU32(nil, uint32(len(b))), b...)
}

// spinModule exports three functions of type [i32] → [i32], each counting
// its argument down to zero in a loop: "spin" with a plain loop, "nested"
// with a loop inside a loop (n × 10 inner iterations), "param" with a loop
// that takes and returns its counter on the stack. withGlobal adds a global
// of the module's own, so the counter is not global 0.
func spinModule(withGlobal bool) []byte {
	types := sec(1, vec(
		[]byte{0x60, 0x00, 0x00},             // 0: [] -> []
		[]byte{0x60, 0x01, 0x7F, 0x01, 0x7F}, // 1: [i32] -> [i32]
	))
	imports := sec(2, vec(append(append(str("code_runner"), str("tick")...), 0x00, 0x00)))
	funcs := sec(3, vec([]byte{1}, []byte{1}, []byte{1}))
	exports := sec(7, vec(
		append(str("spin"), 0x00, 0x01),
		append(str("nested"), 0x00, 0x02),
		append(str("param"), 0x00, 0x03),
	))
	noLocals := []byte{0x00}
	oneLocal := []byte{0x01, 0x01, 0x7F}
	spin := body(noLocals,
		0x03, 0x40, // loop
		0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, // local.get 0; i32.const 1; i32.sub; local.tee 0
		0x0D, 0x00, // br_if 0
		0x0B, // end
		0x20, 0x00, 0x0B)
	nested := body(oneLocal,
		0x03, 0x40, // outer loop
		0x41, 0x0A, 0x21, 0x01, // local.set 1 = 10
		0x03, 0x40, // inner loop
		0x20, 0x01, 0x41, 0x01, 0x6B, 0x22, 0x01, 0x0D, 0x00,
		0x0B,
		0x20, 0x00, 0x41, 0x01, 0x6B, 0x22, 0x00, 0x0D, 0x00,
		0x0B,
		0x20, 0x00, 0x0B)
	param := body(noLocals,
		0x20, 0x00, // the counter goes in on the stack
		0x03, 0x01, // loop of type 1: [i32] -> [i32]
		0x41, 0x01, 0x6B, 0x22, 0x00, 0x20, 0x00, 0x0D, 0x00,
		0x0B,
		0x0B)
	code := sec(10, vec(spin, nested, param))
	if withGlobal {
		globals := sec(6, vec([]byte{0x7F, 0x01, 0x41, 0x07, 0x0B}))
		return module(types, imports, funcs, globals, exports, code)
	}
	return module(types, imports, funcs, exports, code)
}

func TestEveryLoopCallsTheImportAtTheInterval(t *testing.T) {
	for _, withGlobal := range []bool{false, true} {
		ctx := context.Background()
		rt := wazero.NewRuntime(ctx)
		defer rt.Close(ctx)
		var ticks int
		if _, err := rt.NewHostModuleBuilder("code_runner").NewFunctionBuilder().
			WithGoFunction(api.GoFunc(func(context.Context, []uint64) { ticks++ }), nil, nil).
			Export("tick").Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
		orig := spinModule(withGlobal)
		before := append([]byte{}, orig...)
		wasm, err := Instrument(orig, "code_runner", "tick", 100)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(orig, before) {
			t.Fatal("Instrument modified its input")
		}
		mod, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatalf("the rewritten module does not validate: %v", err)
		}
		for _, tc := range []struct {
			fn    string
			n     uint64
			ticks int
		}{
			{"spin", 10_000, 100}, // one pass through the loop header per iteration
			{"nested", 50, 5},     // 50 outer + 500 inner = 550 headers, plus the 10,000 before
			{"param", 1_000, 10},  // a loop with a parameter keeps its stack
		} {
			before := ticks
			res, err := mod.ExportedFunction(tc.fn).Call(ctx, tc.n)
			if err != nil || res[0] != 0 {
				t.Fatalf("%s(%d) = %v, %v; want 0", tc.fn, tc.n, res, err)
			}
			if got := ticks - before; got != tc.ticks {
				t.Fatalf("%s(%d) with a global of its own %v: %d ticks, want %d", tc.fn, tc.n, withGlobal, got, tc.ticks)
			}
		}
	}
}

func TestRefusals(t *testing.T) {
	good := spinModule(false)
	if _, err := Instrument(good, "code_runner", "other", 100); err == nil || !strings.Contains(err.Error(), "imports no function code_runner.other") {
		t.Fatalf("missing import: %v", err)
	}
	if _, err := Instrument(good, "code_runner", "tick", 0); err == nil {
		t.Fatal("a zero interval was accepted")
	}
	if _, err := Instrument([]byte("\x00asm\x02\x00\x00\x00"), "code_runner", "tick", 1); err == nil {
		t.Fatal("a version 2 binary was accepted")
	}
	// A SIMD instruction: the rewrite cannot walk past it, so it refuses.
	types := sec(1, vec([]byte{0x60, 0x00, 0x00}))
	imports := sec(2, vec(append(append(str("code_runner"), str("tick")...), 0x00, 0x00)))
	funcs := sec(3, vec([]byte{0}))
	simd := sec(10, vec(body([]byte{0x00}, 0xFD, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1A, 0x0B)))
	if _, err := Instrument(module(types, imports, funcs, simd), "code_runner", "tick", 1); err == nil || !strings.Contains(err.Error(), "unsupported opcode 0xfd") {
		t.Fatalf("SIMD: %v", err)
	}
	// A truncated body.
	cut := module(types, imports, funcs, sec(10, vec([]byte{0x05, 0x00, 0x03, 0x40})))
	if _, err := Instrument(cut, "code_runner", "tick", 1); err == nil {
		t.Fatal("a truncated body was accepted")
	}
}

// The countdown is exported, so a host restoring an instance can read and
// set it; MutableGlobals finds it and counts the module's own unexported
// mutable global.
func TestTheCountdownIsAnExportedGlobal(t *testing.T) {
	ctx := context.Background()
	for _, withGlobal := range []bool{false, true} {
		rt := wazero.NewRuntime(ctx)
		if _, err := rt.NewHostModuleBuilder("code_runner").NewFunctionBuilder().
			WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), nil, nil).
			Export("tick").Instantiate(ctx); err != nil {
			t.Fatal(err)
		}
		wasm, err := Instrument(spinModule(withGlobal), "code_runner", "tick", 100)
		if err != nil {
			t.Fatal(err)
		}
		names, unexported, err := MutableGlobals(wasm)
		if err != nil {
			t.Fatal(err)
		}
		wantUnexported := 0
		if withGlobal {
			wantUnexported = 1
		}
		if len(names) != 1 || names[0] != CountdownExport || unexported != wantUnexported {
			t.Fatalf("with a global of its own %v: MutableGlobals = %v, %d unexported; want [%s], %d", withGlobal, names, unexported, CountdownExport, wantUnexported)
		}
		mod, err := rt.Instantiate(ctx, wasm)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := mod.ExportedGlobal(CountdownExport).(api.MutableGlobal)
		if !ok {
			t.Fatal("the countdown is not an exported mutable global")
		}
		if _, err := mod.ExportedFunction("spin").Call(ctx, 30); err != nil {
			t.Fatal(err)
		}
		if got := g.Get(); got != 70 {
			t.Fatalf("countdown after 30 loop headers = %d, want 70", got)
		}
		g.Set(100)
		if _, err := mod.ExportedFunction("spin").Call(ctx, 5); err != nil {
			t.Fatal(err)
		}
		if got := g.Get(); got != 95 {
			t.Fatalf("countdown set to 100, then 5 loop headers = %d, want 95", got)
		}
		rt.Close(ctx)
	}
	// A module without an export section gains one.
	types := sec(1, vec([]byte{0x60, 0x00, 0x00}))
	imports := sec(2, vec(append(append(str("code_runner"), str("tick")...), 0x00, 0x00)))
	funcs := sec(3, vec([]byte{0}))
	code := sec(10, vec(body([]byte{0x00}, 0x0B)))
	wasm, err := Instrument(module(types, imports, funcs, code), "code_runner", "tick", 7)
	if err != nil {
		t.Fatal(err)
	}
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	if _, err := rt.NewHostModuleBuilder("code_runner").NewFunctionBuilder().
		WithGoFunction(api.GoFunc(func(context.Context, []uint64) {}), nil, nil).
		Export("tick").Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Instantiate(ctx, wasm)
	if err != nil {
		t.Fatalf("the module with a new export section does not validate: %v", err)
	}
	if g := mod.ExportedGlobal(CountdownExport); g == nil || g.Get() != 7 {
		t.Fatalf("countdown of a module that exported nothing: %v", g)
	}
}
