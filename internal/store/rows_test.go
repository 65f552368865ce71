package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestRowsFailingMidway: a query whose third row the database cannot
// compute fails as a whole through the store's row scanning; its first
// rows are not answered as if they were all.
func TestRowsFailingMidway(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	// SQLite: abs() of the smallest integer overflows; PostgreSQL: a
	// division by zero. Both are raised while the rows are read, after the
	// first rows were handed out.
	failing := `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5)
		SELECT CAST(x AS TEXT) FROM n WHERE abs(CASE WHEN x = 3 THEN -9223372036854775807 - 1 ELSE x END) > 0`
	if s.Engine() == store.Postgres {
		failing = `SELECT CAST(x AS TEXT) FROM generate_series(1, 5) AS x WHERE 1 / (x - 3) IS NOT NULL OR x > 0`
	}
	got, err := s.QueryStringsForTest(ctx, failing)
	if err == nil || got != nil {
		t.Fatalf("a query failing at its third row answered %q, %v", got, err)
	}
	if !strings.Contains(err.Error(), "overflow") && !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("error %v does not say what failed", err)
	}
	ok := `SELECT 'a' UNION ALL SELECT 'b'`
	if got, err := s.QueryStringsForTest(ctx, ok); err != nil || strings.Join(got, ",") != "a,b" {
		t.Fatalf("a query that succeeds: %q, %v", got, err)
	}
	if got, err := s.QueryStringsForTest(ctx, `SELECT 'a' WHERE 1 = 0`); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("an empty result: %#v, %v", got, err)
	}
	// A loop that stops (errStopRows) before the failing row: no error, and
	// the row that fails is never read.
	if got, err := s.FirstStringsForTest(ctx, failing, 2); err != nil || strings.Join(got, ",") != "1,2" {
		t.Fatalf("stopping after two rows: %q, %v", got, err)
	}
	if got, err := s.FirstStringsForTest(ctx, failing, 4); err == nil {
		t.Fatalf("stopping after the failing row answered %q", got)
	}
}
