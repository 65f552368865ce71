package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/sso/ssotest"
	"github.com/patchd/patchd/internal/store"
)

// TestSSOSettings: the single sign-on provider through the API (patchd
// additions): set with the console's checks (422 on the fields, nothing
// stored), read without the secret, a change that keeps the secret,
// removed; audited as the credential; for roles holding every permission;
// another organization's provider is not seen.
func TestSSOSettings(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	admin := e.Client(e.Org, perm.All)
	mustStatus(t, errOf(admin.SSO(ctx)), http.StatusNotFound, "before any")
	secret := "s3cret-keycloak"
	body := apiv1.SSOBody{ProviderName: "Keycloak", Issuer: "http://id.example.com/realms/acme", ClientID: "patchd", ClientSecret: &secret,
		AllowedDomains: []string{"example.com"}, RoleClaim: "realm_access.roles",
		RoleMap: []apiv1.SSORoleMapping{{Value: "patchd-admin", Role: "Nope"}}, JustInTime: true, Enabled: true}
	_, err := admin.SetSSO(ctx, body)
	if got := problemFields(err); !strings.Contains(got, "issuer") || !strings.Contains(got, "roleMap") {
		t.Fatalf("a bad provider: %v (%s)", err, got)
	}
	if _, err := e.Store.GetSSOConfig(ctx, e.Org.ID); err == nil {
		t.Fatal("a refused provider was stored")
	}
	body.Issuer, body.RoleMap = ssotest.Issuer(t), []apiv1.SSORoleMapping{{Value: "patchd-admin", Role: store.RoleAdministrator}}
	got, err := admin.SetSSO(ctx, body)
	if err != nil || got.ProviderName != "Keycloak" || !got.HasClientSecret || len(got.RoleMap) != 1 || got.RoleMap[0].Role != store.RoleAdministrator ||
		!strings.HasPrefix(got.UpdatedBy, "api:") {
		t.Fatalf("set: %+v %v", got, err)
	}
	// A change without clientSecret keeps the stored one.
	body.ClientSecret, body.Enabled = nil, false
	if got, err := admin.SetSSO(ctx, body); err != nil || !got.HasClientSecret || got.Enabled {
		t.Fatalf("change: %+v %v", got, err)
	}
	if cfg, err := e.Store.GetSSOConfig(ctx, e.Org.ID); err != nil || cfg.ClientSecret() != secret {
		t.Fatalf("the secret after a change: %v", err)
	}
	if got, err := admin.SSO(ctx); err != nil || got.Issuer != body.Issuer {
		t.Fatalf("get: %+v %v", got, err)
	}
	entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "sso_config.set"})
	if len(entries) != 2 || !strings.HasPrefix(entries[0].Actor, "api:") || entries[0].Address == "" {
		t.Errorf("audit: %+v", entries)
	}
	// Roles without every permission, and another organization.
	wantStatus(t, errOf(e.Client(e.Org, perm.ReadOnly).SSO(ctx)), http.StatusForbidden, "read-only get")
	wantStatus(t, errOf(e.Client(e.Org, perm.ReadOnly).SetSSO(ctx, body)), http.StatusForbidden, "read-only set")
	wantStatus(t, errOf(e.Client(e.NewOrg("Other"), perm.All).SSO(ctx)), http.StatusNotFound, "other organization")
	if err := admin.DeleteSSO(ctx); err != nil {
		t.Fatal(err)
	}
	wantStatus(t, admin.DeleteSSO(ctx), http.StatusNotFound, "delete twice")
}
