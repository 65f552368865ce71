package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

// TestStatementChunks: multi-row statements write any number of rows in
// chunks of 64 and then of powers of two, largest first, so that a table's
// inserts come in seven statement texts.
func TestStatementChunks(t *testing.T) {
	t.Parallel()
	sizes := map[int]bool{}
	for n := range 300 {
		chunks := store.StatementChunksForTest(n)
		sum := 0
		for i, c := range chunks {
			sum += c
			sizes[c] = true
			if c < 1 || c > 64 || c&(c-1) != 0 || (i > 0 && c > chunks[i-1]) {
				t.Fatalf("%d rows: chunks %v", n, chunks)
			}
		}
		if sum != n {
			t.Fatalf("%d rows: chunks %v", n, chunks)
		}
	}
	if len(sizes) != 7 {
		t.Fatalf("chunk sizes %v", slices.Sorted(func(yield func(int) bool) {
			for c := range sizes {
				if !yield(c) {
					return
				}
			}
		}))
	}
}

// TestWriterStatementCache: on SQLite a statement write transactions
// prepared twice is kept for the next ones on the writer's connection, also
// when the second transaction was rolled back; a statement seen once is
// not (migrations would fill the cache); with the cache full, statements
// still run, prepared for their transaction. PostgreSQL keeps none (pgx
// caches its own).
func TestWriterStatementCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	sqlite := s.Engine() == store.SQLite
	rename := func(query, name string, fail error) error {
		return s.InTx(ctx, func(tx *store.Tx) error {
			if err := tx.ExecForTest(ctx, query, name, o.ID); err != nil {
				return err
			}
			return fail
		})
	}
	named := func(want string) {
		t.Helper()
		got, err := s.FindOrg(ctx, o.ID)
		if err != nil || got.Name != want {
			t.Fatalf("organization named %q (%v), want %q", got.Name, err, want)
		}
	}
	q := `UPDATE orgs SET name = ? WHERE id = ?`
	for i, name := range []string{"First", "Second", "Third"} {
		if err := rename(q, name, nil); err != nil {
			t.Fatal(err)
		}
		named(name)
		if want := sqlite && i > 0; s.WriteStmtCachedForTest(q) != want {
			t.Fatalf("after renaming to %s: cached %v on %s", name, !want, s.Engine())
		}
	}
	failed := errors.New("fails after the statement")
	q2 := `UPDATE orgs SET name = ? WHERE id = ? AND 1 = 1`
	if err := rename(q2, "Fourth", nil); err != nil {
		t.Fatal(err)
	}
	if err := rename(q2, "Rolled back", failed); !errors.Is(err, failed) {
		t.Fatal(err)
	}
	named("Fourth")
	if s.WriteStmtCachedForTest(q2) != sqlite {
		t.Fatalf("statement of a rolled-back transaction: cached %v on %s", !sqlite, s.Engine())
	}
	if err := rename(q2, "Fifth", nil); err != nil {
		t.Fatal(err)
	}
	named("Fifth")
	s.FillWriteStmtsForTest()
	q3 := `UPDATE orgs SET name = ? WHERE id = ? AND 2 = 2`
	for _, name := range []string{"Sixth", "Seventh"} {
		if err := rename(q3, name, nil); err != nil {
			t.Fatal(err)
		}
		named(name)
	}
	if s.WriteStmtCachedForTest(q3) {
		t.Fatal("a statement was cached beyond the bound")
	}
}
