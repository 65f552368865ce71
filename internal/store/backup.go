package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
)

// ErrBackupPostgres is answered by Backup on PostgreSQL, whose own tools
// (pg_dump, base backups) make consistent copies.
var ErrBackupPostgres = errors.New("store: backup copies a SQLite database; on PostgreSQL use pg_dump or a base backup")

// Backup writes a consistent copy of the SQLite database to path while the
// server keeps running (VACUUM INTO reads one snapshot; with WAL it blocks no
// writer), then checks the copy with PRAGMA quick_check. path must not exist:
// it is created 0600, as the copy holds every computer's inventory (its
// secrets stay sealed: the secret key is not in the copy), and removed
// again if the copy fails. It answers the copy's size in bytes.
func (s *Store) Backup(ctx context.Context, path string) (int64, error) {
	if s.engine != SQLite {
		return 0, ErrBackupPostgres
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("store: backup: create %s: %w", path, err)
	}
	f.Close()
	size, err := s.backupInto(ctx, path)
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
	copyDB, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return 0, fmt.Errorf("store: backup: open the copy: %w", err)
	}
	defer copyDB.Close()
	var check string
	if err := copyDB.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&check); err != nil {
		return 0, fmt.Errorf("store: backup: check the copy: %w", err)
	}
	if check != "ok" {
		return 0, fmt.Errorf("store: backup: the copy fails its check: %s", check)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, fmt.Errorf("store: backup: %w", err)
	}
	return st.Size(), nil
}
