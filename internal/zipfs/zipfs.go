// Package zipfs serves a zip archive as a read-only file system whose
// files seek and read at offsets, as an interpreter expects of real files:
// the python engine's standard library, its package bundle and an
// operator's .zip or .whl on python_path.
package zipfs

import (
	"archive/zip"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"weak"
)

// FS serves a zip as a file system whose files can seek and
// read at offsets, as the interpreter expects of real files (archive/zip's
// own files only stream). A stored entry is a section of the zip, nothing
// copied; a deflated one (the package bundle's sources, read only for
// tracebacks and inspection) is inflated into memory when opened.
// Directories, implicit ones included, come from archive/zip.
type FS struct {
	z     *zip.Reader
	ra    io.ReaderAt
	files map[string]*zip.File

	// One inflated copy per deflated entry, shared by every open file of
	// it and dropped once none is left: however often a guest opens an
	// entry, it costs its size once (weak: the cache holds nothing alive).
	mu       sync.Mutex
	inflated map[string]weak.Pointer[inflater]
}

// New reads the zip's directory. name is for errors; stored says whether
// every entry must be stored (the standard library's are).
func New(name string, ra io.ReaderAt, size int64, stored bool) (*FS, error) {
	z, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("read zip %s: %w", name, err)
	}
	zf := &FS{z: z, ra: ra, files: make(map[string]*zip.File, len(z.File))}
	for _, f := range z.File {
		switch {
		case f.Method == zip.Store:
		case f.Method == zip.Deflate && !stored:
		default:
			return nil, fmt.Errorf("%s entry %s is compressed (method %d); the build must store it", name, f.Name, f.Method)
		}
		zf.files[f.Name] = f
	}
	return zf, nil
}

// Open implements fs.FS.
func (z *FS) Open(name string) (fs.File, error) {
	f, ok := z.files[name]
	if !ok {
		return z.z.Open(name)
	}
	if f.Method == zip.Deflate {
		// Inflated at the first read: the interpreter opens a module's
		// source only to stat it (a hash-checked .pyc needs no source).
		return &File{SectionReader: io.NewSectionReader(z.inflaterOf(name, f), 0, int64(f.UncompressedSize64)), info: f.FileInfo()}, nil
	}
	off, err := f.DataOffset()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &File{SectionReader: io.NewSectionReader(z.ra, off, int64(f.UncompressedSize64)), info: f.FileInfo()}, nil
}

// File is one entry: a section of the zip, or of its inflated bytes.
type File struct {
	*io.SectionReader
	info fs.FileInfo
}

// Stat returns the entry's information from the zip's directory.
func (f *File) Stat() (fs.FileInfo, error) { return f.info, nil }

// Close does nothing: the entry holds no resource of its own.
func (f *File) Close() error { return nil }

// Method returns the compression method of the named entry (zip.Store or
// zip.Deflate), and false for a name that is not a file of the archive.
func (z *FS) Method(name string) (uint16, bool) {
	f, ok := z.files[name]
	if !ok {
		return 0, false
	}
	return f.Method, true
}

// inflaterOf returns the shared inflater of a deflated entry.
func (z *FS) inflaterOf(name string, f *zip.File) *inflater {
	z.mu.Lock()
	defer z.mu.Unlock()
	if in := z.inflated[name].Value(); in != nil {
		return in
	}
	if z.inflated == nil {
		z.inflated = map[string]weak.Pointer[inflater]{}
	}
	in := &inflater{f: f}
	z.inflated[name] = weak.Make(in)
	return in
}

// inflater reads a deflated entry at offsets, inflating it whole the first
// time it is read.
type inflater struct {
	f    *zip.File
	once sync.Once
	b    []byte
	err  error
}

func (in *inflater) ReadAt(p []byte, off int64) (int, error) {
	in.once.Do(func() {
		rc, err := in.f.Open()
		if err != nil {
			in.err = err
			return
		}
		defer rc.Close()
		in.b, in.err = io.ReadAll(rc)
	})
	if in.err != nil {
		return 0, in.err
	}
	return bytes.NewReader(in.b).ReadAt(p, off)
}
