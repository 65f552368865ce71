package ctl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/ctl"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestUsers: patchctl users list|role|disable|enable|reset-password|reset-mfa
// (patchd additions); a role lacking any permission is refused.
func TestUsers(t *testing.T) {
	e := apitest.New(t)
	u, err := admin.CreateUser(context.Background(), e.Store, "test", e.Org.ID, "bob@example.com", store.RoleReadOnly, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, e, e.URL)
	h.login(perm.ReadOnly)
	h.fail(ctl.ExitAPI, "every permission", "users", "list")
	h.login(perm.All)
	var list []apiv1.User
	h.okJSON(&list, "users", "list")
	if len(list) != 1 || list[0].Email != "bob@example.com" {
		t.Fatalf("list: %+v", list)
	}
	var out apiv1.User
	h.okJSON(&out, "users", "role", u.ID, store.RoleAdministrator)
	if out.Role != store.RoleAdministrator {
		t.Errorf("role: %+v", out)
	}
	h.okJSON(&out, "users", "disable", u.ID)
	if !out.Disabled {
		t.Errorf("disable: %+v", out)
	}
	h.okJSON(&out, "users", "enable", u.ID)
	if out.Disabled {
		t.Errorf("enable: %+v", out)
	}
	r := h.run("a one-time password\n", "users", "reset-password", u.ID, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"mustChangePassword": true`) {
		t.Errorf("reset-password: %d %s %s", r.code, r.stdout, r.stderr)
	}
	h.okJSON(&out, "users", "reset-mfa", u.ID)
	if out.SecondFactor {
		t.Errorf("reset-mfa: %+v", out)
	}
}

// TestUsersCreateInviteDelete: patchctl users create (one-time password on
// standard input), users invite (prints the link) and users delete.
func TestUsersCreateInviteDelete(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.ReadOnly)
	h.fail(ctl.ExitAPI, "every permission", "users", "invite", "--email", "x@example.com", "--role", store.RoleReadOnly)
	h.login(perm.All)
	r := h.run("a one-time password 7\n", "users", "create", "--email", "erik@example.com", "--role", store.RoleReadOnly, "-o", "json")
	if r.code != 0 || !strings.Contains(r.stdout, `"mustChangePassword": true`) {
		t.Fatalf("create: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = h.run("", "users", "invite", "--email", "dana@example.com", "--role", store.RoleAdministrator, "--expires-hours", "24")
	if r.code != 0 || !strings.Contains(r.stdout, "/console/invitation?token=") || !strings.Contains(r.stdout, "Invited dana@example.com") {
		t.Fatalf("invite: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = h.run("", "users", "invite", "--email", "fay@example.com", "--role", store.RoleReadOnly, "--expires-hours", "0")
	if r.code == 0 {
		t.Errorf("an invitation valid 0 hours: %s", r.stdout)
	}
	var list []apiv1.User
	h.okJSON(&list, "users", "list")
	var dana string
	for _, u := range list {
		if u.Email == "dana@example.com" && u.InvitationExpiresAt != nil {
			dana = u.ID
		}
	}
	if len(list) != 2 || dana == "" {
		t.Fatalf("list: %+v", list)
	}
	if r := h.run("", "users", "delete", dana); r.code != 0 || !strings.Contains(r.stdout, "deleted") {
		t.Errorf("delete: %d %s %s", r.code, r.stdout, r.stderr)
	}
	h.okJSON(&list, "users", "list")
	if len(list) != 1 {
		t.Errorf("after delete: %+v", list)
	}
}

// TestRoles: patchctl roles list|create|update|delete.
func TestRoles(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.ReadOnly)
	h.fail(ctl.ExitAPI, "every permission", "roles", "list")
	h.login(perm.All)
	var r apiv1.Role
	h.okJSON(&r, "roles", "create", "--name", "Patchers", "--permissions", "api.access, updates.view,updates.manage")
	if r.Name != "Patchers" || len(r.Permissions) != 3 {
		t.Fatalf("create: %+v", r)
	}
	h.fail(ctl.ExitAPI, "permissions[0]", "roles", "create", "--name", "Bad", "--permissions", "updates.approve")
	h.okJSON(&r, "roles", "update", "Patchers", "--permissions", "api.access,updates.view")
	if len(r.Permissions) != 2 {
		t.Errorf("update: %+v", r)
	}
	h.fail(ctl.ExitAPI, "built-in", "roles", "update", store.RoleReadOnly, "--name", "Readers")
	out := h.ok("roles", "list")
	if !strings.Contains(out, "Patchers") || !strings.Contains(out, store.RoleAdministrator) {
		t.Errorf("list:\n%s", out)
	}
	h.ok("roles", "delete", "Patchers")
	if out := h.ok("roles", "list"); strings.Contains(out, "Patchers") {
		t.Errorf("after delete:\n%s", out)
	}
}

// TestCredentialsAndSignInPolicy: patchctl credentials
// list|create|disable|enable|delete and sign-in-policy get|set.
func TestCredentialsAndSignInPolicy(t *testing.T) {
	e := apitest.New(t)
	h := newHarness(t, e, e.URL)
	h.login(perm.ReadOnly)
	h.fail(ctl.ExitAPI, "every permission", "credentials", "list")
	h.fail(ctl.ExitAPI, "every permission", "sign-in-policy", "set", "--require-second-factor=true")
	h.login(perm.All)
	out := h.ok("credentials", "create", "--name", "nightly", "--role", store.RoleReadOnly)
	if !strings.Contains(out, "client_secret: pds_") {
		t.Fatalf("create:\n%s", out)
	}
	h.fail(ctl.ExitAPI, "name", "credentials", "create", "--name", "nightly", "--role", store.RoleReadOnly)
	var c apiv1.Credential
	h.okJSON(&c, "credentials", "disable", "nightly")
	if !c.Disabled {
		t.Errorf("disable: %+v", c)
	}
	h.okJSON(&c, "credentials", "enable", "nightly")
	if c.Disabled {
		t.Errorf("enable: %+v", c)
	}
	if out := h.ok("credentials", "list"); !strings.Contains(out, "nightly") {
		t.Errorf("list:\n%s", out)
	}
	h.ok("credentials", "delete", "nightly")
	if out := h.ok("credentials", "list"); strings.Contains(out, "nightly") {
		t.Errorf("after delete:\n%s", out)
	}
	if out := h.ok("sign-in-policy", "set", "--require-second-factor=true"); !strings.Contains(out, "second factor: true") {
		t.Errorf("set:\n%s", out)
	}
	var p apiv1.SignInPolicy
	h.okJSON(&p, "sign-in-policy", "get")
	if p.RequireSecondFactor == nil || !*p.RequireSecondFactor {
		t.Errorf("get: %+v", p)
	}
	h.fail(ctl.ExitUsage, "true or false", "sign-in-policy", "set", "--require-second-factor=maybe")
}
