package python

import (
	"errors"
	"fmt"
	"math/bits"
	"reflect"

	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// The guest's descriptor table lives in wazero (its FSContext), outside the
// linear memory a reset restores: a tenant that closes the standard
// library's preopen, or closes stderr and opens a read-only file into its
// number, or opens files and never closes them, would leave that to the
// next tenant of a recycled interpreter. wazero offers no API to read or
// restore the table, so the reset reads it by reflection (the exported
// Sys field of the module instance, its exported FS method, the table's
// bit masks and entries) and compares it with the one recorded at the
// snapshot. Entries the tenant added are closed through FSContext.CloseFile;
// a snapshot entry closed or replaced refuses the reset (wazero cannot
// re-insert a preopen), and the interpreter is disposed of. Should a wazero
// upgrade move any of this, fdTable fails, the interpreter is never
// snapshotted, and so never recycled: safe, only slower
// (TestDescriptorTableIsReadable pins the layout).

// errNoFDTable says wazero keeps its descriptor table elsewhere than this
// code reads it.
var errNoFDTable = errors.New("wazero's descriptor table is not where this code reads it")

// fdEntry is one open descriptor: its number, wazero's entry for it (held,
// so the snapshot's entries stay alive and no new entry can take their
// address), and the entry's name (the guest path of a preopen).
type fdEntry struct {
	fd    int32
	entry reflect.Value // *FileEntry
	name  string
}

// fsContext returns the module instance's *FSContext.
func fsContext(mod api.Module) (reflect.Value, error) {
	v := reflect.ValueOf(mod)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, errNoFDTable
	}
	sysCtx := v.Elem().FieldByName("Sys")
	if !sysCtx.IsValid() || sysCtx.Kind() != reflect.Pointer || sysCtx.IsNil() {
		return reflect.Value{}, errNoFDTable
	}
	fsm := sysCtx.MethodByName("FS")
	if !fsm.IsValid() || fsm.Type().NumIn() != 0 || fsm.Type().NumOut() != 1 {
		return reflect.Value{}, errNoFDTable
	}
	fsc := fsm.Call(nil)[0]
	if fsc.Kind() != reflect.Pointer || fsc.IsNil() || fsc.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, errNoFDTable
	}
	return fsc, nil
}

// fdTable lists the module's open descriptors in ascending order. The
// guest must not be running (the table is unguarded).
func fdTable(mod api.Module) ([]fdEntry, error) {
	fsc, err := fsContext(mod)
	if err != nil {
		return nil, err
	}
	tbl := fsc.Elem().FieldByName("openedFiles")
	if !tbl.IsValid() || tbl.Kind() != reflect.Struct {
		return nil, errNoFDTable
	}
	masks, items := tbl.FieldByName("masks"), tbl.FieldByName("items")
	if masks.Kind() != reflect.Slice || items.Kind() != reflect.Slice || masks.Type().Elem().Kind() != reflect.Uint64 ||
		items.Type().Elem().Kind() != reflect.Pointer || items.Type().Elem().Elem().Kind() != reflect.Struct {
		return nil, errNoFDTable
	}
	var out []fdEntry
	for i := 0; i < masks.Len(); i++ {
		for m := masks.Index(i).Uint(); m != 0; m &= m - 1 {
			fd := i*64 + bits.TrailingZeros64(m)
			if fd >= items.Len() {
				return nil, errNoFDTable
			}
			e := items.Index(fd)
			if e.IsNil() {
				return nil, errNoFDTable
			}
			name := e.Elem().FieldByName("Name")
			if name.Kind() != reflect.String {
				return nil, errNoFDTable
			}
			out = append(out, fdEntry{fd: int32(fd), entry: e, name: name.String()})
		}
	}
	return out, nil
}

// closeFD closes descriptor fd in the module's table, as the guest's
// fd_close would.
func closeFD(mod api.Module, fd int32) error {
	fsc, err := fsContext(mod)
	if err != nil {
		return err
	}
	m := fsc.MethodByName("CloseFile")
	if !m.IsValid() || m.Type().NumIn() != 1 || m.Type().In(0).Kind() != reflect.Int32 || m.Type().NumOut() != 1 {
		return errNoFDTable
	}
	if errno := experimentalsys.Errno(m.Call([]reflect.Value{reflect.ValueOf(fd)})[0].Uint()); errno != 0 {
		return fmt.Errorf("close descriptor %d: %w", fd, errno)
	}
	return nil
}

// snapshotFDs records the parked interpreter's descriptor table as the one
// every reset returns to: stdin, stdout, stderr and the four preopens
// (/run, the standard library, /out, /work) and nothing else.
func (ip *interp) snapshotFDs() error {
	mod := ip.wr.rt.Module(ip.name)
	if mod == nil {
		return errors.New("the interpreter's module is not registered")
	}
	fds, err := fdTable(mod)
	if err != nil {
		return err
	}
	if len(fds) != len(ip.mounts)+3 {
		return fmt.Errorf("%d descriptors open at the snapshot, want stdio and %d preopens", len(fds), len(ip.mounts))
	}
	for i, e := range fds {
		if e.fd != int32(i) || (i >= 3 && e.name != ip.mounts[i-3]) {
			return fmt.Errorf("descriptor %d is %q at the snapshot, not the expected one", e.fd, e.name)
		}
	}
	ip.mod, ip.fds = mod, fds
	return nil
}

// restoreFDs returns the parked interpreter's descriptor table to the
// snapshot's: what the tenant opened is closed; a snapshot descriptor the
// tenant closed or replaced is an error (the interpreter must go).
func (ip *interp) restoreFDs() error {
	if ip.mod == nil {
		return errors.New("the interpreter has no descriptor snapshot")
	}
	now, err := fdTable(ip.mod)
	if err != nil {
		return err
	}
	want := make(map[int32]fdEntry, len(ip.fds))
	for _, e := range ip.fds {
		want[e.fd] = e
	}
	kept := 0
	for _, e := range now {
		if w, ok := want[e.fd]; ok {
			if w.entry.Pointer() != e.entry.Pointer() || w.name != e.name {
				return fmt.Errorf("descriptor %d (%q) is not the one snapshotted", e.fd, e.name)
			}
			kept++
			continue
		}
		if err := closeFD(ip.mod, e.fd); err != nil {
			return err
		}
	}
	if kept != len(ip.fds) {
		return errors.New("a stdio or preopened descriptor was closed")
	}
	return nil
}
