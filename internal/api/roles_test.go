package api_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestRoles: /api/v1/roles lists the roles with their use, creates custom
// roles from the spec's permissions (unknown names 422 on the index),
// changes and deletes them (built-in ones 409, in use 409), audited; a
// role lacking a permission gets 403, another organization's role 404; a
// credential of a changed role gets its new permissions.
func TestRoles(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	countRoles := func() int {
		roles, err := e.Store.ListRoles(ctx, e.Org.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(roles)
	}
	almost := e.Client(e.Org, perm.All&^perm.Set(perm.ReportsManage))
	before := countRoles()

	wantStatus(t, errOf(almost.ListRoles(ctx)), http.StatusForbidden, "list without every permission")
	wantStatus(t, errOf(almost.CreateRole(ctx, apiv1.RoleBody{Name: "Ops", Permissions: []string{"api.access"}})), http.StatusForbidden, "create without every permission")
	for _, tc := range []struct {
		body apiv1.RoleBody
		want []string
	}{
		{apiv1.RoleBody{}, []string{"name", "permissions"}},
		{apiv1.RoleBody{Name: "Ops", Permissions: []string{"api.access", "endpoints.destroy", "updates.view,reports.view"}}, []string{"permissions[1]", "permissions[2]"}},
		{apiv1.RoleBody{Name: "Bad\tname", Permissions: []string{"api.access"}}, []string{"name"}},
		{apiv1.RoleBody{Name: store.RoleAdministrator, Permissions: []string{"api.access"}}, []string{"name"}},
	} {
		_, err := e.Admin.CreateRole(ctx, tc.body)
		if got := fieldsOf422(t, err); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: fields %v, want %v", tc.body, got, tc.want)
		}
	}
	if countRoles() != before {
		t.Fatal("a refused role was created")
	}

	ops, err := e.Admin.CreateRole(ctx, apiv1.RoleBody{Name: " Patch operators ", Permissions: []string{"api.access", "updates.view", "updates.manage", "endpoints.view"}})
	if err != nil || ops.Name != "Patch operators" || ops.Builtin || !slices.Equal(ops.Permissions, []string{"api.access", "endpoints.view", "updates.manage", "updates.view"}) {
		t.Fatalf("create: %+v %v", ops, err)
	}
	if c := audit1(t, e, "role.create"); c.TargetID != ops.ID || c.Summary["name"] != "Patch operators" {
		t.Errorf("create audit: %+v", c)
	}

	// A credential of the role, and a user: the list counts them.
	cred, err := admin.CreateCredential(ctx, e.Store, "test", e.Org.ID, "patcher", ops.ID)
	if err != nil {
		t.Fatal(err)
	}
	patcher := client.New(e.URL, cred.ClientID, cred.ClientSecret, client.WithHTTPClient(e.HTTPClient))
	if _, err := patcher.ListUpdates(ctx, client.UpdateQuery{}); err != nil {
		t.Fatalf("the role's credential reads updates: %v", err)
	}
	if _, err := admin.CreateUser(ctx, e.Store, "test", e.Org.ID, "pat@example.com", ops.ID, "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	list, err := e.Admin.ListRoles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var builtin apiv1.Role
	for _, r := range list.Items {
		if r.ID == ops.ID && (r.Users != 1 || r.Credentials != 1) {
			t.Errorf("listed use of the role: %+v", r)
		}
		if r.Name == store.RoleReadOnly {
			builtin = r
		}
	}
	if !builtin.Builtin {
		t.Fatalf("Read-only is not listed as built-in: %+v", list.Items)
	}

	// Built-in roles are read-only.
	name := "Readers"
	wantStatus(t, errOf(e.Admin.PatchRole(ctx, builtin.ID, apiv1.RolePatch{Name: &name})), http.StatusConflict, "renaming a built-in role")
	wantStatus(t, e.Admin.DeleteRole(ctx, store.RoleReadOnly), http.StatusConflict, "deleting a built-in role")

	// Change: bad permissions are 422 and change nothing; then the
	// credential loses updates.view.
	bad := []string{"updates.approve"}
	if _, err := e.Admin.PatchRole(ctx, ops.ID, apiv1.RolePatch{Name: &name, Permissions: &bad}); !slices.Equal(fieldsOf422(t, err), []string{"permissions[0]"}) {
		t.Errorf("a bad permission: %v", err)
	}
	wantStatus(t, errOf(e.Admin.PatchRole(ctx, ops.ID, apiv1.RolePatch{})), http.StatusUnprocessableEntity, "an empty change")
	if r, _ := e.Store.FindRole(ctx, e.Org.ID, ops.ID); r.Name != "Patch operators" {
		t.Errorf("a refused change renamed the role: %+v", r)
	}
	fewer := []string{"api.access", "endpoints.view"}
	newName := "Endpoint readers"
	got, err := e.Admin.PatchRole(ctx, "Patch operators", apiv1.RolePatch{Name: &newName, Permissions: &fewer})
	if err != nil || got.Name != newName || !slices.Equal(got.Permissions, fewer) || got.Users != 1 {
		t.Fatalf("patch: %+v %v", got, err)
	}
	wantStatus(t, errOf(patcher.ListUpdates(ctx, client.UpdateQuery{})), http.StatusForbidden, "after the change the credential still reads updates")
	if u := audit1(t, e, "role.update"); u.Summary["from"] != "Patch operators" || u.Summary["name"] != newName {
		t.Errorf("update audit: %+v", u)
	}

	// In use: 409, nothing deleted.
	err = e.Admin.DeleteRole(ctx, ops.ID)
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusConflict || ce.Code != "role_in_use" {
		t.Fatalf("deleting a role in use: %v", err)
	}
	if _, err := e.Store.FindRole(ctx, e.Org.ID, ops.ID); err != nil {
		t.Fatalf("the role in use went away: %v", err)
	}

	// Another organization's role is 404.
	other := e.NewOrg("Globex")
	groles, _ := e.Store.ListRoles(ctx, other.ID)
	wantStatus(t, e.Admin.DeleteRole(ctx, groles[0].ID), http.StatusNotFound, "deleting another organization's role")
	wantStatus(t, errOf(e.Admin.PatchRole(ctx, groles[0].ID, apiv1.RolePatch{Name: &name})), http.StatusNotFound, "changing another organization's role")

	// Unused, it goes.
	spare, err := e.Admin.CreateRole(ctx, apiv1.RoleBody{Name: "Spare", Permissions: []string{"api.access"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatus(t, almost.DeleteRole(ctx, spare.ID), http.StatusForbidden, "delete without every permission")
	if err := e.Admin.DeleteRole(ctx, spare.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if d := audit1(t, e, "role.delete"); d.TargetID != spare.ID || d.Summary["name"] != "Spare" {
		t.Errorf("delete audit: %+v", d)
	}
	wantStatus(t, e.Admin.DeleteRole(ctx, spare.ID), http.StatusNotFound, "deleting again")
}
