package api_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestCredentialOperations: /api/v1/credentials lists credentials (never
// a secret), creates one whose secret is answered once and works, disables
// it (its tokens stop working), enables and deletes it; bad input is 422
// with nothing made; 403 without every permission, 404 for another
// organization's credential; each change audited with the caller.
func TestCredentialOperations(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	count := func() int {
		cs, err := e.Store.ListCredentials(ctx, e.Org.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	before := count()
	noAPI, err := e.Store.CreateRole(ctx, e.Org.ID, "Console only", perm.Set(perm.EndpointsView))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		body apiv1.CredentialBody
		want []string
	}{
		{apiv1.CredentialBody{}, []string{"name", "role"}},
		{apiv1.CredentialBody{Name: "x", Role: "Nope"}, []string{"role"}},
		{apiv1.CredentialBody{Name: "x", Role: noAPI.Name}, []string{"role"}},
		{apiv1.CredentialBody{Name: strings.Repeat("n", 201), Role: store.RoleReadOnly}, []string{"name"}},
	} {
		_, err := e.Admin.CreateCredential(ctx, tc.body)
		if got := fieldsOf422(t, err); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: fields %v, want %v", tc.body, got, tc.want)
		}
	}
	if count() != before {
		t.Fatal("a refused credential was created")
	}
	almost := e.Client(e.Org, perm.All&^perm.Set(perm.ReportsManage))
	wantStatus(t, errOf(almost.ListCredentials(ctx)), http.StatusForbidden, "list without every permission")
	wantStatus(t, errOf(almost.CreateCredential(ctx, apiv1.CredentialBody{Name: "x", Role: store.RoleAdministrator})), http.StatusForbidden, "create without every permission")

	nc, err := e.Admin.CreateCredential(ctx, apiv1.CredentialBody{Name: "nightly-report", Role: store.RoleReadOnly})
	if err != nil || nc.ClientSecret == "" || nc.ClientID == "" || nc.Role != store.RoleReadOnly || nc.Disabled {
		t.Fatalf("create: %+v %v", nc, err)
	}
	if _, err := e.Admin.CreateCredential(ctx, apiv1.CredentialBody{Name: "nightly-report", Role: store.RoleReadOnly}); !slices.Equal(fieldsOf422(t, err), []string{"name"}) {
		t.Errorf("a taken name: %v", err)
	}
	if c, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "credential.create", Limit: 1}); len(c) != 1 || !strings.HasPrefix(c[0].Actor, "api:") ||
		c[0].Summary["name"] != "nightly-report" || c[0].Address == "" {
		t.Errorf("create audit: %+v", c)
	}
	nightly := client.New(e.URL, nc.ClientID, nc.ClientSecret, client.WithHTTPClient(e.HTTPClient))
	if _, err := nightly.ListEndpoints(ctx, client.EndpointQuery{}); err != nil {
		t.Fatalf("the new credential does not work: %v", err)
	}
	list, err := e.Admin.ListCredentials(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range list.Items {
		found = found || c.ID == nc.ID
	}
	if !found || list.Total != len(list.Items) {
		t.Errorf("list: %+v", list)
	}

	// Disable: the token in use stops working at once.
	if _, err := e.Admin.SetCredentialDisabled(ctx, "nightly-report", true); err != nil {
		t.Fatalf("disable: %v", err)
	}
	if _, err := nightly.ListEndpoints(ctx, client.EndpointQuery{}); err == nil {
		t.Error("a disabled credential's token still works")
	}
	if d := audit1(t, e, "credential.disable"); d.TargetID != nc.ID {
		t.Errorf("disable audit: %+v", d)
	}
	if c, err := e.Admin.SetCredentialDisabled(ctx, nc.ClientID, false); err != nil || c.Disabled {
		t.Errorf("enable: %+v %v", c, err)
	}
	if _, err := e.Admin.SetCredentialDisabled(ctx, nc.ClientID, false); err != nil {
		t.Errorf("enabling an enabled credential: %v", err)
	}

	// Another organization's credential is 404.
	other := e.NewOrg("Globex")
	gc := e.Credential(other, perm.ReadOnly)
	wantStatus(t, e.Admin.DeleteCredential(ctx, gc.ClientID), http.StatusNotFound, "deleting another organization's credential")
	wantStatus(t, errOf(e.Admin.SetCredentialDisabled(ctx, gc.ClientID, true)), http.StatusNotFound, "disabling another organization's credential")
	wantStatus(t, almost.DeleteCredential(ctx, nc.ID), http.StatusForbidden, "delete without every permission")
	if err := e.Admin.DeleteCredential(ctx, nc.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.Store.FindCredential(ctx, e.Org.ID, nc.ID); err == nil {
		t.Error("the credential is still there")
	}
	if d := audit1(t, e, "credential.delete"); d.TargetID != nc.ID {
		t.Errorf("delete audit: %+v", d)
	}
}

// TestSignInPolicy: PUT /api/v1/sign-in-policy sets requireSecondFactor
// (required: 422 without it), audited; 403 without every permission.
func TestSignInPolicy(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	p, err := e.Admin.SignInPolicy(ctx)
	if err != nil || p.RequireSecondFactor == nil || *p.RequireSecondFactor {
		t.Fatalf("the default policy: %+v %v", p, err)
	}
	almost := e.Client(e.Org, perm.All&^perm.Set(perm.ReportsManage))
	wantStatus(t, errOf(almost.SetSignInPolicy(ctx, true)), http.StatusForbidden, "set without every permission")
	if err := e.Admin.Do(ctx, http.MethodPut, "/api/v1/sign-in-policy", nil, map[string]any{}, nil); !slices.Equal(fieldsOf422(t, err), []string{"requireSecondFactor"}) {
		t.Errorf("no field: %v", err)
	}
	if on, _ := e.Store.OrgRequiresMFA(ctx, e.Org.ID); on {
		t.Fatal("a refused policy was set")
	}
	if p, err := e.Admin.SetSignInPolicy(ctx, true); err != nil || !*p.RequireSecondFactor {
		t.Fatalf("set: %+v %v", p, err)
	}
	if on, _ := e.Store.OrgRequiresMFA(ctx, e.Org.ID); !on {
		t.Error("the policy is not stored")
	}
	if a := audit1(t, e, "org.require_mfa"); !strings.HasPrefix(a.Actor, "api:") || a.Summary["requireSecondFactor"] != true {
		t.Errorf("audit: %+v", a)
	}
	other := e.NewOrg("Globex")
	if on, _ := e.Store.OrgRequiresMFA(ctx, other.ID); on {
		t.Error("another organization's policy changed")
	}
}
