package zipfs

import (
	"archive/zip"
	"bytes"
	"io"
	"io/fs"
	"strings"
	"testing"
)

func archive(t *testing.T, method uint16, files map[string]string) *bytes.Reader {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(buf.Bytes())
}

// Deflated entries read like stored ones — whole, at offsets, after a seek
// — and directories list; a store-only archive refuses a deflated entry.
func TestEntriesReadAtOffsetsWhateverTheirMethod(t *testing.T) {
	body := strings.Repeat("0123456789", 1000)
	for _, method := range []uint16{zip.Store, zip.Deflate} {
		ra := archive(t, method, map[string]string{"pkg/mod.py": body, "pkg/sub/x.txt": "x"})
		z, err := New("test.zip", ra, ra.Size(), false)
		if err != nil {
			t.Fatal(err)
		}
		f, err := z.Open("pkg/mod.py")
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		if st.Size() != int64(len(body)) {
			t.Fatalf("method %d: size %d", method, st.Size())
		}
		p := make([]byte, 5)
		if _, err := f.(*File).ReadAt(p, 9995); err != nil || string(p) != "56789" {
			t.Fatalf("method %d: ReadAt %q %v", method, p, err)
		}
		if _, err := f.(*File).Seek(10, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		rest, _ := io.ReadAll(f.(io.Reader))
		if string(rest) != body[10:] {
			t.Fatalf("method %d: read after seek %d bytes", method, len(rest))
		}
		entries, err := fs.ReadDir(z, "pkg")
		if err != nil || len(entries) != 2 {
			t.Fatalf("method %d: ReadDir %v %v", method, entries, err)
		}
		if _, err := z.Open("pkg/missing.py"); err == nil {
			t.Fatal("a missing entry opened")
		}
	}
	ra := archive(t, zip.Deflate, map[string]string{"a.py": body})
	if _, err := New("stdlib.zip", ra, ra.Size(), true); err == nil || !strings.Contains(err.Error(), "a.py is compressed") {
		t.Fatalf("a store-only archive accepted a deflated entry: %v", err)
	}
}

// Open files of one deflated entry share its inflated bytes: a guest
// opening it a thousand times costs its size once.
func TestOpensOfOneEntryShareItsInflatedBytes(t *testing.T) {
	ra := archive(t, zip.Deflate, map[string]string{"big.py": strings.Repeat("x = 1\n", 100000)})
	z, err := New("t.zip", ra, ra.Size(), false)
	if err != nil {
		t.Fatal(err)
	}
	var files []fs.File
	p := make([]byte, 1)
	for i := 0; i < 1000; i++ {
		f, err := z.Open("big.py")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Read(p); err != nil || p[0] != 'x' {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	first := files[0].(*File).SectionReader
	last := files[len(files)-1].(*File).SectionReader
	a, _, _ := first.Outer()
	b, _, _ := last.Outer()
	if a != b {
		t.Fatal("two open files of one entry inflated it twice")
	}
}
