package cli

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestAdminBackupRestore: patchd admin backup of a database a running
// server holds (SQLite: VACUUM INTO; PostgreSQL: pg_dump), the database
// wiped, patchd admin restore, and a server on the restored database
// answers the API as the first did.
func TestAdminBackupRestore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.URL(t)
	s, err := store.Open(ctx, db, "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "patchd.backup")
	var before map[string]any
	var cred struct{ id, secret string }
	t.Run("before", func(t *testing.T) {
		env := apitest.NewOn(t, s)
		c := env.Credential(env.Org, perm.All)
		cred.id, cred.secret = c.ClientID, c.ClientSecret
		for _, h := range []string{"web-1", "db-1"} {
			env.Enroll("uid-"+h, h, "linux").MustInventory(apitest.Sample(h, "linux"))
		}
		if _, err := env.Admin.CreateScript(ctx, apiv1.ScriptBody{Name: ptr("disk"), Language: ptr("sh"), Code: ptr("df -h")}); err != nil {
			t.Fatal(err)
		}
		before = apitest.Answers(t, client.New(env.URL, cred.id, cred.secret), apitest.KeptPaths...)
		code, out, errOut := mainArgs(t, "admin", "backup", "--db", db, "--to", backup)
		if code != 0 {
			t.Fatalf("backup: exit %d: %s", code, errOut)
		}
		if m := decode(t, out); m["ok"] != true || m["bytes"].(float64) <= 0 {
			t.Fatalf("backup answered %v", m)
		}
	})
	s.Close()
	if st, err := os.Stat(backup); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the backup: %v %v", st, err)
	}

	// A restore refuses a database that holds patchd's tables.
	if code, _, errOut := mainArgs(t, "admin", "restore", "--db", db, "--from", backup); code != 1 || !strings.Contains(errOut, "not empty") {
		t.Fatalf("restore over the database: exit %d: %s", code, errOut)
	}
	wipe(t, db)

	code, out, errOut := mainArgs(t, "admin", "restore", "--db", db, "--from", backup)
	if code != 0 {
		t.Fatalf("restore: exit %d: %s", code, errOut)
	}
	if m := decode(t, out); m["ok"] != true || m["schemaVersion"].(float64) < 50 {
		t.Fatalf("restore answered %v", m)
	}
	s, err = store.Open(ctx, db, "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	base, _ := apitest.Serve(t, s)
	after := apitest.Answers(t, client.New(base, cred.id, cred.secret), apitest.KeptPaths...)
	if n := apitest.Keeps(t, before, after); n < 50 {
		t.Errorf("compared %d values only", n)
	}
}

// wipe removes the test's database: the SQLite file and its log, or the
// PostgreSQL schema.
func wipe(t *testing.T, db string) {
	t.Helper()
	if !storetest.Postgres() {
		path := strings.TrimPrefix(db, "sqlite:")
		for _, f := range []string{path, path + "-wal", path + "-shm"} {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
		return
	}
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sql.Open("pgx", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Exec("DROP SCHEMA " + u.Query().Get("search_path") + " CASCADE"); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
