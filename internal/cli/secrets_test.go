package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/secretbox"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestMain gives every command the tests run the key the test stores are
// opened with (storetest.SecretKey), as a replica beside them would have.
func TestMain(m *testing.M) {
	os.Setenv("PATCHD_SECRET_KEY", storetest.SecretKey.Text)
	os.Exit(m.Run())
}

// TestAdminSecretsRotateKey: patchd admin secrets rotate-key
// --new-key-file seals every secret with a new key written to that file
// (0600); the old key then opens the database no more, the new one opens
// every secret. status counts the secrets by key.
func TestAdminSecretsRotateKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.URL(t)
	s, err := store.Open(ctx, db, "", store.Options{MaxConns: 2, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	o, err := s.CreateOrg(ctx, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	in := alerts.Rule{Name: "hook", Trigger: alerts.NewEndpoint, WebhookURL: "https://hooks.example.com/x", WebhookSecret: "hook-secret-1"}
	if err := in.Check(); err != nil {
		t.Fatal(err)
	}
	rule, err := s.CreateAlertRule(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, o.ID, in, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	old, _ := secretbox.Parse(storetest.SecretKey.Text)

	code, out, errOut := patchd(t, db, "", "admin", "secrets", "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	if m := decode(t, out); m["keyId"] != old.ID() || m["sealed"].(map[string]any)[old.ID()] != 1.0 || m["clear"] != 0.0 {
		t.Fatalf("status before: %v", m)
	}
	newFile := filepath.Join(t.TempDir(), "new.key")
	code, out, errOut = patchd(t, db, "", "admin", "secrets", "rotate-key", "--new-key-file", newFile)
	if code != 0 {
		t.Fatalf("rotate-key: exit %d: %s", code, errOut)
	}
	next, err := secretbox.ReadFile(newFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(newFile); fi.Mode().Perm() != 0o600 {
		t.Fatalf("new key file mode %v", fi.Mode())
	}
	if m := decode(t, out); m["keyId"] != next.ID() || m["sealed"] != 1.0 || m["created"] != true ||
		!strings.Contains(m["next"].(string), "give every server that key") {
		t.Fatalf("rotate-key: %v", m)
	}
	code, _, errOut = patchd(t, db, "", "admin", "org", "list")
	if code != 1 || !strings.Contains(errOut, "secret key does not open") || !strings.Contains(errOut, next.ID()) {
		t.Fatalf("the old key after the rotation: exit %d: %s", code, errOut)
	}
	s, err = store.Open(ctx, db, "", store.Options{MaxConns: 2, SecretKey: store.SecretKey{File: newFile}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, err := s.GetAlertRule(ctx, o.ID, rule.ID); err != nil || r.Rule().WebhookSecret != "hook-secret-1" {
		t.Fatalf("the webhook secret under the new key: %v", err)
	}
}
