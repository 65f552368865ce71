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
)

// runBackup is patchd admin backup --to FILE: a consistent copy of the SQLite
// database, made while the server runs (docs/operations.md). Unlike the other
// admin commands it applies no migration and creates no database: a backup
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
	if strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://") {
		return usagef("%s: the database is PostgreSQL: back it up with pg_dump (docs/operations.md)", name)
	}
	// The file store.Open would use (and create when missing).
	path := strings.TrimPrefix(db, "sqlite:")
	if path == "" {
		path = filepath.Join(dataDir, "patchd.db")
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("%s: no database to copy: %w", name, err)
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
	return printJSON(stdio.Out, map[string]any{"ok": true, "from": path, "to": to, "bytes": size})
}
