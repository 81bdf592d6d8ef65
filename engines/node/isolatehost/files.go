package isolatehost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/code-runner-go/code-runner/engines/node/hostproto"
	v8 "github.com/code-runner-go/code-runner/engines/node/v8"
)

// scratch is a runtime's flat iii.files directory with its quota
// (docs/behaviour.md#guest-iii-files). The worker names and deletes the directory; the host
// creates it on the first write and only works inside it, never following
// links.
type scratch struct {
	dir      string
	maxBytes int64
	maxFiles int64
	made     bool // dir exists (created by ensure)
}

type fileArgs struct {
	Name   json.RawMessage `json:"name"`
	Type   string          `json:"t"`
	Has    bool            `json:"has"`    // write: contents were a string or a Uint8Array
	Binary bool            `json:"binary"` // write: contents were a Uint8Array
	Append bool            `json:"append"` // write: add to the end of the file (fs.appendFileSync)
}

var reservedNames = map[string]bool{"con": true, "prn": true, "aux": true, "nul": true}

func init() {
	for i := 1; i <= 9; i++ {
		reservedNames[fmt.Sprintf("com%d", i)] = true
		reservedNames[fmt.Sprintf("lpt%d", i)] = true
	}
}

// checkName applies the name rules of docs/behaviour.md#guest-iii-files, in order.
func checkName(method string, raw json.RawMessage, typ string) (string, *nativeResult) {
	var name string
	if typ != "string" || json.Unmarshal(raw, &name) != nil {
		r := nativeResult{E: fmt.Sprintf("iii.files.%s: name must be a string", method), K: "TypeError"}
		return "", &r
	}
	bad := func(format string, args ...any) (string, *nativeResult) {
		r := fail(format, args...)
		return "", &r
	}
	if name == "" {
		return bad("file name must not be empty")
	}
	if len(name) > 255 {
		return bad("file name is %d bytes; max 255", len(name))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return bad("file name %q may only contain letters, digits, '.', '_' and '-' — it names one file in this runtime's private directory, not a path", name)
		}
	}
	stem, _, _ := strings.Cut(name, ".")
	if name == "." || name == ".." || reservedNames[strings.ToLower(stem)] {
		return bad("file name %q is reserved", name)
	}
	if strings.HasSuffix(name, ".") {
		return bad("file name %q must not end in '.'", name)
	}
	return name, nil
}

func (h *host) filesOp(method, arg string) nativeResult {
	s := h.files
	if s == nil {
		return fail("iii.files is disabled in this runtime")
	}
	if method == "list" {
		return s.list()
	}
	if method == "rename" {
		return s.rename(arg)
	}
	name, bad := parseFileArgs(method, arg, nil)
	if bad != nil {
		return *bad
	}
	switch method {
	case "readText":
		f, _, res := s.open(name)
		if res != nil {
			return *res
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fail("no such file in this runtime's scratch directory")
		}
		return nativeResult{V: strings.ToValidUTF8(string(b), "\uFFFD")}
	case "stat":
		// fs.statSync: a regular file's size and modification time.
		info, err := os.Lstat(filepath.Join(s.dir, name))
		if err != nil {
			return fail("no such file in this runtime's scratch directory")
		}
		if !info.Mode().IsRegular() {
			return fail("that scratch entry is not a regular file")
		}
		return nativeResult{V: map[string]any{"size": info.Size(), "mtime_ms": info.ModTime().UnixMilli()}}
	case "remove":
		err := os.Remove(filepath.Join(s.dir, name))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail("could not remove %q from this runtime's scratch directory", name)
		}
		return nativeResult{V: nil}
	}
	return fail("unknown iii.files method %s", method)
}

// parseFileArgs decodes a request's JSON head and checks its file name.
func parseFileArgs(method, arg string, into *fileArgs) (string, *nativeResult) {
	var a fileArgs
	if into == nil {
		into = &a
	}
	if err := json.Unmarshal([]byte(arg), into); err != nil {
		r := fail("malformed iii.files request: %v", err)
		return "", &r
	}
	return checkName(method, into.Name, into.Type)
}

// filesRead serves iii.files.read: the file's bytes, or the refusal.
// filesRead serves iii.files.read (and fs's reads): the file's bytes are
// read straight into the ArrayBuffer the guest gets.
func (h *host) filesRead(c *v8.Call, arg string) {
	if h.files == nil {
		h.answer(c, fail("iii.files is disabled in this runtime"))
		return
	}
	name, bad := parseFileArgs("read", arg, nil)
	if bad != nil {
		h.answer(c, *bad)
		return
	}
	f, size, bad := h.files.open(name)
	if bad != nil {
		h.answer(c, *bad)
		return
	}
	defer f.Close()
	// The scratch quota bounds size; a file that grew since is read as
	// it was measured.
	c.ReturnBytesFilled(int(size), func(b []byte) int {
		n, _ := io.ReadFull(f, b)
		return n
	})
}

// filesWrite serves iii.files.write (and fs's writes); the contents arrive
// beside the JSON head, as a string or as bytes, not inside it. data is
// only read, never kept.
func (h *host) filesWrite(arg string, data []byte) nativeResult {
	if h.files == nil {
		return fail("iii.files is disabled in this runtime")
	}
	var a fileArgs
	name, bad := parseFileArgs("write", arg, &a)
	if bad != nil {
		return *bad
	}
	if !a.Has {
		return nativeResult{E: "iii.files.write: contents must be a string or Uint8Array", K: "TypeError"}
	}
	return h.writeFile(name, data, a.Append)
}

// rename moves one scratch file to another name (fs.renameSync), replacing
// a file of that name; both names follow the iii.files rules.
func (s *scratch) rename(arg string) nativeResult {
	var req struct {
		From json.RawMessage `json:"from"`
		To   json.RawMessage `json:"to"`
	}
	if err := json.Unmarshal([]byte(arg), &req); err != nil {
		return fail("malformed rename request: %v", err)
	}
	from, bad := checkName("rename", req.From, "string")
	if bad != nil {
		return *bad
	}
	to, bad := checkName("rename", req.To, "string")
	if bad != nil {
		return *bad
	}
	src, dst := filepath.Join(s.dir, from), filepath.Join(s.dir, to)
	if info, err := os.Lstat(src); err != nil || !info.Mode().IsRegular() {
		return fail("no such file in this runtime's scratch directory")
	}
	if info, err := os.Lstat(dst); err == nil && !info.Mode().IsRegular() {
		return fail("that scratch entry is not a regular file")
	}
	if err := os.Rename(src, dst); err != nil {
		return fail("could not rename %q in this runtime's scratch directory", from)
	}
	return nativeResult{V: nil}
}

func (s *scratch) usage(except string) (bytes, files int64) {
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if e.Name() == except {
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			bytes += info.Size()
			files++
		}
	}
	return bytes, files
}

func (h *host) writeFile(name string, data []byte, appending bool) nativeResult {
	s := h.files
	if err := s.ensure(); err != nil {
		// The path and the cause are the operator's business, not the guest's.
		h.send(&hostproto.Msg{T: "warn", Text: "iii.files: could not create a scratch directory (check scratch_root): " + err.Error()})
		return fail("could not create this runtime's scratch directory; the operator should check scratch_root")
	}
	return s.write(name, data, appending)
}

// write replaces the file's contents with data, or adds data at its end
// (appending: nothing of the file is read or written again).
func (s *scratch) write(name string, data []byte, appending bool) nativeResult {
	used, count := s.usage(name)
	path := filepath.Join(s.dir, name)
	var kept int64
	if appending {
		if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
			kept = info.Size()
		}
	}
	if used+kept+int64(len(data)) > s.maxBytes || count+1 > s.maxFiles {
		r := fail("writing %q would exceed this runtime's scratch quota (%d bytes across at most %d files); remove a file first", name, s.maxBytes, s.maxFiles)
		r.Q = true
		return r
	}
	if info, err := os.Lstat(path); err == nil && !info.Mode().IsRegular() {
		return fail("that scratch entry is not a regular file")
	}
	mode := os.O_WRONLY | os.O_CREATE | os.O_TRUNC | syscallNoFollow
	if appending {
		mode = os.O_WRONLY | os.O_CREATE | os.O_APPEND | syscallNoFollow
	}
	f, err := os.OpenFile(path, mode, 0o600)
	if err != nil {
		return fail("could not write %q in this runtime's scratch directory", name)
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		return fail("could not write %q in this runtime's scratch directory", name)
	}
	return nativeResult{V: nil}
}

// open opens a scratch file to read it whole, with its size.
func (s *scratch) open(name string) (*os.File, int64, *nativeResult) {
	path := filepath.Join(s.dir, name)
	info, err := os.Lstat(path)
	if err != nil {
		r := fail("no such file in this runtime's scratch directory")
		return nil, 0, &r
	}
	if !info.Mode().IsRegular() {
		r := fail("that scratch entry is not a regular file")
		return nil, 0, &r
	}
	f, err := os.Open(path)
	if err != nil {
		r := fail("no such file in this runtime's scratch directory")
		return nil, 0, &r
	}
	return f, info.Size(), nil
}

type fileEntry struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
}

func (s *scratch) list() nativeResult {
	entries, _ := os.ReadDir(s.dir)
	out := []fileEntry{}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			out = append(out, fileEntry{Name: e.Name(), Bytes: info.Size()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return nativeResult{V: out}
}

// ensure creates the scratch directory (and scratch_root when missing) on
// first use, mode 0700. A directory already there is accepted only when it
// is a real directory of ours with mode 0700: the same runtime's earlier
// host created it (a namespace runtime restarted after a kill).
func (s *scratch) ensure() error {
	if s.made {
		return nil
	}
	err := os.Mkdir(s.dir, 0o700)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(s.dir), 0o700); err == nil {
			err = os.Mkdir(s.dir, 0o700)
		}
	}
	switch {
	case err == nil:
		if err := os.Chmod(s.dir, 0o700); err != nil {
			return err
		}
	case errors.Is(err, fs.ErrExist):
		info, lerr := os.Lstat(s.dir)
		if lerr != nil || !info.IsDir() || info.Mode().Perm() != 0o700 || !ownedByUs(info) {
			return fmt.Errorf("scratch directory %s exists and is not ours", s.dir)
		}
	default:
		return err
	}
	s.made = true
	return nil
}
