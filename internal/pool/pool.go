// Package pool holds the process's reusable gzip readers and byte buffers.
// Agents' request bodies and stored datasets are read through them instead
// of allocating, for each, a gzip reader (its 32 KiB window and tables) and
// a buffer grown from nothing: while a fleet enrolls, those would be a
// large share of what the server allocates, collector work the one
// database writer shares its processors with.
package pool

import (
	"bytes"
	"compress/gzip"
	"io"
	"sync"
)

var (
	buffers sync.Pool // *bytes.Buffer
	readers sync.Pool // *gzip.Reader
)

// maxBuffer is the largest buffer kept for reuse: a rare large one (an
// inventory of many megabytes) is left to the collector rather than kept.
const maxBuffer = 4 << 20

// Buffer is an empty buffer; PutBuffer gives it back once nothing refers
// to its bytes any more.
func Buffer() *bytes.Buffer {
	if b, ok := buffers.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

// PutBuffer gives a buffer back for reuse.
func PutBuffer(b *bytes.Buffer) {
	if b.Cap() > maxBuffer {
		return
	}
	b.Reset()
	buffers.Put(b)
}

// Gunzip is a gzip reader of r (its header read already); PutGunzip gives
// it back once read.
func Gunzip(r io.Reader) (*gzip.Reader, error) {
	if zr, ok := readers.Get().(*gzip.Reader); ok {
		if err := zr.Reset(r); err != nil {
			readers.Put(zr)
			return nil, err
		}
		return zr, nil
	}
	return gzip.NewReader(r)
}

// PutGunzip gives a reader back for reuse.
func PutGunzip(zr *gzip.Reader) { readers.Put(zr) }
