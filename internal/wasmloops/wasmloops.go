// Package wasmloops rewrites a WebAssembly module so that every loop calls
// an imported function every n iterations: a countdown in a new mutable
// global is decremented at the top of each loop body and, when it reaches
// zero, reset and followed by the call. The host function then runs at a
// bounded interval however the guest spins — in interpreted code or in a
// C loop — so it can yield the thread, end a guest whose deadline passed,
// or both, without a check that leaves the compiled code on every
// iteration.
//
// The rewrite understands the MVP instruction set with sign extension,
// multi-value block types, reference types and the 0xFC prefix (saturating
// truncation, bulk memory, tables). A module using SIMD, threads, tail calls
// or exception handling is refused with an error, never half rewritten.
package wasmloops

import (
	"bytes"
	"errors"
	"fmt"
)

// Section ids the rewrite reads or writes.
const (
	secImport = 2
	secGlobal = 6
	secExport = 7
	secCode   = 10
)

// CountdownExport is the name the rewritten module exports its countdown
// global under, so a host that returns an instance to an earlier state
// (a snapshot) can read and restore it like any other mutable global.
const CountdownExport = "wasmloops_countdown"

// Instrument returns a copy of wasm in which every loop calls the function
// imported as module.name (of type [] → []) once every interval iterations,
// counting across all loops of the instance in a new mutable global,
// exported as CountdownExport. The original is not modified.
func Instrument(wasm []byte, module, name string, interval int32) ([]byte, error) {
	if interval < 1 {
		return nil, fmt.Errorf("wasmloops: interval %d is not positive", interval)
	}
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) || !bytes.Equal(wasm[4:8], []byte{1, 0, 0, 0}) {
		return nil, errors.New("wasmloops: not a version 1 WebAssembly binary")
	}
	secs, err := sections(wasm[8:])
	if err != nil {
		return nil, err
	}
	var (
		globImports    uint32
		target         = int64(-1)
		definedGlobals uint32
		haveGlobal     bool
		haveExport     bool
	)
	for _, s := range secs {
		switch s.id {
		case secImport:
			globImports, target, err = readImports(s.body, module, name)
			if err != nil {
				return nil, err
			}
		case secGlobal:
			haveGlobal = true
			r := reader{b: s.body}
			if definedGlobals, err = r.u32(); err != nil {
				return nil, fmt.Errorf("wasmloops: global section: %w", err)
			}
		case secExport:
			haveExport = true
		}
	}
	if target < 0 {
		return nil, fmt.Errorf("wasmloops: the module imports no function %s.%s", module, name)
	}
	counter := globImports + definedGlobals
	check := checkCode(counter, uint32(target), interval)

	out := bytes.NewBuffer(make([]byte, 0, len(wasm)+len(wasm)/16))
	out.Write(wasm[:8])
	newGlobal := []byte{0x7F, 0x01, 0x41}
	newGlobal = appendS32(newGlobal, interval)
	newGlobal = append(newGlobal, 0x0B)
	export := append(append(appendU32(nil, uint32(len(CountdownExport))), CountdownExport...), 0x03)
	export = appendU32(export, counter)
	wroteGlobal, wroteExport := false, false
	for _, s := range secs {
		if !haveGlobal && !wroteGlobal && s.id != 0 && order(s.id) > order(secGlobal) {
			writeSection(out, secGlobal, append(appendU32(nil, 1), newGlobal...))
			wroteGlobal = true
		}
		if !haveExport && !wroteExport && s.id != 0 && order(s.id) > order(secExport) {
			writeSection(out, secExport, append(appendU32(nil, 1), export...))
			wroteExport = true
		}
		switch s.id {
		case secGlobal:
			r := reader{b: s.body}
			_, _ = r.u32()
			body := appendU32(nil, definedGlobals+1)
			body = append(body, s.body[r.i:]...)
			body = append(body, newGlobal...)
			writeSection(out, secGlobal, body)
			wroteGlobal = true
		case secExport:
			r := reader{b: s.body}
			n, err := r.u32()
			if err != nil {
				return nil, fmt.Errorf("wasmloops: export section: %w", err)
			}
			body := appendU32(nil, n+1)
			body = append(body, s.body[r.i:]...)
			body = append(body, export...)
			writeSection(out, secExport, body)
			wroteExport = true
		case secCode:
			body, err := rewriteCode(s.body, check)
			if err != nil {
				return nil, err
			}
			writeSection(out, secCode, body)
		default:
			out.Write(s.raw)
		}
	}
	if !wroteGlobal {
		writeSection(out, secGlobal, append(appendU32(nil, 1), newGlobal...))
	}
	if !wroteExport {
		writeSection(out, secExport, append(appendU32(nil, 1), export...))
	}
	return out.Bytes(), nil
}

// MutableGlobals lists the export names of the module's own mutable
// globals and counts those it does not export. A host can read and set
// only exported globals, so an instance whose state must be restored
// whole needs unexported == 0. Imported globals belong to their exporter
// and are not counted.
func MutableGlobals(wasm []byte) (exported []string, unexported int, err error) {
	if len(wasm) < 8 || !bytes.Equal(wasm[:4], []byte("\x00asm")) {
		return nil, 0, errors.New("wasmloops: not a WebAssembly binary")
	}
	secs, err := sections(wasm[8:])
	if err != nil {
		return nil, 0, err
	}
	var imported uint32
	mutable := map[uint32]bool{} // index → exported yet
	for _, s := range secs {
		switch s.id {
		case secImport:
			if imported, _, err = readImports(s.body, "", ""); err != nil {
				return nil, 0, err
			}
		case secGlobal:
			r := reader{b: s.body}
			n, err := r.u32()
			if err != nil {
				return nil, 0, fmt.Errorf("wasmloops: global section: %w", err)
			}
			for k := uint32(0); k < n; k++ {
				if _, err := r.byte(); err != nil { // value type
					return nil, 0, err
				}
				mut, err := r.byte()
				if err != nil {
					return nil, 0, err
				}
				if mut == 1 {
					mutable[imported+k] = false
				}
				if err := r.constExpr(); err != nil {
					return nil, 0, fmt.Errorf("wasmloops: global %d: %w", k, err)
				}
			}
		case secExport:
			r := reader{b: s.body}
			n, err := r.u32()
			if err != nil {
				return nil, 0, fmt.Errorf("wasmloops: export section: %w", err)
			}
			for k := uint32(0); k < n; k++ {
				name, err1 := r.name()
				kind, err2 := r.byte()
				idx, err3 := r.u32()
				if err := errors.Join(err1, err2, err3); err != nil {
					return nil, 0, fmt.Errorf("wasmloops: export %d: %w", k, err)
				}
				if _, ok := mutable[idx]; ok && kind == 0x03 {
					exported = append(exported, name)
					mutable[idx] = true
				}
			}
		}
	}
	for _, done := range mutable {
		if !done {
			unexported++
		}
	}
	return exported, unexported, nil
}

// checkCode is the instruction sequence put at the top of every loop body:
//
//	global.get $n; i32.const 1; i32.sub; global.set $n
//	global.get $n; i32.eqz
//	if  i32.const interval; global.set $n; call $target  end
//
// It leaves the operand stack as it found it, so it fits any loop,
// whatever its block type.
func checkCode(global, target uint32, interval int32) []byte {
	var b []byte
	b = append(appendU32(append(b, 0x23), global), 0x41, 0x01, 0x6B)
	b = appendU32(append(b, 0x24), global)
	b = appendU32(append(b, 0x23), global)
	b = append(b, 0x45, 0x04, 0x40, 0x41)
	b = appendS32(b, interval)
	b = appendU32(append(b, 0x24), global)
	b = appendU32(append(b, 0x10), target)
	return append(b, 0x0B)
}

type section struct {
	id   byte
	body []byte
	raw  []byte // id, size and body as read
}

func sections(b []byte) ([]section, error) {
	var out []section
	r := reader{b: b}
	for r.i < len(b) {
		start := r.i
		id, err := r.byte()
		if err != nil {
			return nil, err
		}
		n, err := r.u32()
		if err != nil {
			return nil, fmt.Errorf("wasmloops: section %d size: %w", id, err)
		}
		if uint64(r.i)+uint64(n) > uint64(len(b)) {
			return nil, fmt.Errorf("wasmloops: section %d runs past the end of the module", id)
		}
		out = append(out, section{id: id, body: b[r.i : r.i+int(n)], raw: b[start : r.i+int(n)]})
		r.i += int(n)
	}
	return out, nil
}

// order is a known section's place in a module (custom sections: 0).
func order(id byte) int {
	// type, import, function, table, memory, tag, global, export, start,
	// element, data count, code, data
	for i, v := range []byte{1, 2, 3, 4, 5, 13, 6, 7, 8, 9, 12, 10, 11} {
		if v == id {
			return i + 1
		}
	}
	return 0
}

func writeSection(out *bytes.Buffer, id byte, body []byte) {
	out.WriteByte(id)
	out.Write(appendU32(nil, uint32(len(body))))
	out.Write(body)
}

// readImports counts imported globals and finds the index of the function
// imported as module.name (-1 when there is none).
func readImports(b []byte, module, name string) (globals uint32, target int64, err error) {
	target = -1
	var fns uint32
	r := reader{b: b}
	n, err := r.u32()
	if err != nil {
		return 0, -1, fmt.Errorf("wasmloops: import section: %w", err)
	}
	for k := uint32(0); k < n; k++ {
		mod, err1 := r.name()
		field, err2 := r.name()
		kind, err3 := r.byte()
		if err := errors.Join(err1, err2, err3); err != nil {
			return 0, -1, fmt.Errorf("wasmloops: import %d: %w", k, err)
		}
		switch kind {
		case 0x00: // function: type index
			if _, err := r.u32(); err != nil {
				return 0, -1, err
			}
			if mod == module && field == name {
				target = int64(fns)
			}
			fns++
		case 0x01: // table: reference type, limits
			if _, err := r.byte(); err != nil {
				return 0, -1, err
			}
			if err := r.limits(); err != nil {
				return 0, -1, err
			}
		case 0x02: // memory: limits
			if err := r.limits(); err != nil {
				return 0, -1, err
			}
		case 0x03: // global: value type, mutability
			if _, err := r.byte(); err != nil {
				return 0, -1, err
			}
			if _, err := r.byte(); err != nil {
				return 0, -1, err
			}
			globals++
		default:
			return 0, -1, fmt.Errorf("wasmloops: import %d has unsupported kind %#x", k, kind)
		}
	}
	return globals, target, nil
}

// rewriteCode inserts check after the block type of every loop in every
// function body of a code section.
func rewriteCode(b []byte, check []byte) ([]byte, error) {
	r := reader{b: b}
	n, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("wasmloops: code section: %w", err)
	}
	out := make([]byte, 0, len(b)+len(b)/16)
	out = appendU32(out, n)
	var body []byte
	for k := uint32(0); k < n; k++ {
		size, err := r.u32()
		if err != nil || uint64(r.i)+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("wasmloops: function body %d: bad size", k)
		}
		fn := b[r.i : r.i+int(size)]
		r.i += int(size)
		body, err = rewriteBody(body[:0], fn, check)
		if err != nil {
			return nil, fmt.Errorf("wasmloops: function body %d: %w", k, err)
		}
		out = appendU32(out, uint32(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// rewriteBody copies one function body (locals, then instructions) to out
// with check inserted at the top of every loop.
func rewriteBody(out, fn, check []byte) ([]byte, error) {
	r := reader{b: fn}
	groups, err := r.u32()
	if err != nil {
		return nil, err
	}
	for g := uint32(0); g < groups; g++ {
		if _, err := r.u32(); err != nil {
			return nil, err
		}
		if _, err := r.byte(); err != nil {
			return nil, err
		}
	}
	copied := 0
	for r.i < len(fn) {
		op := fn[r.i]
		r.i++
		if err := r.immediates(op); err != nil {
			return nil, fmt.Errorf("at byte %d (opcode %#x): %w", r.i, op, err)
		}
		if op == 0x03 { // loop: its body starts here
			out = append(out, fn[copied:r.i]...)
			out = append(out, check...)
			copied = r.i
		}
	}
	return append(out, fn[copied:]...), nil
}

// reader walks a byte slice.
type reader struct {
	b []byte
	i int
}

var errShort = errors.New("unexpected end of data")

func (r *reader) byte() (byte, error) {
	if r.i >= len(r.b) {
		return 0, errShort
	}
	c := r.b[r.i]
	r.i++
	return c, nil
}

// u32 reads an unsigned LEB128 of at most 5 bytes.
func (r *reader) u32() (uint32, error) {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7F) << shift
		if c&0x80 == 0 {
			if v > 0xFFFFFFFF {
				return 0, errors.New("LEB128 value overflows 32 bits")
			}
			return uint32(v), nil
		}
	}
	return 0, errors.New("LEB128 longer than 5 bytes")
}

// skipLEB skips a (signed or unsigned) LEB128 of at most max bytes.
func (r *reader) skipLEB(max int) error {
	for k := 0; k < max; k++ {
		c, err := r.byte()
		if err != nil {
			return err
		}
		if c&0x80 == 0 {
			return nil
		}
	}
	return errors.New("LEB128 too long")
}

func (r *reader) skip(n int) error {
	if r.i+n > len(r.b) {
		return errShort
	}
	r.i += n
	return nil
}

func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	if r.i+int(n) > len(r.b) {
		return "", errShort
	}
	s := string(r.b[r.i : r.i+int(n)])
	r.i += int(n)
	return s, nil
}

func (r *reader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if err := r.skipLEB(10); err != nil {
		return err
	}
	if flags&1 != 0 {
		return r.skipLEB(10)
	}
	return nil
}

// constExpr skips a constant expression up to and including its end.
func (r *reader) constExpr() error {
	for {
		op, err := r.byte()
		if err != nil {
			return err
		}
		if op == 0x0B {
			return nil
		}
		if err := r.immediates(op); err != nil {
			return err
		}
	}
}

// blockType skips a block type: empty (0x40), a value type, or a type index.
func (r *reader) blockType() error {
	if r.i >= len(r.b) {
		return errShort
	}
	switch r.b[r.i] {
	case 0x40, 0x7F, 0x7E, 0x7D, 0x7C, 0x7B, 0x70, 0x6F:
		r.i++
		return nil
	}
	return r.skipLEB(5)
}

// immediates skips the immediates of op, refusing opcodes the rewrite does
// not know (it could not find the next instruction after them).
func (r *reader) immediates(op byte) error {
	switch {
	case op == 0x00, op == 0x01, op == 0x05, op == 0x0B, op == 0x0F, op == 0x1A, op == 0x1B,
		op >= 0x45 && op <= 0xC4, op == 0xD1:
		return nil
	case op >= 0x02 && op <= 0x04: // block, loop, if
		return r.blockType()
	case op == 0x0C, op == 0x0D, op == 0x10, op >= 0x20 && op <= 0x26, op == 0xD2:
		return r.skipLEB(5) // label, function, local, global or table index
	case op == 0x0E: // br_table
		n, err := r.u32()
		if err != nil {
			return err
		}
		for k := uint32(0); k <= n; k++ {
			if err := r.skipLEB(5); err != nil {
				return err
			}
		}
		return nil
	case op == 0x11: // call_indirect: type, table
		if err := r.skipLEB(5); err != nil {
			return err
		}
		return r.skipLEB(5)
	case op == 0x1C: // select with types
		n, err := r.u32()
		if err != nil {
			return err
		}
		return r.skip(int(n))
	case op >= 0x28 && op <= 0x3E: // memarg: alignment (bit 6: a memory index follows), offset
		align, err := r.u32()
		if err != nil {
			return err
		}
		if align&0x40 != 0 {
			if err := r.skipLEB(5); err != nil {
				return err
			}
		}
		return r.skipLEB(10)
	case op == 0x3F, op == 0x40: // memory.size, memory.grow
		return r.skipLEB(5)
	case op == 0x41:
		return r.skipLEB(5)
	case op == 0x42:
		return r.skipLEB(10)
	case op == 0x43:
		return r.skip(4)
	case op == 0x44:
		return r.skip(8)
	case op == 0xD0: // ref.null: heap type
		return r.skipLEB(5)
	case op == 0xFC:
		sub, err := r.u32()
		if err != nil {
			return err
		}
		switch {
		case sub <= 7: // saturating truncations
			return nil
		case sub == 9, sub == 11, sub == 13, sub >= 15 && sub <= 17:
			return r.skipLEB(5)
		case sub == 8, sub == 10, sub == 12, sub == 14:
			if err := r.skipLEB(5); err != nil {
				return err
			}
			return r.skipLEB(5)
		}
		return fmt.Errorf("unsupported 0xFC instruction %d", sub)
	}
	return fmt.Errorf("unsupported opcode %#x (SIMD, threads, tail calls and exception handling are not rewritten)", op)
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7F)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
