package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestUserOperations: the patchd additions under /api/v1/users list the
// organization's console users, change a role, disable and enable, reset a
// password (one-time by default) and a second factor, audited with the
// caller's address; a role lacking any permission gets 403, another
// organization's user 404, an instance operator's account 403.
func TestUserOperations(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	mk := func(org store.Org, email, role string) string {
		u, err := admin.CreateUser(ctx, e.Store, "test", org.ID, email, role, "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		return u.ID
	}
	bob := mk(e.Org, "bob@example.com", store.RoleReadOnly)
	op, err := admin.CreateOperator(ctx, e.Store, "test", admin.InstanceActor{Actor: "test"}, e.Org.ID, "op@example.com", store.RoleReadOnly, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	other := e.NewOrg("Globex")
	globex := mk(other, "carol@globex.example", store.RoleReadOnly)

	// Every permission but one is not enough.
	almost := e.Client(e.Org, perm.All&^perm.Set(perm.ReportsManage))
	if _, err := almost.ListUsers(ctx); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("list without every permission: %v", err)
	}
	if _, err := almost.ResetUserPassword(ctx, bob, apiv1.PasswordReset{Password: "a new password!"}); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("password reset without every permission: %v", err)
	}
	if _, err := almost.ResetUserSecondFactor(ctx, bob); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("second-factor reset without every permission: %v", err)
	}

	list, err := e.Admin.ListUsers(ctx)
	if err != nil || list.Total != 2 || len(list.Items) != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	admin := store.RoleAdministrator
	u, err := e.Admin.PatchUser(ctx, bob, apiv1.UserPatch{Role: &admin})
	if err != nil || u.Role != store.RoleAdministrator {
		t.Fatalf("role: %+v %v", u, err)
	}
	nope := "Nope"
	if _, err := e.Admin.PatchUser(ctx, bob, apiv1.UserPatch{Role: &nope}); !client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("an unknown role: %v", err)
	}
	if _, err := e.Admin.PatchUser(ctx, bob, apiv1.UserPatch{}); !client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("an empty change: %v", err)
	}
	yes, no := true, false
	if u, err := e.Admin.PatchUser(ctx, bob, apiv1.UserPatch{Disabled: &yes}); err != nil || !u.Disabled {
		t.Errorf("disable: %+v %v", u, err)
	}
	if u, err := e.Admin.PatchUser(ctx, bob, apiv1.UserPatch{Disabled: &no}); err != nil || u.Disabled {
		t.Errorf("enable: %+v %v", u, err)
	}
	if _, err := e.Admin.ResetUserPassword(ctx, bob, apiv1.PasswordReset{Password: "short"}); !client.IsStatus(err, http.StatusUnprocessableEntity) {
		t.Errorf("a short password: %v", err)
	}
	if u, err := e.Admin.ResetUserPassword(ctx, bob, apiv1.PasswordReset{Password: "a one-time password"}); err != nil || !u.MustChangePassword {
		t.Errorf("password reset: %+v %v", u, err)
	}
	if u, err := e.Admin.ResetUserPassword(ctx, bob, apiv1.PasswordReset{Password: "a lasting password", MustChange: &no}); err != nil || u.MustChangePassword {
		t.Errorf("password reset, not one-time: %+v %v", u, err)
	}
	if u, err := e.Admin.ResetUserSecondFactor(ctx, bob); err != nil || u.SecondFactor {
		t.Errorf("second-factor reset: %+v %v", u, err)
	}
	// Another organization's user, an instance operator.
	if _, err := e.Admin.ResetUserSecondFactor(ctx, globex); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("another organization's user: %v", err)
	}
	if _, err := e.Admin.ResetUserPassword(ctx, op.ID, apiv1.PasswordReset{Password: "take over the server"}); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("an instance operator's password: %v", err)
	}
	for action, n := range map[string]int{"user.role_change": 1, "user.disable": 1, "user.enable": 1, "user.password_reset": 2, "user.mfa_reset": 1} {
		entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: action})
		if err != nil || len(entries) != n || entries[0].Address == "" || entries[0].Actor[:4] != "api:" {
			t.Errorf("%s audit: %+v %v", action, entries, err)
		}
	}
}
