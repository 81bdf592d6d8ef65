package python

import (
	"errors"
	"fmt"
	"math/bits"
	"reflect"
	"unsafe"

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

// fdEntry is one open descriptor: its number, wazero's entry for it, and
// the entry's name (the guest path of a preopen). The entry is the pointer
// read from the table when it was listed — not a reflect.Value of the
// table's slot, which would read whatever the slot holds later — and it is
// held, so the snapshot's entries stay alive and no new entry can take
// their address.
type fdEntry struct {
	fd    int32
	entry unsafe.Pointer // *FileEntry
	name  string
}

// fdView reads one module instance's descriptor table in place. It is
// resolved once, when the interpreter is snapshotted: the table is a field
// of the instance's FSContext, which lives as long as the instance, so the
// reflected fields below read its current contents at every reset without
// looking anything up by name again (the lookups, the FS method's call and
// a map per reset were ~1.5 % of a worker's CPU under 8 callers of one-shots).
type fdView struct {
	fsc     reflect.Value // *FSContext
	masks   reflect.Value // its openedFiles.masks, []uint64
	items   reflect.Value // its openedFiles.items, []*FileEntry
	name    int           // the index of FileEntry's Name field
	dirents int           // the index of FileEntry's direntCache field
}

// newFDView finds the module instance's descriptor table.
func newFDView(mod api.Module) (*fdView, error) {
	v := reflect.ValueOf(mod)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, errNoFDTable
	}
	sysCtx := v.Elem().FieldByName("Sys")
	if !sysCtx.IsValid() || sysCtx.Kind() != reflect.Pointer || sysCtx.IsNil() {
		return nil, errNoFDTable
	}
	fsm := sysCtx.MethodByName("FS")
	if !fsm.IsValid() || fsm.Type().NumIn() != 0 || fsm.Type().NumOut() != 1 {
		return nil, errNoFDTable
	}
	fsc := fsm.Call(nil)[0]
	if fsc.Kind() != reflect.Pointer || fsc.IsNil() || fsc.Elem().Kind() != reflect.Struct {
		return nil, errNoFDTable
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
	name, ok := items.Type().Elem().Elem().FieldByName("Name")
	if !ok || name.Type.Kind() != reflect.String || len(name.Index) != 1 {
		return nil, errNoFDTable
	}
	dirents, ok := items.Type().Elem().Elem().FieldByName("direntCache")
	if !ok || dirents.Type.Kind() != reflect.Pointer || len(dirents.Index) != 1 {
		return nil, errNoFDTable
	}
	return &fdView{fsc: fsc, masks: masks, items: items, name: name.Index[0], dirents: dirents.Index[0]}, nil
}

// listed reports whether descriptor fd, open, was read as a directory
// through fd_readdir: wazero then keeps a cache of the names (and inode
// numbers) it read on the entry, and serves a later read with a cookie
// inside that window from it. The guest must not be running.
func (v *fdView) listed(fd int32) bool {
	return !v.items.Index(int(fd)).Elem().Field(v.dirents).IsNil()
}

// list appends the open descriptors, in ascending order, to out[:0]. The
// guest must not be running (the table is unguarded).
func (v *fdView) list(out []fdEntry) ([]fdEntry, error) {
	out = out[:0]
	for i := 0; i < v.masks.Len(); i++ {
		for m := v.masks.Index(i).Uint(); m != 0; m &= m - 1 {
			fd := i*64 + bits.TrailingZeros64(m)
			if fd >= v.items.Len() {
				return nil, errNoFDTable
			}
			e := v.items.Index(fd)
			if e.IsNil() {
				return nil, errNoFDTable
			}
			out = append(out, fdEntry{fd: int32(fd), entry: e.UnsafePointer(), name: e.Elem().Field(v.name).String()})
		}
	}
	return out, nil
}

// close closes descriptor fd, as the guest's fd_close would.
func (v *fdView) close(fd int32) error {
	m := v.fsc.MethodByName("CloseFile")
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
	view, err := newFDView(mod)
	if err != nil {
		return err
	}
	fds, err := view.list(nil)
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
	ip.fdView, ip.fds = view, fds
	return nil
}

// restoreFDs returns the parked interpreter's descriptor table to the
// snapshot's: what the tenant opened is closed; a snapshot descriptor the
// tenant closed or replaced is an error (the interpreter must go).
func (ip *interp) restoreFDs() error {
	if ip.fdView == nil {
		return errors.New("the interpreter has no descriptor snapshot")
	}
	now, err := ip.fdView.list(ip.fdsNow)
	if err != nil {
		return err
	}
	ip.fdsNow = now
	kept := 0
	for _, e := range now {
		// The snapshot's descriptors are 0 to len(ip.fds)-1 (snapshotFDs).
		if int(e.fd) < len(ip.fds) {
			w := ip.fds[e.fd]
			if w.entry != e.entry || w.name != e.name {
				return fmt.Errorf("descriptor %d (%q) is not the one snapshotted", e.fd, e.name)
			}
			// A preopen read with fd_readdir keeps the names it read for
			// the next tenant's reads with a cookie; CPython lists a
			// directory through a descriptor of its own (opendir), which
			// the reset closes, so only raw WASI calls get here.
			if ip.fdView.listed(e.fd) {
				return fmt.Errorf("descriptor %d (%q) was listed: its listing would reach the next tenant", e.fd, e.name)
			}
			kept++
			continue
		}
		if err := ip.fdView.close(e.fd); err != nil {
			return err
		}
	}
	clear(ip.fdsNow) // hold no entry the tenant opened
	if kept != len(ip.fds) {
		return errors.New("a stdio or preopened descriptor was closed")
	}
	return nil
}
