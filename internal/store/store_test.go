package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

func TestOrgRolesCredentialsTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)

	o, err := s.CreateOrg(ctx, "Acme", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateOrg(ctx, "Acme", "UTC"); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate org: %v, want ErrConflict", err)
	}
	byName, err := s.FindOrg(ctx, "Acme")
	if err != nil || byName.ID != o.ID || byName.TimeZone != "Europe/Berlin" {
		t.Fatalf("FindOrg by name: %+v %v", byName, err)
	}
	if _, err := s.FindOrg(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("FindOrg unknown: %v", err)
	}
	admin, err := s.FindRole(ctx, o.ID, store.RoleAdministrator)
	if err != nil || admin.Permissions != perm.All || !admin.Builtin {
		t.Fatalf("Administrator role: %+v %v", admin, err)
	}
	ro, err := s.FindRole(ctx, o.ID, store.RoleReadOnly)
	if err != nil || ro.Permissions != perm.ReadOnly {
		t.Fatalf("Read-only role: %+v %v", ro, err)
	}

	audit := &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "credential.create", TargetType: "credential"}
	c, err := s.CreateCredential(ctx, audit, store.Credential{OrgID: o.ID, Name: "ci", ClientID: "cid", SecretHash: "h", RoleID: ro.ID})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.CredentialByClientID(ctx, "cid")
	if err != nil || got.ID != c.ID || got.Permissions != perm.ReadOnly || got.RoleName != store.RoleReadOnly {
		t.Fatalf("CredentialByClientID: %+v %v", got, err)
	}
	now := time.Now()
	if err := s.InsertAccessToken(ctx, "th", c, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	g, err := s.LookupAccessToken(ctx, "th", now)
	if err != nil || g.CredentialName != "ci" || g.OrgID != o.ID {
		t.Fatalf("LookupAccessToken: %+v %v", g, err)
	}
	if _, err := s.LookupAccessToken(ctx, "th", now.Add(2*time.Hour)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("expired token found: %v", err)
	}
	dis := &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "credential.disable", TargetType: "credential", TargetID: c.ID}
	if err := s.SetCredentialDisabled(ctx, dis, o.ID, c.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LookupAccessToken(ctx, "th", now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("token of disabled credential found: %v", err)
	}
	changes, err := s.AuthChangesSince(ctx, now.Add(-time.Second))
	if err != nil || len(changes) != 1 || changes[0].CredentialID != c.ID {
		t.Fatalf("auth changes: %+v %v", changes, err)
	}
	entries, err := s.ListAudit(ctx, o.ID, store.AuditFilter{})
	if err != nil || len(entries) != 2 || entries[0].Action != "credential.disable" {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	// Another organization sees none of it.
	o2, err := s.CreateOrg(ctx, "Other", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.FindCredential(ctx, o2.ID, "cid"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("credential seen from another org: %v", err)
	}
	if e, _ := s.ListAudit(ctx, o2.ID, store.AuditFilter{}); len(e) != 0 {
		t.Fatalf("audit of another org: %+v", e)
	}
}

func TestTokenFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	base := time.Now().Add(-10 * time.Minute)
	for i := 0; i < 3; i++ {
		if err := s.RecordTokenFailure(ctx, base.Add(time.Duration(i)*time.Minute), "client:x", "ip:1.2.3.4"); err != nil {
			t.Fatal(err)
		}
	}
	n, oldest, err := s.TokenFailures(ctx, "client:x", base.Add(30*time.Second))
	if err != nil || n != 2 || !oldest.Equal(base.Add(time.Minute).Truncate(time.Millisecond)) {
		t.Fatalf("failures: %d %v %v", n, oldest, err)
	}
}

func TestMigrateTwiceIsANoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	v1, err := s.SchemaVersion(ctx)
	if err != nil || v1 < 1 {
		t.Fatalf("schema version %d %v", v1, err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	v2, _ := s.SchemaVersion(ctx)
	if v1 != v2 {
		t.Fatalf("version moved %d -> %d", v1, v2)
	}
}
