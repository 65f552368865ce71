package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/patchd/patchd/openapi"
)

func TestWritesTheServedBytes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := run([]string{path}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := openapi.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("wrote %d bytes, the server serves %d", len(got), len(want))
	}
	if err := run([]string{path, "extra"}); err == nil {
		t.Error("two arguments accepted")
	}
	if err := run([]string{filepath.Join(t.TempDir(), "missing", "x.json")}); err == nil {
		t.Error("a file in a missing folder was written")
	}
}
