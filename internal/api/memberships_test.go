package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestUsersOfSeveralOrganizations: an organization's API lists a person
// of two organizations with its role there, changes that role and removes
// the membership, but answers 409 other_organizations to a change of the
// account (disabling, password and second-factor resets), which would
// reach the other organization.
func TestUsersOfSeveralOrganizations(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	globex := e.NewOrg("Globex")
	for _, o := range []store.Org{e.Org, globex} {
		if _, err := admin.CreateUser(ctx, e.Store, "test", o.ID, "ann@example.com", store.RoleAdministrator, "correct horse battery"); err != nil {
			t.Fatal(err)
		}
	}
	acmeAnn, _ := admin.FindUser(ctx, e.Store, e.Org.ID, "ann@example.com")
	globexAnn, _ := admin.FindUser(ctx, e.Store, globex.ID, "ann@example.com")
	if _, err := e.Store.JoinAccounts(ctx, acmeAnn.ID, globexAnn.ID, func(string) *store.AuditEntry {
		return &store.AuditEntry{Actor: "user:ann@example.com", Action: "user.join"}
	}); err != nil {
		t.Fatal(err)
	}
	g := e.Client(globex, perm.All)
	list, err := g.ListUsers(ctx)
	if err != nil || len(list.Items) != 1 || list.Items[0].ID != acmeAnn.ID || list.Items[0].Role != store.RoleAdministrator {
		t.Fatalf("Globex's users: %+v %v", list, err)
	}
	ro := store.RoleReadOnly
	if u, err := g.PatchUser(ctx, acmeAnn.ID, apiv1.UserPatch{Role: &ro}); err != nil || u.Role != ro {
		t.Fatalf("Globex changes Ann's role: %+v %v", u, err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !client.IsStatus(err, http.StatusConflict) || !strings.Contains(err.Error(), "other_organizations") {
			t.Errorf("%s: %v, want 409 other_organizations", what, err)
		}
	}
	yes := true
	_, err = g.PatchUser(ctx, acmeAnn.ID, apiv1.UserPatch{Disabled: &yes})
	refused("disable", err)
	_, err = g.ResetUserPassword(ctx, acmeAnn.ID, apiv1.PasswordReset{Password: "taken over by Globex"})
	refused("password reset", err)
	_, err = g.ResetUserSecondFactor(ctx, acmeAnn.ID)
	refused("second-factor reset", err)
	if err := g.DeleteUser(ctx, acmeAnn.ID); err != nil {
		t.Fatalf("Globex removes Ann: %v", err)
	}
	if list, _ := g.ListUsers(ctx); len(list.Items) != 0 {
		t.Errorf("Globex's users after the removal: %+v", list.Items)
	}
	a, err := e.Admin.ListUsers(ctx)
	if err != nil || len(a.Items) != 1 || a.Items[0].Role != store.RoleAdministrator || a.Items[0].Disabled {
		t.Errorf("Acme's users after Globex's changes: %+v %v", a, err)
	}
}
