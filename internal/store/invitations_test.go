package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestInvitationsTakenOnce: of many acceptances of one invitation at
// once, exactly one sets the password; an expired invitation, one whose
// user is disabled, and one ended by a password reset open nothing.
func TestInvitationsTakenOnce(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	role := builtinRole(t, s, o.ID, store.RoleReadOnly)
	now := time.Now()
	invite := func(email, hash string, expires time.Time) store.User {
		t.Helper()
		u, err := s.CreateInvitedUser(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.invite", TargetType: "user"},
			store.User{OrgID: o.ID, Email: email, RoleID: role.ID}, hash, expires)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	accept := func(hash, pw string) (store.ConsoleUser, error) {
		return s.AcceptInvitation(ctx, &store.AuditEntry{Actor: "test", Action: "user.invitation_accept"}, hash, pw, now)
	}
	a := invite("a@example.com", "hash-a", now.Add(time.Hour))
	if got, err := s.InvitedUser(ctx, "hash-a", now); err != nil || got.ID != a.ID || got.PasswordHash != "" || got.InvitationExpiresAt.IsZero() {
		t.Fatalf("invited user: %+v %v", got, err)
	}
	if n := race(func(i int) bool {
		u, err := accept("hash-a", "pw"+string(rune('0'+i)))
		if err != nil && !errors.Is(err, dberr.ErrNotFound) && !dberr.IsUnavailable(err) {
			t.Errorf("accept: %v", err)
		}
		return err == nil && u.ID == a.ID
	}); n != 1 {
		t.Errorf("the invitation was taken %d times", n)
	}
	users, _ := s.ListUsers(ctx, o.ID)
	if len(users) != 1 || users[0].PasswordHash == "" || !users[0].InvitationExpiresAt.IsZero() {
		t.Errorf("after the acceptance: %+v", users)
	}
	entries, _ := s.ListAudit(ctx, o.ID, store.AuditFilter{Action: "user.invitation_accept", Limit: 10})
	if len(entries) != 1 || entries[0].TargetID != a.ID {
		t.Errorf("accept audit: %+v", entries)
	}

	invite("b@example.com", "hash-b", now.Add(-time.Second))
	if _, err := accept("hash-b", "pw"); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("an expired invitation: %v", err)
	}
	c := invite("c@example.com", "hash-c", now.Add(time.Hour))
	if err := s.SetUserDisabled(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.disable", TargetType: "user"}, o.ID, c.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := accept("hash-c", "pw"); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("a disabled user's invitation: %v", err)
	}
	d := invite("d@example.com", "hash-d", now.Add(time.Hour))
	if err := s.SetUserPassword(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.password_reset", TargetType: "user"}, o.ID, d.ID, "h", true, true, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.InvitedUser(ctx, "hash-d", now); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("an invitation after a password reset: %v", err)
	}
}

// TestDeleteRoleInUse: a custom role held by a user, a credential or the
// SSO settings is not deleted; a built-in one never; an unused one is.
func TestDeleteRoleInUse(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	entry := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action, TargetType: "role"}
	}
	r, err := s.CreateRoleAudited(ctx, entry("role.create"), o.ID, "Ops", perm.Set(perm.APIAccess|perm.EndpointsView))
	if err != nil {
		t.Fatal(err)
	}
	u := newUser(t, s, store.User{OrgID: o.ID, Email: "a@example.com", RoleID: r.ID})
	use, err := s.DeleteRole(ctx, entry("role.delete"), o.ID, r.ID)
	if !errors.Is(err, store.ErrRoleInUse) || use.Users != 1 {
		t.Fatalf("deleting a held role: %+v %v", use, err)
	}
	if err := s.DeleteUser(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "user.delete", TargetType: "user"}, o.ID, u.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRole(ctx, entry("role.update"), o.ID, r.ID, "Operators", perm.Set(perm.APIAccess)); err != nil {
		t.Fatal(err)
	}
	builtin := builtinRole(t, s, o.ID, store.RoleAdministrator)
	if err := s.UpdateRole(ctx, entry("role.update"), o.ID, builtin.ID, "Boss", perm.Set(perm.APIAccess)); !errors.Is(err, store.ErrBuiltinRole) {
		t.Errorf("changing a built-in role: %v", err)
	}
	if _, err := s.DeleteRole(ctx, entry("role.delete"), o.ID, builtin.ID); !errors.Is(err, store.ErrBuiltinRole) {
		t.Errorf("deleting a built-in role: %v", err)
	}
	if _, err := s.DeleteRole(ctx, entry("role.delete"), o.ID, r.ID); err != nil {
		t.Fatalf("deleting an unused role: %v", err)
	}
	if _, err := s.FindRole(ctx, o.ID, r.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("the role is still there: %v", err)
	}
	entries, _ := s.ListAudit(ctx, o.ID, store.AuditFilter{Action: "role.delete", Limit: 10})
	if len(entries) != 1 {
		t.Errorf("delete audit: %+v (refusals must not be recorded)", entries)
	}
}

// TestInvitationAcceptedByAPerson: a person of Globex accepts Acme's
// invitation of its address signed in as itself: it becomes a member of
// Acme with the invited role, the pending account and its invitation go,
// and Acme's Audit Trail names the person only. Of many acceptances at
// once one wins; another address, a person of the organization already,
// an expired, used or disabled invitation change nothing.
func TestInvitationAcceptedByAPerson(t *testing.T) {
	s, acme := acmeStore(t)
	ctx := context.Background()
	globex := newOrg(t, s, "Globex")
	now := time.Now()
	ann := newUser(t, s, store.User{OrgID: globex.ID, Email: "ann@example.com", RoleID: builtinRole(t, s, globex.ID, store.RoleAdministrator).ID})
	bob := newUser(t, s, store.User{OrgID: globex.ID, Email: "bob@example.com", RoleID: builtinRole(t, s, globex.ID, store.RoleAdministrator).ID})
	acmeBob := newUser(t, s, store.User{OrgID: acme.ID, Email: "bob@example.com", RoleID: builtinRole(t, s, acme.ID, store.RoleReadOnly).ID})
	readOnly := builtinRole(t, s, acme.ID, store.RoleReadOnly)
	invite := func(email, hash string, expires time.Time) store.User {
		t.Helper()
		u, err := s.CreateInvitedUser(ctx, &store.AuditEntry{OrgID: acme.ID, Actor: "test", Action: "user.invite", TargetType: "user"},
			store.User{OrgID: acme.ID, Email: email, RoleID: readOnly.ID}, hash, expires)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	accept := func(hash, personID string) (store.Membership, error) {
		return s.AcceptInvitationAs(ctx, &store.AuditEntry{Actor: "user:x", Action: "user.invitation_accept"}, hash, personID, now)
	}
	unchanged := func(what string, users int) {
		t.Helper()
		if got, _ := s.ListUsers(ctx, acme.ID); len(got) != users {
			t.Errorf("%s: Acme has %d members, want %d", what, len(got), users)
		}
		if en, _ := s.ListAudit(ctx, acme.ID, store.AuditFilter{Action: "user.invitation_accept"}); len(en) != 0 {
			t.Errorf("%s: recorded %+v", what, en)
		}
	}

	pending := invite("ann@example.com", "hash-ann", now.Add(time.Hour))
	if _, err := accept("hash-ann", bob.ID); !errors.Is(err, store.ErrInvitationEmail) {
		t.Errorf("another address: %v", err)
	}
	unchanged("another address", 2)
	if _, err := accept("hash-none", acmeBob.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("no such invitation: %v", err)
	}
	invite("old@example.com", "hash-old", now.Add(-time.Second))
	if _, err := accept("hash-old", ann.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("an expired invitation: %v", err)
	}
	unchanged("refusals", 3)

	if n := race(func(int) bool {
		m, err := accept("hash-ann", ann.ID)
		if err != nil && !errors.Is(err, dberr.ErrNotFound) && !dberr.IsUnavailable(err) {
			t.Errorf("accept: %v", err)
		}
		return err == nil && m.OrgID == acme.ID && m.RoleID == readOnly.ID && m.OrgName == "Acme" && m.RoleName == store.RoleReadOnly
	}); n != 1 {
		t.Fatalf("the invitation was taken %d times", n)
	}
	mems, _ := s.Memberships(ctx, ann.ID)
	if len(mems) != 2 || mems[0].OrgID != acme.ID || mems[0].RoleName != store.RoleReadOnly || mems[1].OrgID != globex.ID {
		t.Errorf("ann's memberships: %+v", mems)
	}
	if got, _ := s.UsersByEmail(ctx, "ann@example.com"); len(got) != 1 || got[0].ID != ann.ID {
		t.Errorf("accounts of ann@example.com: %+v, want her one", got)
	}
	if _, err := s.InvitedUser(ctx, "hash-ann", now); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("the invitation after its acceptance: %v", err)
	}
	en, _ := s.ListAudit(ctx, acme.ID, store.AuditFilter{Action: "user.invitation_accept"})
	if len(en) != 1 || en[0].TargetID != ann.ID || en[0].Summary["invitedUserId"] != pending.ID {
		t.Errorf("Acme's acceptance entry: %+v", en)
	}
	if en, _ := s.ListAudit(ctx, globex.ID, store.AuditFilter{Action: "user.invitation_accept"}); len(en) != 0 {
		t.Errorf("Globex recorded the acceptance: %+v", en)
	}

	// An address is a member of an organization at most once, so only
	// the pending account itself (signed in through single sign-on) is a
	// member already.
	carl := invite("carl@example.com", "hash-carl", now.Add(time.Hour))
	if _, err := accept("hash-carl", carl.ID); !errors.Is(err, store.ErrAlreadyMember) {
		t.Errorf("the pending account itself: %v", err)
	}
	if _, err := s.InvitedUser(ctx, "hash-carl", now); err != nil {
		t.Errorf("a refusal took the invitation: %v", err)
	}
	// A disabled pending account's invitation opens nothing.
	if err := s.SetUserDisabled(ctx, &store.AuditEntry{OrgID: acme.ID, Actor: "test", Action: "user.disable", TargetType: "user"}, acme.ID, carl.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := accept("hash-carl", ann.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("a disabled invited account: %v", err)
	}
	if en, _ := s.ListAudit(ctx, acme.ID, store.AuditFilter{Action: "user.invitation_accept"}); len(en) != 1 {
		t.Errorf("Acme's acceptances after the refusals: %d", len(en))
	}
}
