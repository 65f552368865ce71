package store_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestOlderServerRefusesNewerSchema: a database that a newer patchd
// migrated (a migration this program does not know, recorded with the
// newer version) is refused by this one, naming both versions, while a
// server that knows every migration opens it and records its version.
func TestOlderServerRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := storetest.URL(t)
	open := func(version string) (*store.Store, error) {
		return store.Open(ctx, u, "", store.Options{MaxConns: 2, SecretKey: storetest.SecretKey, ServerVersion: version})
	}
	s, err := open("1.4.0")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := s.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.QueryStringsForTest(ctx, `SELECT server_version || ' ' || CAST(schema_version AS TEXT) FROM schema_server`)
	if err != nil || len(got) != 1 || got[0] != "1.4.0 "+strconv.Itoa(schema) {
		t.Fatalf("schema_server holds %q (%v), want [\"1.4.0 %d\"]", got, err, schema)
	}
	s.Close()

	// The same version again, and an older one at the same schema, open it.
	for _, v := range []string{"1.4.0", "1.3.9"} {
		s, err := open(v)
		if err != nil {
			t.Fatalf("patchd %s: %v", v, err)
		}
		s.Close()
	}

	// A newer patchd applied migration 9001.
	s, err = open("1.4.0")
	if err != nil {
		t.Fatal(err)
	}
	err = s.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.ExecForTest(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9001, '9001_future.sql', 0)`); err != nil {
			return err
		}
		return tx.ExecForTest(ctx, `UPDATE schema_server SET server_version = '2.0.0', schema_version = 9001`)
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}

	_, err = open("1.4.0")
	var tooNew *store.SchemaTooNewError
	if !errors.As(err, &tooNew) {
		t.Fatalf("open answered %v, want a SchemaTooNewError", err)
	}
	if tooNew.DatabaseSchema != 9001 || tooNew.DatabaseServer != "2.0.0" || tooNew.ServerVersion != "1.4.0" || tooNew.ServerSchema != schema {
		t.Errorf("error holds %+v", *tooNew)
	}
	for _, want := range []string{"patchd 2.0.0", "patchd 1.4.0", "schema 9001", "schema " + strconv.Itoa(schema), "9001_future.sql"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not name %q", err, want)
		}
	}
	// patchd migrate and the admin commands open the store the same way;
	// the refusal changed nothing.
	s, err = store.Open(ctx, u, "", store.Options{MaxConns: 2, SkipMigrate: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err = s.QueryStringsForTest(ctx, `SELECT server_version FROM schema_server`)
	if err != nil || len(got) != 1 || got[0] != "2.0.0" {
		t.Fatalf("after the refusal schema_server holds %q %v", got, err)
	}
}
