// Package dberr holds the errors every store operation may answer and the
// test for a database that cannot serve a request now. It imports nothing
// of patchd, so the HTTP layers (httpx) map store errors to statuses
// without importing the store.
package dberr

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
)

// Errors every store operation may answer; callers test them with
// errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// ErrUnavailable marks a failure of the database itself, not of the request:
// wrap it (fmt.Errorf("…: %w", ErrUnavailable)) where the store decides so.
// IsUnavailable recognises it and the engines' own transient errors.
var ErrUnavailable = errors.New("database unavailable")

// SQLite result codes (primary codes; extended codes carry them in the low
// byte) that say the database cannot take the request now.
const (
	sqliteBusy     = 5
	sqliteLocked   = 6
	sqliteNoMem    = 7
	sqliteReadOnly = 8 // the file or its folder became read-only under the server
	sqliteIOErr    = 10
	sqliteFull     = 13
	sqliteCantOpen = 14
	sqliteProtocol = 15
)

// IsUnavailable tells whether err is the database being unreachable, busy,
// full or otherwise unable to serve the request for now, as opposed to a
// request the database refused (a missing row, a constraint) or a bug. The
// request may succeed if sent again later: the HTTP layers answer it with
// 503 and Retry-After, never with a 4xx a client would treat as final. A
// cancelled context is not unavailability (the caller went away); a
// deadline is (a pool wait or a statement that ran out of time).
func IsUnavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, sql.ErrConnDone) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	// A failure to connect is unavailability whatever SQLSTATE the server
	// gave for it (55000 for a database not accepting connections, 28000
	// for a login refused by pg_hba.conf): the request never reached a
	// statement. So the connect error is looked at before the server's.
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgUnavailable(pgErr.Code)
	}
	var netErr *net.OpError
	if errors.As(err, &netErr) {
		return true
	}
	var sqliteErr *sqlite.Error
	if errors.As(err, &sqliteErr) {
		switch sqliteErr.Code() & 0xff {
		case sqliteBusy, sqliteLocked, sqliteNoMem, sqliteReadOnly, sqliteIOErr, sqliteFull, sqliteCantOpen, sqliteProtocol:
			return true
		}
		return false
	}
	// database/sql's "database is closed" has no exported value: the pool
	// was closed under the request (the server is stopping).
	return strings.Contains(err.Error(), "sql: database is closed")
}

// pgUnavailable tells whether a PostgreSQL SQLSTATE is transient: the
// connection (class 08), a serialization failure or deadlock (40001,
// 40P01), insufficient resources such as a full disk or too many
// connections (class 53), the server shutting down or starting (57P01 to
// 57P03), a lock not available (55P03), a statement timeout (57014 is
// query_canceled, which pgx answers for statement_timeout), a write sent
// to a standby (25006, during a fail-over), an I/O error (58000, 58030) or
// the database gone (3D000).
func pgUnavailable(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), strings.HasPrefix(code, "53"):
		return true
	}
	switch code {
	case "40001", "40P01", "57P01", "57P02", "57P03", "55P03", "57014", "3D000", "58000", "58030", "25006":
		return true
	}
	return false
}
