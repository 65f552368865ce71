package store_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
)

// TestBackgroundCheckpoint: the pages a write commits into SQLite's log
// reach the database file through the background checkpoint, long before
// the log holds the writer's own threshold (64 MiB).
func TestBackgroundCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "patchd.db")
	s, err := store.Open(ctx, "sqlite:"+path, "", store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	size := func(p string) int64 {
		fi, err := os.Stat(p)
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	o, err := s.CreateOrg(ctx, "checkpoint", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	before := size(path)
	if _, err := s.BulkEndpointsForTest(ctx, o.ID, 20000, time.Now()); err != nil {
		t.Fatal(err)
	}
	if wal := size(path + "-wal"); wal < 6<<20 || wal > 60<<20 {
		t.Fatalf("the log holds %d bytes; the test wants more than the background threshold and less than the writer's", wal)
	}
	for deadline := time.Now().Add(time.Minute); size(path) < before+4<<20; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the database file stayed at %d bytes (%d before the writes)", size(path), before)
		}
	}
}
