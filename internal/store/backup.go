package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Backup writes a consistent copy of the database to path while the
// server keeps running, and answers the copy's size in bytes. path must not
// exist: it is created 0600, as the copy holds every computer's inventory
// (its secrets stay sealed: the secret key is not in the copy), and removed
// again if the copy fails.
//
// SQLite: VACUUM INTO reads one snapshot (with WAL it blocks no writer),
// then PRAGMA quick_check checks the copy. PostgreSQL: pg_dump, in its
// custom format, of the database (of the schema named by the URL's
// search_path, when it has one); pg_dump must be on the PATH.
func (s *Store) Backup(ctx context.Context, path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("store: backup: create %s: %w", path, err)
	}
	f.Close()
	var size int64
	if s.engine == Postgres {
		size, err = pgDump(ctx, s.url, path)
	} else {
		size, err = s.backupInto(ctx, path)
	}
	if err != nil {
		os.Remove(path)
		return 0, err
	}
	return size, nil
}

func (s *Store) backupInto(ctx context.Context, path string) (int64, error) {
	// The writer connection: readers are query_only. The CLI's store has
	// a writer of its own, so this holds up no server.
	if _, err := s.write.ExecContext(ctx, "VACUUM INTO ?", path); err != nil {
		return 0, fmt.Errorf("store: backup: vacuum into %s: %w", path, err)
	}
	if err := checkSQLiteFile(ctx, path); err != nil {
		return 0, fmt.Errorf("store: backup: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("store: backup: %w", err)
	}
	return st.Size(), nil
}

// checkSQLiteFile opens a SQLite file read-only and runs PRAGMA quick_check.
func checkSQLiteFile(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	if check != "ok" {
		return fmt.Errorf("%s fails its check: %s", path, check)
	}
	return nil
}

// libpq answers the connection string pg_dump and pg_restore take for a
// pgx URL (without the parameters only pgx knows) and the schema its
// search_path names ("" when none).
func libpq(pgURL string) (conn, schema string, err error) {
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", "", fmt.Errorf("store: the PostgreSQL URL: %w", err)
	}
	q := u.Query()
	schema = q.Get("search_path")
	for k := range q {
		if k == "search_path" || strings.HasPrefix(k, "pool_") || k == "statement_cache_capacity" ||
			k == "description_cache_capacity" || k == "default_query_exec_mode" {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	if strings.Contains(schema, ",") {
		return "", "", fmt.Errorf("store: backup and restore take one schema in search_path, not %q", schema)
	}
	return u.String(), schema, nil
}

// runPG runs a PostgreSQL client program, its error output in the error.
func runPG(ctx context.Context, name string, args ...string) error {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func pgDump(ctx context.Context, pgURL, path string) (int64, error) {
	conn, schema, err := libpq(pgURL)
	if err != nil {
		return 0, err
	}
	args := []string{"--format=custom", "--file=" + path}
	if schema != "" {
		args = append(args, "--schema="+schema)
	}
	if err := runPG(ctx, "pg_dump", append(args, "--dbname="+conn)...); err != nil {
		return 0, fmt.Errorf("store: backup: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("store: backup: %w", err)
	}
	return st.Size(), nil
}

// ErrRestoreNotEmpty is answered by Restore when the database to restore
// into already holds patchd's tables.
var ErrRestoreNotEmpty = errors.New("store: restore: the database is not empty; restore into a new, empty database " +
	"(SQLite: move the old file and its -wal and -shm files aside; PostgreSQL: a new database, or the schema dropped), with the server stopped")

// Restore puts a copy Backup made back as the database named by dbURL and
// dataDir (as in Open), which must not hold patchd's tables yet, and
// answers the path (SQLite) or URL the copy went to. The copy is checked
// first: a SQLite copy with PRAGMA quick_check, and both engines' copies
// by their format; its schema is brought up to date by the next Open,
// which also checks that the secret key opens its secrets.
//
// SQLite: the copy is written next to the database and renamed into place.
// PostgreSQL: pg_restore, in one transaction, without owners and grants
// (the objects belong to the user of dbURL); the copy recreates the
// schema it was made from.
func Restore(ctx context.Context, dbURL, dataDir, from string) (string, error) {
	head := make([]byte, 16)
	f, err := os.Open(from)
	if err != nil {
		return "", fmt.Errorf("store: restore: %w", err)
	}
	n, _ := io.ReadFull(f, head)
	f.Close()
	head = head[:n]
	isPG := strings.HasPrefix(dbURL, "postgres://") || strings.HasPrefix(dbURL, "postgresql://")
	switch {
	case isPG && !bytes.HasPrefix(head, []byte("PGDMP")):
		return "", fmt.Errorf("store: restore: %s is not a backup of a PostgreSQL database (pg_dump's custom format)", from)
	case !isPG && !bytes.HasPrefix(head, []byte("SQLite format 3\x00")):
		return "", fmt.Errorf("store: restore: %s is not a backup of a SQLite database", from)
	}
	if isPG {
		return dbURL, restorePostgres(ctx, dbURL, from)
	}
	path := strings.TrimPrefix(dbURL, "sqlite:")
	if path == "" {
		if dataDir == "" {
			dataDir = "."
		}
		path = filepath.Join(dataDir, "patchd.db")
	}
	return path, restoreSQLite(ctx, path, from)
}

func restoreSQLite(ctx context.Context, path, from string) error {
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil && st.Size() > 0 {
			return ErrRestoreNotEmpty
		}
	}
	if err := checkSQLiteFile(ctx, from); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	tmp := path + ".restore"
	if err := copyFile(from, tmp); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: restore: %w", err)
	}
	// An empty -wal or -shm of the database that was there belongs to no
	// database any more.
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("store: restore: %w", err)
	}
	return nil
}

// copyFile copies from to a new file to (0600) and syncs it.
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func restorePostgres(ctx context.Context, pgURL, from string) error {
	db, err := sql.Open("pgx", pgURL)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	var exists bool
	err = db.QueryRowContext(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists)
	db.Close()
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	if exists {
		return ErrRestoreNotEmpty
	}
	conn, _, err := libpq(pgURL)
	if err != nil {
		return err
	}
	if err := runPG(ctx, "pg_restore", "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error",
		"--dbname="+conn, from); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	return nil
}
