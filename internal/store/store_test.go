package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
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
	if _, err := s.CreateOrg(ctx, "Acme", "UTC"); !errors.Is(err, dberr.ErrConflict) {
		t.Fatalf("duplicate org: %v, want ErrConflict", err)
	}
	byName, err := s.FindOrg(ctx, "Acme")
	if err != nil || byName.ID != o.ID || byName.TimeZone != "Europe/Berlin" {
		t.Fatalf("FindOrg by name: %+v %v", byName, err)
	}
	if _, err := s.FindOrg(ctx, "nope"); !errors.Is(err, dberr.ErrNotFound) {
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
	if _, err := s.LookupAccessToken(ctx, "th", now.Add(2*time.Hour)); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("expired token found: %v", err)
	}
	dis := &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "credential.disable", TargetType: "credential", TargetID: c.ID}
	if err := s.SetCredentialDisabled(ctx, dis, o.ID, c.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LookupAccessToken(ctx, "th", now); !errors.Is(err, dberr.ErrNotFound) {
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
	o2 := newOrg(t, s, "Other")
	if _, err := s.FindCredential(ctx, o2.ID, "cid"); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("credential seen from another org: %v", err)
	}
	if e, _ := s.ListAudit(ctx, o2.ID, store.AuditFilter{}); len(e) != 0 {
		t.Fatalf("audit of another org: %+v", e)
	}
}

func TestReserveAttempt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	base := time.Now().Truncate(time.Millisecond)
	const window = 5 * time.Minute

	// 100 parallel reservations of one key each get a different count:
	// exactly 1 to 100, whatever the engine and however they interleave.
	counts := make([]int, 100)
	var wg sync.WaitGroup
	errs := make(chan error, len(counts))
	for i := range counts {
		wg.Go(func() {
			n, start, err := s.ReserveAttempt(ctx, "k", base, window)
			if err == nil && !start.Equal(base) {
				err = fmt.Errorf("window start %v, want %v", start, base)
			}
			if err != nil {
				errs <- err
			}
			counts[i] = n
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	slices.Sort(counts)
	for i, n := range counts {
		if n != i+1 {
			t.Fatalf("parallel counts %v: not each of 1..100 once", counts)
		}
	}

	// A released attempt is not counted; a key's window is its own.
	if err := s.ReleaseAttempt(ctx, "k", base); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.ReserveAttempt(ctx, "k", base.Add(time.Minute), window); err != nil || n != 100 {
		t.Fatalf("after a release: %d %v, want 100", n, err)
	}
	if n, _, err := s.ReserveAttempt(ctx, "other", base.Add(time.Minute), window); err != nil || n != 1 {
		t.Fatalf("another key: %d %v, want 1", n, err)
	}
	// Once the window has passed, counting starts again in a new window, and
	// a late release of the old window's attempt changes nothing.
	later := base.Add(window + time.Second)
	if n, start, err := s.ReserveAttempt(ctx, "k", later, window); err != nil || n != 1 || !start.Equal(later) {
		t.Fatalf("new window: %d %v %v, want 1 from %v", n, start, err, later)
	}
	if err := s.ReleaseAttempt(ctx, "k", base); err != nil {
		t.Fatal(err)
	}
	if n, _, err := s.ReserveAttempt(ctx, "k", later, window); err != nil || n != 2 {
		t.Fatalf("after a stale release: %d %v, want 2", n, err)
	}
	// Pruning an hour later forgets the key.
	if err := s.PruneAuth(ctx, later.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, start, err := s.ReserveAttempt(ctx, "k", later.Add(time.Minute), window); err != nil || n != 1 || !start.Equal(later.Add(time.Minute)) {
		t.Fatalf("after pruning: %d %v %v", n, start, err)
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
