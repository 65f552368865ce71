package store_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

type orgFixture struct {
	org   store.Org
	roles map[string]store.Role
}

func newOrgFixture(t *testing.T, s *store.Store, name string) orgFixture {
	t.Helper()
	ctx := context.Background()
	o, err := s.CreateOrg(ctx, name, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	roles, err := s.ListRoles(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	f := orgFixture{org: o, roles: map[string]store.Role{}}
	for _, r := range roles {
		f.roles[r.Name] = r
	}
	return f
}

func (f orgFixture) user(t *testing.T, s *store.Store, email, role string) store.User {
	t.Helper()
	u, err := s.CreateUser(context.Background(), &store.AuditEntry{OrgID: f.org.ID, Actor: "test", Action: "user.create", TargetType: "user"}, nil,
		store.User{OrgID: f.org.ID, Email: email, RoleID: f.roles[role].ID, PasswordHash: "hash-" + email + "-" + f.org.Name})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func memberView(t *testing.T, s *store.Store, orgs ...orgFixture) string {
	t.Helper()
	var lines []string
	for _, f := range orgs {
		users, err := s.ListUsers(context.Background(), f.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range users {
			lines = append(lines, fmt.Sprintf("%s %s %s %s", f.org.Name, u.Email, u.RoleName, u.PasswordHash))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// TestMembershipsUpgrade: migration 055 makes every account of one
// organization a person with one membership, its organization with its
// role, so that every user keeps what it reached.
func TestMembershipsUpgrade(t *testing.T) {
	s := storetest.Open(t)
	acme, globex := newOrgFixture(t, s, "Acme"), newOrgFixture(t, s, "Globex")
	acme.user(t, s, "ann@example.com", store.RoleAdministrator)
	acme.user(t, s, "bob@example.com", store.RoleReadOnly)
	globex.user(t, s, "ann@example.com", store.RoleReadOnly)
	want := strings.Join([]string{
		"Acme ann@example.com Administrator hash-ann@example.com-Acme",
		"Acme bob@example.com Read-only hash-bob@example.com-Acme",
		"Globex ann@example.com Read-only hash-ann@example.com-Globex",
	}, "\n")
	upgradeKeeps(t, s, s.UndoMigration055ForTest, func() string { return memberView(t, s, acme, globex) }, want)
	// Ann has two accounts still (one per organization) until she joins them.
	users, err := s.UsersByEmail(context.Background(), "ann@example.com")
	if err != nil || len(users) != 2 || users[0].ID == users[1].ID {
		t.Fatalf("ann's accounts after the upgrade: %+v %v", users, err)
	}
}

// TestJoinSwitchAndAccountGuards: joining makes one person with a role in
// each organization; a session switches between them under the person's
// role there; an administrator of one organization changes only the
// role and the membership of a person who belongs to others too.
func TestJoinSwitchAndAccountGuards(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	acme, globex, initech := newOrgFixture(t, s, "Acme"), newOrgFixture(t, s, "Globex"), newOrgFixture(t, s, "Initech")
	ann := acme.user(t, s, "ann@example.com", store.RoleAdministrator)
	annG := globex.user(t, s, "ann@example.com", store.RoleReadOnly)
	initech.user(t, s, "ann@example.com", store.RoleAdministrator) // not joined: stays apart

	entries := 0
	joined, err := s.JoinAccounts(ctx, ann.ID, annG.ID, func(orgID string) *store.AuditEntry {
		entries++
		return &store.AuditEntry{Actor: "user:ann@example.com", Action: "user.join"}
	})
	if err != nil || len(joined) != 1 || joined[0] != globex.org.ID || entries != 1 {
		t.Fatalf("join: %v %v (%d entries)", joined, err, entries)
	}
	mems, err := s.Memberships(ctx, ann.ID)
	if err != nil || len(mems) != 2 || mems[0].OrgName != "Acme" || mems[0].RoleName != store.RoleAdministrator ||
		mems[1].OrgName != "Globex" || mems[1].RoleName != store.RoleReadOnly {
		t.Fatalf("memberships: %+v %v", mems, err)
	}
	if m, err := s.Memberships(ctx, annG.ID); err != nil || len(m) != 0 {
		t.Fatalf("the joined account's memberships: %+v %v", m, err)
	}
	if got := memberView(t, s, globex); got != "Globex ann@example.com Read-only hash-ann@example.com-Acme" {
		t.Errorf("Globex's members after the join: %s", got)
	}
	audit, err := s.ListAudit(ctx, globex.org.ID, store.AuditFilter{Actor: "user:ann@example.com"})
	if err != nil || len(audit) != 1 || audit[0].Action != "user.join" || audit[0].TargetID != ann.ID {
		t.Errorf("Globex's Audit Trail of the join: %+v %v", audit, err)
	}
	if a, _ := s.ListAudit(ctx, acme.org.ID, store.AuditFilter{Actor: "user:ann@example.com"}); len(a) != 0 {
		t.Errorf("Acme's Audit Trail has the join into Globex: %+v", a)
	}

	// A session of Acme switches to Globex, under a new id, with the
	// Read-only role there; never to Initech.
	now := time.Now()
	u, err := s.UsersByEmail(ctx, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	var annAcme store.ConsoleUser
	for _, x := range u {
		if x.ID == ann.ID {
			annAcme = x
		}
	}
	if annAcme.OrgID != acme.org.ID {
		t.Fatalf("a sign-in opens %s, want Acme (the oldest membership)", annAcme.OrgID)
	}
	if err := s.CreateConsoleSession(ctx, "sess-1", "csrf-1", annAcme, "", "", store.StageSignedIn, now); err != nil {
		t.Fatal(err)
	}
	if err := s.SwitchSessionOrg(ctx, "sess-1", "sess-2", "csrf-2", initech.org.ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("switch to an organization of another account: %v", err)
	}
	if err := s.SwitchSessionOrg(ctx, "sess-1", "sess-2", "csrf-2", globex.org.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetConsoleSession(ctx, "sess-1"); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("the old session id still opens: %v", err)
	}
	cs, err := s.GetConsoleSession(ctx, "sess-2")
	if err != nil || cs.User.OrgID != globex.org.ID || cs.User.RoleName != store.RoleReadOnly || cs.CSRFToken != "csrf-2" || !cs.CreatedAt.Equal(now.Truncate(time.Millisecond)) {
		t.Fatalf("switched session: %+v %v", cs, err)
	}
	// The next sign-in opens Globex, the organization switched to last.
	if u, _ := s.UsersByEmail(ctx, "ann@example.com"); u[0].ID != ann.ID || u[0].OrgID != globex.org.ID {
		t.Errorf("the next sign-in opens %+v, want Globex", u[0].User)
	}

	// Globex's administrator changes Ann's role there only.
	if err := s.SetUserRole(ctx, &store.AuditEntry{OrgID: globex.org.ID, Actor: "user:boss", Action: "user.role_change"}, globex.org.ID, ann.ID,
		globex.roles[store.RoleAdministrator].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.SetUserRole(ctx, &store.AuditEntry{OrgID: globex.org.ID, Actor: "user:boss", Action: "user.role_change"}, globex.org.ID, ann.ID,
		acme.roles[store.RoleReadOnly].ID); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("Globex gives Ann a role of Acme: %v", err)
	}
	if mems, _ := s.Memberships(ctx, ann.ID); mems[0].RoleName != store.RoleAdministrator || mems[1].RoleName != store.RoleAdministrator {
		t.Errorf("roles after Globex's change: %+v", mems)
	}
	// The account itself (password, second factor, disabling) is not
	// Globex's, nor Acme's, to change: either would reach the other.
	for _, f := range []orgFixture{acme, globex} {
		e := func(action string) *store.AuditEntry {
			return &store.AuditEntry{OrgID: f.org.ID, Actor: "user:boss", Action: action, TargetType: "user", TargetID: ann.ID}
		}
		if err := s.ResetUserPassword(ctx, e("user.password_reset"), f.org.ID, ann.ID, "attacker-hash", true); !errors.Is(err, store.ErrOtherOrgs) {
			t.Errorf("%s resets the password of a person of two organizations: %v", f.org.Name, err)
		}
		if err := s.ResetSecondFactor(ctx, e("user.mfa_reset"), f.org.ID, ann.ID); !errors.Is(err, store.ErrOtherOrgs) {
			t.Errorf("%s resets the second factor: %v", f.org.Name, err)
		}
		if err := s.SetUserDisabled(ctx, e("user.disable"), f.org.ID, ann.ID, true); !errors.Is(err, store.ErrOtherOrgs) {
			t.Errorf("%s disables the person: %v", f.org.Name, err)
		}
	}
	if err := s.ResetUserPassword(ctx, &store.AuditEntry{OrgID: initech.org.ID, Actor: "user:boss", Action: "user.password_reset"}, initech.org.ID, ann.ID, "x", true); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("Initech resets the password of a person not its member: %v", err)
	}
	// The command line (whoever runs the server) may.
	if err := s.ResetUserPassword(ctx, &store.AuditEntry{OrgID: acme.org.ID, Actor: store.ActorCLI, Action: "user.password_reset"}, acme.org.ID, ann.ID, "new-hash", false); err != nil {
		t.Errorf("the command line resets the password: %v", err)
	}
	// Deleting in Globex takes Ann out of Globex only: her Globex
	// session ends, the account and its Acme membership stay.
	e := &store.AuditEntry{OrgID: globex.org.ID, Actor: "user:boss", Action: "user.delete", TargetType: "user", TargetID: ann.ID}
	if err := s.DeleteUser(ctx, e, globex.org.ID, ann.ID); err != nil || e.Summary["membershipOnly"] != true {
		t.Fatalf("delete in Globex: %v %+v", err, e.Summary)
	}
	if _, err := s.GetConsoleSession(ctx, "sess-2"); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("the Globex session outlives the membership: %v", err)
	}
	if mems, _ := s.Memberships(ctx, ann.ID); len(mems) != 1 || mems[0].OrgName != "Acme" {
		t.Errorf("memberships after leaving Globex: %+v", mems)
	}
	if u, _ := s.UsersByEmail(ctx, "ann@example.com"); len(u) != 2 || u[0].OrgID != acme.org.ID {
		t.Errorf("sign-in after leaving Globex: %+v", u)
	}
	// Now a member of Acme only, Acme's administrator may disable her.
	if err := s.SetUserDisabled(ctx, &store.AuditEntry{OrgID: acme.org.ID, Actor: "user:boss", Action: "user.disable"}, acme.org.ID, ann.ID, true); err != nil {
		t.Errorf("disable a member of one organization: %v", err)
	}
	// A new account in Globex with an address a member has is refused.
	bob := acme.user(t, s, "bob@example.com", store.RoleReadOnly)
	bobG := globex.user(t, s, "bob@example.com", store.RoleReadOnly)
	if _, err := s.JoinAccounts(ctx, bob.ID, bobG.ID, func(string) *store.AuditEntry { return &store.AuditEntry{Actor: "t", Action: "user.join"} }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, &store.AuditEntry{OrgID: globex.org.ID, Actor: "t", Action: "user.create"}, nil,
		store.User{OrgID: globex.org.ID, Email: "bob@example.com", RoleID: globex.roles[store.RoleReadOnly].ID, PasswordHash: "x"}); !errors.Is(err, dberr.ErrConflict) {
		t.Errorf("a second bob@example.com in Globex: %v", err)
	}
	// A role held by a membership is in use.
	uses, err := s.RoleUses(ctx, globex.org.ID)
	if err != nil || uses[globex.roles[store.RoleReadOnly].ID].Users != 1 {
		t.Errorf("Globex's Read-only role use: %+v %v", uses, err)
	}
}
