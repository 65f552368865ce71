package dberr_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite"

	"github.com/patchd/patchd/internal/dberr"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("store: something: %w", err) }
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not found", wrap(dberr.ErrNotFound), false},
		{"conflict", wrap(dberr.ErrConflict), false},
		{"a bug", errors.New("store: scan: converting NULL to string"), false},
		{"cancelled by the client", wrap(context.Canceled), false},
		{"marked", wrap(dberr.ErrUnavailable), true},
		{"pool wait ran out", wrap(context.DeadlineExceeded), true},
		{"connection refused", wrap(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{"connection reset", wrap(syscall.ECONNRESET), true},
		{"disk full (file)", wrap(syscall.ENOSPC), true},
		{"pool closed", wrap(sql.ErrConnDone), true},
		{"pg unique violation", wrap(&pgconn.PgError{Code: "23505"}), false},
		{"pg undefined column", wrap(&pgconn.PgError{Code: "42703"}), false},
		{"pg serialization failure", wrap(&pgconn.PgError{Code: "40001"}), true},
		{"pg deadlock", wrap(&pgconn.PgError{Code: "40P01"}), true},
		{"pg disk full", wrap(&pgconn.PgError{Code: "53100"}), true},
		{"pg too many connections", wrap(&pgconn.PgError{Code: "53300"}), true},
		{"pg connection failure", wrap(&pgconn.PgError{Code: "08006"}), true},
		{"pg shutting down", wrap(&pgconn.PgError{Code: "57P01"}), true},
		{"pg starting up", wrap(&pgconn.PgError{Code: "57P03"}), true},
		{"pg read-only transaction", wrap(&pgconn.PgError{Code: "25006"}), true},
	} {
		if got := dberr.IsUnavailable(c.err); got != c.want {
			t.Errorf("%s: IsUnavailable(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestIsUnavailableSQLite classifies real SQLite errors: busy (another
// connection holds the write lock) and full (the file may not grow).
func TestIsUnavailableSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.db")
	open := func() *sql.DB {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(0)")
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	if _, err := a.Exec(`CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Exec(`INSERT INTO t VALUES ('x')`); err != nil {
		t.Fatal(err)
	}
	// Busy.
	tx, err := a.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t VALUES ('y')`); err != nil {
		t.Fatal(err)
	}
	_, err = b.Exec(`INSERT INTO t VALUES ('z')`)
	if err == nil || !dberr.IsUnavailable(fmt.Errorf("store: insert: %w", err)) {
		t.Errorf("busy: %v is not unavailable", err)
	}
	tx.Rollback()
	// Full.
	if _, err := a.Exec(`PRAGMA max_page_count = 8`); err != nil {
		t.Fatal(err)
	}
	_, err = a.Exec(`INSERT INTO t SELECT hex(randomblob(4000)) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 100) SELECT i FROM n)`)
	if err == nil || !strings.Contains(err.Error(), "full") || !dberr.IsUnavailable(err) {
		t.Errorf("full: %v is not unavailable", err)
	}
	// A constraint is the request's fault.
	if _, err := b.Exec(`CREATE TABLE u (v TEXT UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	b.Exec(`INSERT INTO u VALUES ('a')`)
	if _, err := b.Exec(`INSERT INTO u VALUES ('a')`); err == nil || dberr.IsUnavailable(err) {
		t.Errorf("unique violation: %v counted unavailable", err)
	}
}
