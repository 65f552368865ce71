package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
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

var newClientSecret = regexp.MustCompile(`<code id="new-client-secret">([^<]+)</code>`)

// TestConsoleCredentialsAndSignInPolicy: the Users page creates an API
// credential (the secret shown once, and it works), disables, enables and
// deletes it, and sets "require a second factor", all through the API's
// operations; a Read-only user reaches none of it.
func TestConsoleCredentialsAndSignInPolicy(t *testing.T) {
	e := apitest.New(t, behindProxy)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	ro, _ := e.Store.FindRole(ctx, e.Org.ID, store.RoleReadOnly)
	noAPI, err := e.Store.CreateRole(ctx, e.Org.ID, "Console only", perm.Set(perm.EndpointsView))
	if err != nil {
		t.Fatal(err)
	}
	a := newBrowser(t, e.URL)
	a.from = "192.0.2.9"
	a.signIn("alice@example.com")
	a.get("/console/users")
	a.post("/console/credentials", url.Values{"name": {"no-api"}, "role": {noAPI.ID}})
	if _, body := a.get("/console/users"); !strings.Contains(body, "lacks api.access") {
		t.Error("a role without api.access: no refusal shown")
	}
	code, _, body := a.post("/console/credentials", url.Values{"name": {"nightly"}, "role": {ro.ID}})
	m := newClientSecret.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("create credential: %d", code)
	}
	cred, err := e.Store.FindCredential(ctx, e.Org.ID, "nightly")
	if err != nil {
		t.Fatal(err)
	}
	nightly := client.New(e.URL, cred.ClientID, m[1], client.WithHTTPClient(e.HTTPClient))
	if _, err := nightly.ListEndpoints(ctx, client.EndpointQuery{}); err != nil {
		t.Fatalf("the new credential does not work: %v", err)
	}
	if _, body := a.get("/console/users"); strings.Contains(body, m[1]) {
		t.Error("the secret is shown again")
	}
	if en := audited(t, e, e.Org.ID, "credential.create"); len(en) == 0 || en[0].Actor != "user:alice@example.com" || en[0].Address != "192.0.2.9" {
		t.Errorf("create audit: %+v", en)
	}
	a.post("/console/credentials/"+cred.ID+"/disable", url.Values{})
	if _, err := nightly.ListEndpoints(ctx, client.EndpointQuery{}); err == nil {
		t.Error("a disabled credential's token still works")
	}
	a.post("/console/credentials/"+cred.ID+"/enable", url.Values{})
	if c, _ := e.Store.FindCredential(ctx, e.Org.ID, cred.ID); c.Disabled {
		t.Error("enable did not enable")
	}

	// Read-only: nothing.
	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	r.get("/console/account")
	for _, p := range []string{"/console/credentials/" + cred.ID + "/disable", "/console/credentials/" + cred.ID + "/delete", "/console/settings/second-factor"} {
		if code, _, _ := r.post(p, url.Values{"require": {"on"}}); code != http.StatusForbidden {
			t.Errorf("Read-only POST %s: %d, want 403", p, code)
		}
	}
	if on, _ := e.Store.OrgRequiresMFA(ctx, e.Org.ID); on {
		t.Fatal("a Read-only user set the sign-in policy")
	}

	if code, _, _ := a.post("/console/settings/second-factor", url.Values{"require": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("require a second factor: %d", code)
	}
	if on, _ := e.Store.OrgRequiresMFA(ctx, e.Org.ID); !on {
		t.Error("the policy is not set")
	}
	if en := audited(t, e, e.Org.ID, "org.require_mfa"); len(en) != 1 || en[0].Address != "192.0.2.9" {
		t.Errorf("policy audit: %+v", en)
	}
	if code, _, _ := a.post("/console/credentials/"+cred.ID+"/delete", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("delete: %d", code)
	}
	if _, err := e.Store.FindCredential(ctx, e.Org.ID, cred.ID); err == nil {
		t.Error("the credential was not deleted")
	}
}
