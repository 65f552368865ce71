package store_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestSQLiteFilesArePrivate: a new data folder is 0700 and the database
// with its -wal and -shm files 0600; an existing database and data folder
// opened again have group and other permissions taken off.
func TestSQLiteFilesArePrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX permissions")
	}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	s, err := store.Open(ctx, "", dir, store.Options{SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "patchd.db")
	mode := func(p string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	if m := mode(dir); m != 0o700 {
		t.Errorf("data folder %v", m)
	}
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if m := mode(p); m != 0o600 {
			t.Errorf("%s: %v", filepath.Base(p), m)
		}
	}
	s.Close()

	// A database left readable by everyone (as earlier versions made it).
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err = store.Open(ctx, "", dir, store.Options{SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if m := mode(dir); m != 0o700 {
		t.Errorf("reopened data folder %v", m)
	}
	for _, p := range []string{db, db + "-wal", db + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			if m := mode(p); m != 0o600 {
				t.Errorf("reopened %s: %v", filepath.Base(p), m)
			}
		}
	}
}
