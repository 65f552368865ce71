package feeds

import (
	"archive/zip"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
)

// File is an opened feed file: a plain or gzip-compressed JSON document, or
// a zip archive whose every .json entry is a document (as osv.dev ships its
// per-ecosystem all.zip). Call Next until io.EOF, then Close.
type File struct {
	path    string
	f       *os.File
	zr      *zip.Reader
	entries []*zip.File
	next    int
	done    bool
	cur     io.Closer
}

var gzipMagic = []byte{0x1f, 0x8b}

// Open opens a feed file, recognising gzip and zip by their content (not
// only by the name).
func Open(name string) (*File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("feeds: open: %w", err)
	}
	ff := &File{path: name, f: f}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("feeds: open %s: %w", name, err)
	}
	if n == 4 && (string(magic[:]) == "PK\x03\x04" || string(magic[:]) == "PK\x05\x06") {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("feeds: open %s: %w", name, err)
		}
		zr, err := zip.NewReader(f, st.Size())
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("feeds: open %s: %w", name, err)
		}
		ff.zr = zr
		for _, e := range zr.File {
			if !e.FileInfo().IsDir() && strings.EqualFold(path.Ext(e.Name), ".json") {
				ff.entries = append(ff.entries, e)
			}
		}
		sort.Slice(ff.entries, func(i, j int) bool { return ff.entries[i].Name < ff.entries[j].Name })
	}
	return ff, nil
}

// Next answers the next document: its name (the file, or "file.zip:entry")
// and a reader valid until the following call to Next or Close.
func (ff *File) Next() (string, io.Reader, error) {
	if ff.cur != nil {
		ff.cur.Close()
		ff.cur = nil
	}
	if ff.zr != nil {
		if ff.next >= len(ff.entries) {
			return "", nil, io.EOF
		}
		e := ff.entries[ff.next]
		ff.next++
		rc, err := e.Open()
		if err != nil {
			return "", nil, fmt.Errorf("feeds: %s: %s: %w", ff.path, e.Name, err)
		}
		ff.cur = rc
		r, err := maybeGunzip(rc)
		if err != nil {
			return "", nil, fmt.Errorf("feeds: %s: %s: %w", ff.path, e.Name, err)
		}
		return ff.path + ":" + e.Name, r, nil
	}
	if ff.done {
		return "", nil, io.EOF
	}
	ff.done = true
	r, err := maybeGunzip(ff.f)
	if err != nil {
		return "", nil, fmt.Errorf("feeds: %s: %w", ff.path, err)
	}
	return ff.path, r, nil
}

// Close releases the file.
func (ff *File) Close() error {
	if ff.cur != nil {
		ff.cur.Close()
		ff.cur = nil
	}
	return ff.f.Close()
}

// maybeGunzip answers a reader of the decompressed stream when r starts
// with the gzip magic number, else r itself (buffered).
func maybeGunzip(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(magic) == 2 && magic[0] == gzipMagic[0] && magic[1] == gzipMagic[1] {
		return gzip.NewReader(br)
	}
	return br, nil
}

// Stats counts what ParseFile found.
type Stats struct {
	Documents int
	CVEs      int
	KEVs      int
	OSV       int
	Rejected  int // NVD records marked Rejected (not stored)
	MSRC      int // CVEs of MSRC CVRF documents
	Office    int // Microsoft 365 Apps releases (one per build and channel)
	EPSS      int // EPSS scores
}

// ParseFile opens a file (plain, .gz or .zip) and parses every document in
// it, whatever its format, into h.
func ParseFile(name string, h Handler) (Stats, error) {
	var st Stats
	ff, err := Open(name)
	if err != nil {
		return st, err
	}
	defer ff.Close()
	count := Handler{
		CVE:      func(c CVE) error { st.CVEs++; return call(h.CVE, c) },
		KEV:      func(k KEV) error { st.KEVs++; return call(h.KEV, k) },
		OSV:      func(a OSVAdvisory) error { st.OSV++; return call(h.OSV, a) },
		Rejected: func(id string) error { st.Rejected++; return call(h.Rejected, id) },
		MSRC:     func(d MSRCDocument) error { st.MSRC += len(d.Vulns); return call(h.MSRC, d) },
		OfficeBuilds: func(l []OfficeBuild) error {
			st.Office += len(l)
			return call(h.OfficeBuilds, l)
		},
		EPSS: func(e EPSS) error { st.EPSS++; return call(h.EPSS, e) },
	}
	for {
		doc, r, err := ff.Next()
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, err
		}
		if _, err := Parse(r, count); err != nil {
			return st, fmt.Errorf("%s: %w", doc, err)
		}
		st.Documents++
	}
}

func call[T any](fn func(T) error, v T) error {
	if fn == nil {
		return nil
	}
	return fn(v)
}
