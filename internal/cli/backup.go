package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/version"
)

func isPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// runBackup is patchd admin backup --to FILE: a consistent copy of the
// database, made while the server runs (SQLite: VACUUM INTO; PostgreSQL:
// pg_dump's custom format; docs/operations.md). Unlike the other admin
// commands it applies no migration and creates no database: a backup
// changes nothing.
func runBackup(ctx context.Context, args []string, stdio IO) error {
	const name = "patchd admin backup"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dataDir, db, to string
	config.Common(fs, &dataDir, &db)
	fs.StringVar(&to, "to", "", "the copy to write; must not exist (created 0600)")
	if err := parseFlags(fs, args, "\n\nWrites a consistent copy of the SQLite database to --to while the server may run."); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags come before arguments)", name, fs.Arg(0))
	}
	if strings.TrimSpace(to) == "" {
		return usagef("%s: --to FILE is required", name)
	}
	from := "PostgreSQL"
	if !isPostgres(db) {
		// The file store.Open would use (and create when missing).
		from = strings.TrimPrefix(db, "sqlite:")
		if from == "" {
			from = filepath.Join(dataDir, "patchd.db")
		}
		if _, err := os.Stat(from); err != nil {
			return fmt.Errorf("%s: no database to copy: %w", name, err)
		}
	}
	s, err := store.Open(ctx, db, dataDir, store.Options{MaxConns: 1, SkipMigrate: true})
	if err != nil {
		return err
	}
	defer s.Close()
	size, err := s.Backup(ctx, to)
	if err != nil {
		return err
	}
	return printJSON(stdio.Out, map[string]any{"ok": true, "engine": s.Engine(), "from": from, "to": to, "bytes": size})
}

// runRestore is patchd admin restore --from FILE: a copy patchd admin
// backup made put back as the database, which must be new and empty, with
// the server stopped; then the database is opened as the server would
// (migrated to this version, its secrets opened with the secret key).
func runRestore(ctx context.Context, args []string, stdio IO) error {
	const name = "patchd admin restore"
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var dataDir, db, keyFile, from string
	config.Common(fs, &dataDir, &db)
	config.SecretKeyFlag(fs, &keyFile)
	fs.StringVar(&from, "from", "", "the copy patchd admin backup wrote")
	if err := parseFlags(fs, args, "\n\nPuts a copy patchd admin backup wrote back as the database (new and empty; the server stopped)."); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("%s: unexpected argument %q (flags come before arguments)", name, fs.Arg(0))
	}
	if strings.TrimSpace(from) == "" {
		return usagef("%s: --from FILE is required", name)
	}
	key, err := secretKey(dataDir, keyFile)
	if err != nil {
		return err
	}
	to, err := store.Restore(ctx, db, dataDir, from)
	if err != nil {
		return err
	}
	if isPostgres(db) {
		to = "PostgreSQL"
	}
	s, err := store.Open(ctx, db, dataDir, store.Options{MaxConns: 2, SecretKey: key, ServerVersion: version.Version})
	if err != nil {
		return fmt.Errorf("%s: the copy is back in place but does not open: %w", name, err)
	}
	defer s.Close()
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	return printJSON(stdio.Out, map[string]any{"ok": true, "engine": s.Engine(), "from": from, "to": to, "schemaVersion": v})
}
