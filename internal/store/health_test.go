package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestWritable: a recent commit answers at once; a failure of the database
// after it makes Writable probe, and the probe's outcome is the answer.
func TestWritable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, u := storetest.OpenURL(t)
	if err := s.Writable(ctx, time.Hour); err != nil { // the migrations committed
		t.Fatal(err)
	}
	// A refusal of the request's data says nothing of the database.
	if err := s.InTx(ctx, func(*store.Tx) error { return dberr.ErrNotFound }); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatal(err)
	}
	undo := storetest.FailUpdates(t, u, "write_probe")
	if err := s.Writable(ctx, time.Hour); err != nil {
		t.Fatalf("a commit within the window and no failure of the database since: %v", err)
	}
	// A write the database could not take: the next check probes.
	full := fmt.Errorf("test: %w", dberr.ErrUnavailable)
	if err := s.InTx(ctx, func(*store.Tx) error { return full }); !errors.Is(err, full) {
		t.Fatal(err)
	}
	if err := s.Writable(ctx, time.Hour); err == nil {
		t.Fatal("Writable answered nil after a failed write while the probe write fails")
	}
	// Writes succeed again: once the failed probe's shared answer is past,
	// the next probe says so.
	undo()
	deadline := time.Now().Add(time.Minute)
	for err := s.Writable(ctx, time.Hour); err != nil; err = s.Writable(ctx, time.Hour) {
		if time.Now().After(deadline) {
			t.Fatalf("writes succeed again but Writable still answers %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
