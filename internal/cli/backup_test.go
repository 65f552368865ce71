package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// mainArgs runs the command line with exactly args.
func mainArgs(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// TestAdminBackup copies a SQLite database that a running server holds open,
// with changes still only in its write-ahead log (a plain file copy of
// patchd.db would lose them), and reads them back from the copy.
func TestAdminBackup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "patchd.db")

	server, err := store.Open(ctx, db, dir, store.Options{SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if _, err := admin.CreateOrg(ctx, server, "Acme", "UTC"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(db + "-wal"); err != nil || st.Size() == 0 {
		t.Fatalf("the test wants changes in the WAL: %v", err)
	}

	copyPath := filepath.Join(dir, "copy.db")
	code, out, errOut := mainArgs(t, "admin", "backup", "--db", db, "--to", copyPath)
	if code != 0 {
		t.Fatalf("backup: exit %d: %s", code, errOut)
	}
	m := decode(t, out)
	if m["ok"] != true || m["to"] != copyPath || m["bytes"].(float64) <= 0 {
		t.Fatalf("backup answered %v", m)
	}
	st, err := os.Stat(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("copy is %v, want 0600", st.Mode().Perm())
	}
	if int64(m["bytes"].(float64)) != st.Size() {
		t.Errorf("bytes %v, file has %d", m["bytes"], st.Size())
	}

	code, out, errOut = mainArgs(t, "admin", "org", "list", "--db", copyPath)
	if code != 0 || !strings.Contains(out, `"name":"Acme"`) {
		t.Fatalf("org list on the copy: exit %d: %s %s", code, out, errOut)
	}

	// The server keeps working on its database after the copy.
	if _, err := admin.CreateOrg(ctx, server, "Beta", "UTC"); err != nil {
		t.Fatal(err)
	}
}

func TestAdminBackupRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "patchd.db")
	s, err := store.Open(ctx, db, dir, store.Options{SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nothing-here", "patchd.db")

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no --to", []string{"--db", db}, 2, "--to FILE is required"},
		{"an existing file", []string{"--db", db, "--to", existing}, 1, "file exists"},
		{"PostgreSQL not reachable", []string{"--db", "postgres://postgres@127.0.0.1:1/none", "--to", filepath.Join(dir, "pg.db")}, 1, "connect"},
		{"no database", []string{"--db", missing, "--to", filepath.Join(dir, "none.db")}, 1, "no database to copy"},
		{"an argument", []string{"--db", db, "--to", filepath.Join(dir, "x.db"), "extra"}, 2, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := mainArgs(t, append([]string{"admin", "backup"}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d with %q: %s", code, tt.code, tt.want, errOut)
			}
		})
	}
	if b, err := os.ReadFile(existing); err != nil || string(b) != "keep me" {
		t.Errorf("the existing file was changed: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Errorf("a backup of a missing database created its folder: %v", err)
	}
	for _, f := range []string{"pg.db", "none.db", "x.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s was created: %v", f, err)
		}
	}
}
