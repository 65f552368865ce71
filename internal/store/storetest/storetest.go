// Package storetest opens a fresh, isolated store for a test: SQLite in the
// test's temporary folder, or, when PATCHD_TEST_POSTGRES holds a PostgreSQL
// URL, a new schema of that database that is dropped when the test ends. The
// same tests therefore run on both engines, in parallel.
package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

// EnvPostgres names the variable that selects PostgreSQL for tests.
const EnvPostgres = "PATCHD_TEST_POSTGRES"

var (
	adminOnce sync.Once
	adminDB   *sql.DB
	adminErr  error
)

// SecretKey is the secret key every test store is opened with (a fixed
// test key, so that a test may open its database again, as a second
// replica or process would, with the same key).
var SecretKey = store.SecretKey{Text: "dGVzdCBrZXkgb2YgcGF0Y2hkIHN0b3JlIHRlc3RzISE="}

// Open opens an empty, migrated store for t and closes it when t ends.
func Open(t testing.TB) *store.Store {
	t.Helper()
	s, _ := OpenURL(t)
	return s
}

// OpenURL is Open that also answers the URL the store was opened with, so a
// test can start a second process or replica on the same database.
func OpenURL(t testing.TB) (*store.Store, string) {
	t.Helper()
	u := URL(t)
	s, err := store.Open(context.Background(), u, "", store.Options{MaxConns: 8, SecretKey: SecretKey})
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, u
}

// URL makes an empty database for t and answers its URL without opening it.
func URL(t testing.TB) string {
	t.Helper()
	pg := os.Getenv(EnvPostgres)
	if pg == "" {
		return "sqlite:" + t.TempDir() + "/test.db"
	}
	adminOnce.Do(func() {
		adminDB, adminErr = sql.Open("pgx", pg)
		if adminErr == nil {
			adminErr = adminDB.Ping()
		}
	})
	if adminErr != nil {
		t.Fatalf("storetest: %s is set but PostgreSQL cannot be reached: %v", EnvPostgres, adminErr)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := adminDB.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatalf("storetest: create schema: %v", err)
	}
	t.Cleanup(func() { adminDB.Exec("DROP SCHEMA " + schema + " CASCADE") })
	parsed, err := url.Parse(pg)
	if err != nil {
		t.Fatalf("storetest: %s: %v", EnvPostgres, err)
	}
	q := parsed.Query()
	q.Set("search_path", schema)
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// Postgres tells whether tests run on PostgreSQL.
func Postgres() bool { return os.Getenv(EnvPostgres) != "" }
