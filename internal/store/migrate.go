package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations
var migrations embed.FS

// migration is one numbered schema step, kept per engine because DDL differs.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations answers the engine's migrations in order: those whose SQL
// reads the same on both engines are in migrations/shared, once; the
// others in migrations/ENGINE. A number is in one of the two only.
func (s *Store) migrations() ([]migration, error) {
	var out []migration
	seen := map[int]string{}
	for _, dir := range []string{"migrations/shared", "migrations/" + s.engine} {
		entries, err := fs.ReadDir(migrations, dir)
		if err != nil {
			return nil, fmt.Errorf("store: read migrations: %w", err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".sql") {
				continue
			}
			num, _, ok := strings.Cut(e.Name(), "_")
			v, err := strconv.Atoi(num)
			if !ok || err != nil {
				return nil, fmt.Errorf("store: migration %s: name must start with a number and '_'", e.Name())
			}
			if other, dup := seen[v]; dup {
				return nil, fmt.Errorf("store: migrations %s and %s/%s have one number", other, dir, e.Name())
			}
			seen[v] = dir + "/" + e.Name()
			body, err := fs.ReadFile(migrations, dir+"/"+e.Name())
			if err != nil {
				return nil, fmt.Errorf("store: read migration %s: %w", e.Name(), err)
			}
			out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// Migrate applies the migrations not applied yet, each in its own
// transaction. On PostgreSQL an advisory lock keeps replicas that start
// together from applying the same step twice.
func (s *Store) Migrate(ctx context.Context) error {
	all, err := s.migrations()
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("store: create schema_migrations: %w", err)
	}
	if err := s.checkKnown(ctx, all); err != nil {
		return err
	}
	applied := 0
	for _, m := range all {
		err := s.InTx(ctx, func(tx *Tx) error {
			if s.engine == Postgres {
				if _, err := tx.exec(ctx, `SELECT pg_advisory_xact_lock(7201)`); err != nil {
					return fmt.Errorf("store: migration lock: %w", err)
				}
			}
			var n int
			if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&n); err != nil {
				return fmt.Errorf("store: read schema_migrations: %w", err)
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("store: migration %s: %w", m.name, err)
			}
			if _, err := tx.exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, millis(time.Now())); err != nil {
				return fmt.Errorf("store: record migration %s: %w", m.name, err)
			}
			applied++
			return nil
		})
		if err != nil {
			return err
		}
	}
	if applied == 0 {
		return nil
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if _, err := s.exec(ctx, `INSERT INTO schema_server (id, server_version, schema_version, migrated_at) VALUES (1, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET server_version = excluded.server_version,
			schema_version = excluded.schema_version, migrated_at = excluded.migrated_at`,
		s.serverVersion, v, millis(time.Now())); err != nil {
		return fmt.Errorf("store: record the server version: %w", err)
	}
	return nil
}

// SchemaTooNewError is answered by Open and Migrate when the database holds
// migrations this program does not know: a newer patchd migrated it, and
// an older one must not run on a schema it was not written for.
type SchemaTooNewError struct {
	// DatabaseSchema is the database's newest migration, DatabaseServer
	// the patchd version that last migrated it ("" when the database does
	// not say: migrated before versions were recorded).
	DatabaseSchema int
	DatabaseServer string
	// ServerSchema is this program's newest migration, ServerVersion its
	// patchd version.
	ServerSchema  int
	ServerVersion string
	// Unknown names the database's migrations this program lacks.
	Unknown []string
}

func (e *SchemaTooNewError) Error() string {
	by := "a newer patchd"
	if e.DatabaseServer != "" {
		by = "patchd " + e.DatabaseServer
	}
	return fmt.Sprintf("store: the database is at schema %d, migrated by %s; this is patchd %s, which knows schema %d "+
		"(the database has migrations it does not: %s). Run patchd %s or newer, or restore a backup made before the upgrade",
		e.DatabaseSchema, by, e.ServerVersion, e.ServerSchema, strings.Join(e.Unknown, ", "), orNewer(e.DatabaseServer))
}

func orNewer(v string) string {
	if v == "" {
		return "the version that migrated it"
	}
	return v
}

// checkKnown answers a *SchemaTooNewError when schema_migrations records a
// migration that is not among all.
func (s *Store) checkKnown(ctx context.Context, all []migration) error {
	known := make(map[int]bool, len(all))
	ours := 0
	for _, m := range all {
		known[m.version] = true
		ours = max(ours, m.version)
	}
	rows, err := s.read.QueryContext(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
	var unknown []string
	newest := 0
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var v int
		var name string
		if err := r.Scan(&v, &name); err != nil {
			return err
		}
		newest = max(newest, v)
		if !known[v] {
			unknown = append(unknown, name)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store: read schema_migrations: %w", err)
	}
	if len(unknown) == 0 {
		return nil
	}
	e := &SchemaTooNewError{DatabaseSchema: newest, ServerSchema: ours, ServerVersion: s.serverVersion, Unknown: unknown}
	// schema_server is there from migration 050 on.
	var by string
	if err := s.read.QueryRowContext(ctx, `SELECT server_version FROM schema_server WHERE id = 1`).Scan(&by); err == nil {
		e.DatabaseServer = by
	}
	return e
}

// SchemaVersion is the newest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.queryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: schema version: %w", err)
	}
	return v, nil
}

// SchemaServer is the patchd version that last applied migrations to the
// database ("" before migration 050 recorded it).
func (s *Store) SchemaServer(ctx context.Context) (string, error) {
	var v string
	err := s.queryRow(ctx, `SELECT server_version FROM schema_server WHERE id = 1`).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: schema server: %w", err)
	}
	return v, nil
}
