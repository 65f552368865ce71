package store_test

import (
	"context"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

// upgradeKeeps checks that view answers want, takes the database back to
// before a migration (undo), migrates, and checks that view answers want
// again: what an upgrade of a database with rows in it must keep.
func upgradeKeeps(t *testing.T, s *store.Store, undo func(context.Context) error, view func() string, want string) {
	t.Helper()
	ctx := context.Background()
	if got := view(); got != want {
		t.Fatalf("before the upgrade:\n%s\nwant:\n%s", got, want)
	}
	if err := undo(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if got := view(); got != want {
		t.Fatalf("after the upgrade:\n%s\nwant:\n%s", got, want)
	}
}
