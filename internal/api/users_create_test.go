package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// fieldsOf422 answers the fields of a 422 answer's details.
func fieldsOf422(t *testing.T, err error) []string {
	t.Helper()
	var ce *client.Error
	if !errors.As(err, &ce) || ce.Status != http.StatusUnprocessableEntity {
		t.Fatalf("want a 422, got %v", err)
	}
	var out []string
	for _, p := range ce.Details {
		out = append(out, p.Field)
	}
	slices.Sort(out)
	return out
}

// TestCreateAndDeleteUsers: POST /api/v1/users creates a user with a
// one-time password or an invitation (a single-use link whose token is
// stored hashed), refuses bad input with the fields named and nothing
// made, and DELETE removes a user; both are audited with the caller's
// address, need every permission, and see no other organization's users.
func TestCreateAndDeleteUsers(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()

	// Bad input: 422 on the fields, nothing created, nothing audited.
	for _, tc := range []struct {
		body apiv1.UserCreate
		want []string
	}{
		{apiv1.UserCreate{}, []string{"email", "password", "role"}},
		{apiv1.UserCreate{Email: "not an address", Role: "Nope", Password: "short"}, []string{"email", "password", "role"}},
		{apiv1.UserCreate{Email: "a@example.com", Role: store.RoleReadOnly, Password: "a long password 1", Invite: true}, []string{"password"}},
		{apiv1.UserCreate{Email: "a@example.com", Role: store.RoleReadOnly, Invite: true, ExpiresInHours: 721}, []string{"expiresInHours"}},
		{apiv1.UserCreate{Email: "a@example.com", Role: store.RoleReadOnly, Password: "a long password 1", ExpiresInHours: 5}, []string{"expiresInHours"}},
	} {
		_, err := e.Admin.CreateUser(ctx, tc.body)
		if got := fieldsOf422(t, err); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: fields %v, want %v", tc.body, got, tc.want)
		}
	}
	if n, _ := e.Store.CountUsers(ctx, e.Org.ID); n != 0 {
		t.Fatalf("refused requests created %d users", n)
	}
	if en, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "user.create", Limit: 10}); len(en) != 0 {
		t.Fatalf("refused requests were audited: %+v", en)
	}

	// A role lacking one permission gets 403.
	almost := e.Client(e.Org, perm.All&^perm.Set(perm.ReportsManage))
	if _, err := almost.CreateUser(ctx, apiv1.UserCreate{Email: "x@example.com", Role: store.RoleAdministrator, Invite: true}); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("create without every permission: %v", err)
	}

	// A one-time password.
	u, err := e.Admin.CreateUser(ctx, apiv1.UserCreate{Email: "Erik@Example.com", Role: store.RoleReadOnly, Password: "a one-time password 7"})
	if err != nil || u.Email != "erik@example.com" || u.Role != store.RoleReadOnly || !u.MustChangePassword || u.Invitation != nil || u.InvitationExpiresAt != nil {
		t.Fatalf("create with a password: %+v %v", u, err)
	}
	if _, err := e.Admin.CreateUser(ctx, apiv1.UserCreate{Email: "erik@example.com", Role: store.RoleReadOnly, Invite: true}); !slices.Equal(fieldsOf422(t, err), []string{"email"}) {
		t.Errorf("a taken address: %v", err)
	}
	erik, err := admin.FindUser(ctx, e.Store, e.Org.ID, "erik@example.com")
	if err != nil || !erik.MustChangePassword {
		t.Fatalf("erik: %+v %v", erik, err)
	}
	if check, err := auth.BeginPasswordCheck(); err == nil {
		ok, _ := check.Matches("a one-time password 7", erik.PasswordHash)
		check.End()
		if !ok {
			t.Error("the initial password does not match")
		}
	}

	// An invitation: the token is answered once and stored hashed.
	inv, err := e.Admin.CreateUser(ctx, apiv1.UserCreate{Email: "dana@example.com", Role: store.RoleAdministrator, Invite: true, ExpiresInHours: 48})
	if err != nil || inv.Invitation == nil || inv.InvitationExpiresAt == nil {
		t.Fatalf("invite: %+v %v", inv, err)
	}
	if want := time.Now().Add(48 * time.Hour); inv.Invitation.ExpiresAt.Before(want.Add(-time.Hour)) || inv.Invitation.ExpiresAt.After(want.Add(time.Hour)) {
		t.Errorf("the invitation ends at %v, want about %v", inv.Invitation.ExpiresAt, want)
	}
	link, err := url.Parse(inv.Invitation.URL)
	if err != nil || link.Path != "/console/invitation" || link.Query().Get("token") != inv.Invitation.Token || len(inv.Invitation.Token) < 40 {
		t.Errorf("invitation link %q", inv.Invitation.URL)
	}
	dana, err := e.Store.InvitedUser(ctx, auth.HashSecret(inv.Invitation.Token), time.Now())
	if err != nil || dana.ID != inv.ID || dana.PasswordHash != "" {
		t.Fatalf("the invitation is not stored by its hash: %+v %v", dana, err)
	}
	if _, err := e.Store.InvitedUser(ctx, inv.Invitation.Token, time.Now()); err == nil {
		t.Error("the token itself is stored")
	}
	if _, err := e.Store.InvitedUser(ctx, auth.HashSecret(inv.Invitation.Token), time.Now().Add(49*time.Hour)); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("an expired invitation: %v", err)
	}
	list, _ := e.Admin.ListUsers(ctx)
	for _, it := range list.Items {
		if (it.Email == "dana@example.com") != (it.InvitationExpiresAt != nil) {
			t.Errorf("listed %s with invitation %v", it.Email, it.InvitationExpiresAt)
		}
	}
	if c := audit1(t, e, "user.create"); !strings.HasPrefix(c.Actor, "api:") || c.Summary["mustChangePassword"] != true || c.TargetID != u.ID {
		t.Errorf("create audit: %+v", c)
	}
	if s := audit1(t, e, "user.invite").Summary; !strings.HasPrefix(audit1(t, e, "user.invite").Actor, "api:") || s["email"] != "dana@example.com" || s["role"] != store.RoleAdministrator {
		t.Errorf("invite audit summary: %+v", s)
	}

	// Delete: another organization's user is 404, an operator 403.
	other := e.NewOrg("Globex")
	globex, err := admin.CreateUser(ctx, e.Store, "test", other.ID, "carol@globex.example", store.RoleReadOnly, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Admin.DeleteUser(ctx, globex.ID); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("deleting another organization's user: %v", err)
	}
	op, err := admin.CreateOperator(ctx, e.Store, "test", admin.InstanceActor{Actor: "test"}, e.Org.ID, "op@example.com", store.RoleReadOnly, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Admin.DeleteUser(ctx, op.ID); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("deleting an instance operator: %v", err)
	}
	if err := almost.DeleteUser(ctx, inv.ID); !client.IsStatus(err, http.StatusForbidden) {
		t.Errorf("delete without every permission: %v", err)
	}
	if err := e.Admin.DeleteUser(ctx, inv.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := e.Admin.DeleteUser(ctx, inv.ID); !client.IsStatus(err, http.StatusNotFound) {
		t.Errorf("deleting again: %v", err)
	}
	if _, err := e.Store.InvitedUser(ctx, auth.HashSecret(inv.Invitation.Token), time.Now()); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("the deleted user's invitation still opens: %v", err)
	}
	if d := audit1(t, e, "user.delete"); d.TargetID != inv.ID || d.Summary["email"] != "dana@example.com" {
		t.Errorf("delete audit: %+v", d)
	}
}

// audit1 answers the one Audit Trail entry of an action in e.Org.
func audit1(t *testing.T, e *apitest.Env, action string) store.AuditEntry {
	t.Helper()
	en, err := e.Store.ListAudit(context.Background(), e.Org.ID, store.AuditFilter{Action: action, Limit: 10})
	if err != nil || len(en) != 1 {
		t.Fatalf("audit %s: %+v %v", action, en, err)
	}
	return en[0]
}
