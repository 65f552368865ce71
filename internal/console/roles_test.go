package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestConsoleRoles: the Users page's Roles section creates, changes and
// deletes custom roles through /api/v1/roles; built-in ones have no form;
// the API's refusals are shown; a role in use is not deleted.
func TestConsoleRoles(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	ctx := context.Background()
	a := newBrowser(t, e.URL)
	a.from = "192.0.2.8"
	a.signIn("alice@example.com")
	admin, _ := e.Store.FindRole(ctx, e.Org.ID, store.RoleAdministrator)
	code, body := a.get("/console/users")
	if code != http.StatusOK || !strings.Contains(body, `id="new-role-form"`) || strings.Contains(body, `action="/console/roles/`+admin.ID) {
		t.Fatalf("the Roles section lacks the new-role form, or has forms for a built-in role: %d", code)
	}
	// Refused: no permission ticked.
	a.post("/console/roles", url.Values{"name": {"Patchers"}})
	if _, body = a.get("/console/users"); !strings.Contains(body, "permissions: give at least one") {
		t.Errorf("the refusal is not shown\n%.300s", body)
	}
	if code, _, _ := a.post("/console/roles", url.Values{"name": {"Patchers"}, "perm": {"api.access", "updates.view", "updates.manage"}}); code != http.StatusSeeOther {
		t.Fatalf("create role: %d", code)
	}
	ro, err := e.Store.FindRole(ctx, e.Org.ID, "Patchers")
	if err != nil || !ro.Permissions.Has(perm.UpdatesManage) || ro.Permissions.Has(perm.EndpointsView) {
		t.Fatalf("the role: %+v %v", ro, err)
	}
	_, body = a.get("/console/users")
	if !strings.Contains(body, `action="/console/roles/`+ro.ID+`/update"`) {
		t.Fatal("no edit form for the custom role")
	}
	if code, _, _ := a.post("/console/roles/"+ro.ID+"/update", url.Values{"name": {"Patch readers"}, "perm": {"api.access", "updates.view"}}); code != http.StatusSeeOther {
		t.Fatalf("update role: %d", code)
	}
	if ro, _ = e.Store.FindRole(ctx, e.Org.ID, ro.ID); ro.Name != "Patch readers" || ro.Permissions.Has(perm.UpdatesManage) {
		t.Errorf("after the update: %+v", ro)
	}
	en := audited(t, e, e.Org.ID, "role.update")
	if len(en) != 1 || en[0].Actor != "user:alice@example.com" || en[0].Address != "192.0.2.8" {
		t.Errorf("update audit: %+v", en)
	}
	// In use: refused with the API's words, kept.
	addUser(t, e, e.Org, "pat@example.com", ro.ID)
	a.post("/console/roles/"+ro.ID+"/delete", url.Values{})
	if _, body = a.get("/console/users"); !strings.Contains(body, "is in use") {
		t.Error("deleting a role in use shows no refusal")
	}
	if _, err := e.Store.FindRole(ctx, e.Org.ID, ro.ID); err != nil {
		t.Fatalf("the role in use went away: %v", err)
	}
	spare, err := e.Store.CreateRole(ctx, e.Org.ID, "Spare", perm.Set(perm.APIAccess))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := a.post("/console/roles/"+spare.ID+"/delete", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("delete: %d", code)
	}
	if _, err := e.Store.FindRole(ctx, e.Org.ID, spare.ID); err == nil {
		t.Error("the unused role was not deleted")
	}
	// Built-in: refused even by a hand-made form.
	a.post("/console/roles/"+admin.ID+"/update", url.Values{"name": {"Boss"}, "perm": {"api.access"}})
	if admin, _ = e.Store.FindRole(ctx, e.Org.ID, admin.ID); admin.Name != store.RoleAdministrator || admin.Permissions != perm.All {
		t.Errorf("a built-in role changed: %+v", admin)
	}
}

// TestReadOnlyReachesNoPeopleManagement: a Read-only user reaches none of
// the forms of users, invitations and roles, and a Read-only credential
// none of their API operations; nothing changes.
func TestReadOnlyReachesNoPeopleManagement(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	addUser(t, e, e.Org, "victim@example.com", store.RoleReadOnly)
	custom, err := e.Store.CreateRole(ctx, e.Org.ID, "Custom", perm.Set(perm.APIAccess))
	if err != nil {
		t.Fatal(err)
	}
	users, _ := e.Store.ListUsers(ctx, e.Org.ID)
	victim := users[1].ID
	ro, _ := e.Store.FindRole(ctx, e.Org.ID, store.RoleReadOnly)

	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	if code, _ := r.get("/console/users"); code != http.StatusForbidden {
		t.Errorf("Read-only GET /console/users: %d", code)
	}
	r.get("/console/account")
	for path, form := range map[string]url.Values{
		"/console/users":                          {"email": {"new@example.com"}, "role": {ro.ID}, "how": {"invite"}},
		"/console/users/" + victim + "/delete":    {},
		"/console/roles":                          {"name": {"Mine"}, "perm": {"api.access"}},
		"/console/roles/" + custom.ID + "/update": {"name": {"Mine"}, "perm": {"api.access", "endpoints.manage"}},
		"/console/roles/" + custom.ID + "/delete": {},
	} {
		if code, _, _ := r.post(path, form); code != http.StatusForbidden {
			t.Errorf("Read-only POST %s: %d, want 403", path, code)
		}
	}

	c := e.Client(e.Org, perm.ReadOnly)
	name := "Mine"
	for what, err := range map[string]error{
		"list roles": func() error { _, err := c.ListRoles(ctx); return err }(),
		"create role": func() error {
			_, err := c.CreateRole(ctx, apiv1.RoleBody{Name: "Mine", Permissions: []string{"api.access"}})
			return err
		}(),
		"patch role":  func() error { _, err := c.PatchRole(ctx, custom.ID, apiv1.RolePatch{Name: &name}); return err }(),
		"delete role": c.DeleteRole(ctx, custom.ID),
		"create user": func() error {
			_, err := c.CreateUser(ctx, apiv1.UserCreate{Email: "new@example.com", Role: store.RoleAdministrator, Invite: true})
			return err
		}(),
		"delete user": c.DeleteUser(ctx, victim),
	} {
		if !client.IsStatus(err, http.StatusForbidden) {
			t.Errorf("Read-only credential, %s: %v, want 403", what, err)
		}
	}
	if n, _ := e.Store.CountUsers(ctx, e.Org.ID); n != 2 {
		t.Errorf("users: %d, want 2", n)
	}
	if got, err := e.Store.FindRole(ctx, e.Org.ID, custom.ID); err != nil || got.Name != "Custom" || got.Permissions != perm.Set(perm.APIAccess) {
		t.Errorf("the custom role changed: %+v %v", got, err)
	}
}
