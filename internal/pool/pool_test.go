package pool

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func gz(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A buffer comes back empty whatever it held; one over maxBuffer is not
// kept.
func TestBufferComesBackEmpty(t *testing.T) {
	for range 3 {
		b := Buffer()
		if b.Len() != 0 {
			t.Fatalf("a buffer from the pool holds %q", b.String())
		}
		b.WriteString("an earlier body")
		PutBuffer(b)
	}
	big := Buffer()
	big.Grow(maxBuffer + 1)
	PutBuffer(big)
	for range 3 {
		if b := Buffer(); b == big {
			t.Fatal("a buffer over maxBuffer was kept")
		}
	}
}

// A reader given back after a body that is not gzip reads the next one,
// and readers read each their own body.
func TestGunzipReusedReaders(t *testing.T) {
	zr, err := Gunzip(bytes.NewReader(gz(t, "first")))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(zr); err != nil || string(got) != "first" {
		t.Fatalf("first: %q %v", got, err)
	}
	PutGunzip(zr)
	if _, err := Gunzip(bytes.NewReader([]byte("not gzip"))); err == nil {
		t.Fatal("a body that is not gzip was accepted")
	}
	for _, want := range []string{"second", "third, longer than the others"} {
		zr, err := Gunzip(bytes.NewReader(gz(t, want)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := io.ReadAll(zr); err != nil || string(got) != want {
			t.Fatalf("got %q %v, want %q", got, err, want)
		}
		PutGunzip(zr)
	}
}
