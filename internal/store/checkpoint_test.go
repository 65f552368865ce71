package store_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestBackgroundCheckpoint: the pages a write commits into SQLite's log
// reach the database file through the background checkpoint, long before
// the log holds the writer's own threshold (64 MiB).
func TestBackgroundCheckpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "patchd.db")
	s, err := store.Open(ctx, "sqlite:"+path, "", store.Options{SecretKey: storetest.SecretKey})
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
	o := newOrg(t, s, "checkpoint")
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

// TestWalFramesLeft reads the wal-index header as the checkpointer does
// and checks it against SQLite's own count of the log's frames.
func TestWalFramesLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	insert := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := db.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, strings.Repeat("x", 1000)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	insert(400)
	left, pageSize, ok := store.WalFramesLeftForTest(path + "-shm")
	if !ok || pageSize != 4096 || left == 0 {
		t.Fatalf("header read: %d frames left, page size %d, ok %v", left, pageSize, ok)
	}
	var busy, frames, copied int64
	if err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied); err != nil {
		t.Fatal(err)
	}
	if frames != left || copied != frames {
		t.Fatalf("the header said %d frames left; the checkpoint found %d and copied %d", left, frames, copied)
	}
	if left, _, ok := store.WalFramesLeftForTest(path + "-shm"); !ok || left != 0 {
		t.Fatalf("after a full checkpoint: %d frames left (ok %v)", left, ok)
	}
	insert(10) // the log is written from its start again
	if again, _, ok := store.WalFramesLeftForTest(path + "-shm"); !ok || again == 0 || again >= left {
		t.Fatalf("after 10 more rows: %d frames left (ok %v), want between 1 and %d", again, ok, left)
	}
	if _, _, ok := store.WalFramesLeftForTest(filepath.Join(t.TempDir(), "none-shm")); ok {
		t.Fatal("a missing file read as a header")
	}
}
