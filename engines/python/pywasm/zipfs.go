package pywasm

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
)

// zipFS serves a stored (uncompressed) zip as a file system whose files
// can seek and read at offsets, as the interpreter expects of real files
// (archive/zip's own files only stream). Directories, implicit ones
// included, come from archive/zip.
type zipFS struct {
	z     *zip.Reader
	ra    io.ReaderAt
	files map[string]*zip.File
}

func newZipFS(ra io.ReaderAt, size int64) (*zipFS, error) {
	z, err := zip.NewReader(ra, size)
	if err != nil {
		return nil, fmt.Errorf("read embedded stdlib.zip: %w", err)
	}
	zf := &zipFS{z: z, ra: ra, files: make(map[string]*zip.File, len(z.File))}
	for _, f := range z.File {
		if f.Method != zip.Store {
			return nil, fmt.Errorf("stdlib.zip entry %s is compressed; the build must store it", f.Name)
		}
		zf.files[f.Name] = f
	}
	return zf, nil
}

// Open implements fs.FS.
func (z *zipFS) Open(name string) (fs.File, error) {
	f, ok := z.files[name]
	if !ok {
		return z.z.Open(name)
	}
	off, err := f.DataOffset()
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return &storedFile{SectionReader: io.NewSectionReader(z.ra, off, int64(f.UncompressedSize64)), info: f.FileInfo()}, nil
}

// storedFile is one stored entry: a section of the zip.
type storedFile struct {
	*io.SectionReader
	info fs.FileInfo
}

func (f *storedFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *storedFile) Close() error               { return nil }
