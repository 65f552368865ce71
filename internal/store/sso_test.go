package store_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// TestSSOLoginSingleUse: of many callbacks with one state at once, exactly
// one takes the sign-in; expired rows go away with the next sign-in.
func TestSSOLoginSingleUse(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	now := time.Now()
	l := store.SSOLogin{StateHash: "state-1", BindingHash: "b", OrgID: o.ID, Nonce: "n", PKCEVerifier: "v", Next: "/console/", ExpiresAt: now.Add(time.Minute)}
	if err := s.CreateSSOLogin(ctx, l, now); err != nil {
		t.Fatal(err)
	}
	var missed atomic.Int32
	took := race(func(int) bool {
		got, err := s.TakeSSOLogin(ctx, "state-1")
		switch {
		case err == nil && got.Nonce == "n" && got.PKCEVerifier == "v" && got.ExpiresAt.Equal(l.ExpiresAt.Truncate(time.Millisecond)):
			return true
		case errors.Is(err, dberr.ErrNotFound):
			missed.Add(1)
		default:
			t.Errorf("take: %+v %v", got, err)
		}
		return false
	})
	if took != 1 || missed.Load() != 7 {
		t.Fatalf("took %d, missed %d; want 1 and 7", took, missed.Load())
	}
	old := l
	old.StateHash, old.ExpiresAt = "state-old", now.Add(-time.Second)
	if err := s.CreateSSOLogin(ctx, old, now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	l.StateHash = "state-2"
	if err := s.CreateSSOLogin(ctx, l, now); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TakeSSOLogin(ctx, "state-old"); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("an expired sign-in stayed: %v", err)
	}
}

// TestSSOIdentityLinks: a provider account is linked to one user; another
// account of the same provider with the same address is refused.
func TestSSOIdentityLinks(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	role, _ := s.FindRole(ctx, o.ID, store.RoleReadOnly)
	entry := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action}
	}
	id := store.SSOIdentity{OrgID: o.ID, Issuer: "https://idp.example", Subject: "s1", Email: "ann@acme.example"}
	decide := func(u store.ConsoleUser, linkedElsewhere bool) error {
		if linkedElsewhere {
			return store.ErrSSOLinkedElsewhere
		}
		return nil
	}
	if _, err := s.LinkSSOUser(ctx, entry("user.sso_link"), id, "", time.Now(), decide); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("linking to no user: %v", err)
	}
	if _, err := s.CreateUser(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.create", TargetType: "user"}, nil,
		store.User{OrgID: o.ID, Email: "ann@acme.example", RoleID: role.ID, PasswordHash: "x"}); err != nil {
		t.Fatal(err)
	}
	u, err := s.LinkSSOUser(ctx, entry("user.sso_link"), id, "", time.Now(), decide)
	if err != nil || u.Email != "ann@acme.example" {
		t.Fatalf("link: %+v %v", u, err)
	}
	if got, err := s.SSOUserByIdentity(ctx, id); err != nil || got.ID != u.ID {
		t.Fatalf("by identity: %+v %v", got, err)
	}
	other := id
	other.Subject = "s2"
	if _, err := s.LinkSSOUser(ctx, entry("user.sso_link"), other, "", time.Now(), decide); !errors.Is(err, store.ErrSSOLinkedElsewhere) {
		t.Fatalf("a second account of the provider for the same user: %v", err)
	}
	if _, err := s.CreateSSOUser(ctx, entry("user.create"), other, role.ID, time.Now()); !errors.Is(err, dberr.ErrConflict) {
		t.Fatalf("a new user with a taken address: %v", err)
	}
	newID := store.SSOIdentity{OrgID: o.ID, Issuer: "https://idp.example", Subject: "s3", Email: "bo@acme.example"}
	nu, err := s.CreateSSOUser(ctx, entry("user.create"), newID, role.ID, time.Now())
	if err != nil || nu.PasswordHash != "" || nu.InstanceOperator || nu.RoleName != store.RoleReadOnly {
		t.Fatalf("a just-in-time user: %+v %v", nu, err)
	}
	admin, _ := s.FindRole(ctx, o.ID, store.RoleAdministrator)
	if changed, err := s.SetSSOUserRole(ctx, entry("user.role_change"), nu.ID, admin.ID); err != nil || changed.RoleName != store.RoleAdministrator {
		t.Fatalf("role change: %+v %v", changed, err)
	}
	if _, err := s.SetSSOUserRole(ctx, entry("user.role_change"), nu.ID, admin.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := s.ListAudit(ctx, o.ID, store.AuditFilter{Action: "user.role_change"}); len(list) != 1 {
		t.Fatalf("an unchanged role was audited: %d entries", len(list))
	}
}

// TestSSOOperatorProtection: role mapping never changes an instance
// operator's role, and only an instance-level action (recorded in the
// instance's Audit Trail) lets an operator use single sign-on; granting or
// revoking the operator attribute clears it.
func TestSSOOperatorProtection(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	ro, _ := s.FindRole(ctx, o.ID, store.RoleReadOnly)
	adm, _ := s.FindRole(ctx, o.ID, store.RoleAdministrator)
	op, err := s.CreateUser(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.create", TargetType: "user"},
		&store.InstanceEvent{Actor: "test", Action: "instance_operator.grant"},
		store.User{OrgID: o.ID, Email: "op@acme.example", RoleID: adm.ID, PasswordHash: "x", InstanceOperator: true})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := s.SetSSOUserRole(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "sso:x", Action: "user.role_change"}, op.ID, ro.ID); err != nil || u.RoleID != adm.ID {
		t.Fatalf("role mapping changed an operator: %+v %v", u, err)
	}
	plain, err := s.CreateUser(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.create", TargetType: "user"}, nil,
		store.User{OrgID: o.ID, Email: "pat@acme.example", RoleID: ro.ID, PasswordHash: "x"})
	if err != nil {
		t.Fatal(err)
	}
	ie := func(action string) *store.InstanceEvent { return &store.InstanceEvent{Actor: "test", Action: action} }
	if _, err := s.SetOperatorSSO(ctx, ie("instance_operator.sso_allow"), plain.ID, true); !errors.Is(err, store.ErrNotOperator) {
		t.Fatalf("single sign-on for a user that is no operator: %v", err)
	}
	if changed, err := s.SetOperatorSSO(ctx, ie("instance_operator.sso_allow"), op.ID, true); err != nil || !changed {
		t.Fatalf("allow: %v %v", changed, err)
	}
	if u, _ := s.UsersByEmail(ctx, "op@acme.example"); len(u) != 1 || !u[0].OperatorSSO {
		t.Fatalf("after allowing: %+v", u)
	}
	if changed, err := s.SetOperatorSSO(ctx, ie("instance_operator.sso_allow"), op.ID, true); err != nil || changed {
		t.Fatalf("allowing again: %v %v", changed, err)
	}
	events, _ := s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"instance_operator.sso_allow"}, Limit: 10})
	if len(events) != 1 || events[0].TargetID != op.ID {
		t.Fatalf("the instance's Audit Trail: %+v", events)
	}
	if _, err := s.SetInstanceOperator(ctx, ie("instance_operator.grant"), plain.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetInstanceOperator(ctx, ie("instance_operator.revoke"), op.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetInstanceOperator(ctx, ie("instance_operator.grant"), op.ID, true); err != nil {
		t.Fatal(err)
	}
	if u, _ := s.UsersByEmail(ctx, "op@acme.example"); len(u) != 1 || u[0].OperatorSSO {
		t.Fatalf("a revoked and granted again operator kept single sign-on: %+v", u)
	}
}
