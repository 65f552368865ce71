package console_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/identity"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
)

// The linking rules against the real provider (docs/sso.md, "Linking
// rules"). Accounts of testAccounts used here: zoe (no email_verified, as
// zitadel/oidc leaves a false one out), otto (the instance operator), tess
// (a password user with a second factor), and the multi-audience ones.
func init() {
	testAccounts["zoe@example.com"] = map[string]any{"groups": []string{"patchd-admins"}, "email_verified": "omit"}
	testAccounts["otto@example.com"] = map[string]any{"groups": []string{"patchd-readers"}}
	testAccounts["tess@example.com"] = map[string]any{"groups": []string{"patchd-admins"}}
	testAccounts["ada@example.com"] = map[string]any{"groups": []string{"patchd-readers"}, "id_token_aud": []string{"patchd", "other-app"}}
	testAccounts["abe@example.com"] = map[string]any{"groups": []string{"patchd-readers"}, "id_token_aud": []string{"patchd", "other-app"},
		"id_token_azp": "patchd"}
	testAccounts["amy@example.com"] = map[string]any{"groups": []string{"patchd-readers"}, "id_token_azp": "other-app"}
}

func (e *ssoEnv) linked(email string) bool {
	e.t.Helper()
	users, err := e.s.UsersByEmail(context.Background(), email)
	if err != nil || len(users) != 1 {
		e.t.Fatalf("users %s: %+v %v", email, users, err)
	}
	ok, err := e.s.SSOLinked(context.Background(), users[0].ID, e.issuer)
	if err != nil {
		e.t.Fatal(err)
	}
	return ok
}

func (e *ssoEnv) signsIn(b *browser, email string) {
	e.t.Helper()
	if code, loc, body := b.callback(e.toCallback(b, email)); code != http.StatusSeeOther || loc != "/console/" {
		e.t.Fatalf("%s's sign-in: %d %s\n%.800s", email, code, loc, body)
	}
}

// TestSSOOperatorProtection: an Administrator of the operator's
// organization sets up a provider; an ID token with the operator's address
// neither links nor signs in the operator, and role mapping never changes
// its role, until an instance-level action (audited in the instance's
// Audit Trail) lets it use single sign-on.
func TestSSOOperatorProtection(t *testing.T) {
	e := newSSOEnv(t)
	ctx := context.Background()
	e.configure(true, "example.com")
	if _, err := admin.CreateOperator(ctx, e.s, "test", admin.InstanceActor{Actor: "test"}, e.org.ID, "otto@example.com", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	e.refused(e.browser(), "otto@example.com", identity.ReasonOperator, http.StatusForbidden)
	if e.linked("otto@example.com") {
		t.Fatal("a refused sign-in linked the operator")
	}
	if users, _ := e.s.UsersByEmail(ctx, "otto@example.com"); users[0].RoleName != store.RoleAdministrator {
		t.Fatalf("the refused sign-in changed the operator's role: %s", users[0].RoleName)
	}
	// Just-in-time does not make a second account either.
	if users, _ := e.s.UsersByEmail(ctx, "otto@example.com"); len(users) != 1 {
		t.Fatalf("accounts of otto: %d", len(users))
	}

	// The instance-level opt-in: linked and signed in, the role kept
	// (the provider's groups would make it Read-only).
	if _, err := admin.SetOperatorSSO(ctx, e.s, admin.InstanceActor{Actor: "cli:root"}, "", "otto@example.com", true); err != nil {
		t.Fatal(err)
	}
	events, _ := e.s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"instance_operator.sso_allow"}, Limit: 5})
	if len(events) != 1 || events[0].Actor != "cli:root" {
		t.Fatalf("the instance's Audit Trail: %+v", events)
	}
	e.signsIn(e.browser(), "otto@example.com")
	users, _ := e.s.UsersByEmail(ctx, "otto@example.com")
	if !e.linked("otto@example.com") || users[0].RoleName != store.RoleAdministrator || !users[0].InstanceOperator {
		t.Fatalf("after the opt-in: %+v", users[0])
	}
	// Taken back: the linked operator is refused again.
	if _, err := admin.SetOperatorSSO(ctx, e.s, admin.InstanceActor{Actor: "cli:root"}, "", "otto@example.com", false); err != nil {
		t.Fatal(err)
	}
	e.refused(e.browser(), "otto@example.com", identity.ReasonOperator, http.StatusForbidden)

	// A user linked before it became an operator is refused too.
	b := e.browser()
	e.signsIn(b, "rita@example.com")
	if _, err := admin.SetOperator(ctx, e.s, admin.InstanceActor{Actor: "test"}, "", "rita@example.com", true); err != nil {
		t.Fatal(err)
	}
	e.refused(e.browser(), "rita@example.com", identity.ReasonOperator, http.StatusForbidden)
}

// TestSSOUnverifiedAddress: the provider leaves email_verified out (as
// zitadel/oidc does for an unverified address): the address is neither
// linked to the existing Administrator nor signed in, unless the
// organization's settings say the provider verifies every address.
func TestSSOUnverifiedAddress(t *testing.T) {
	e := newSSOEnv(t)
	ctx := context.Background()
	e.configure(true, "example.com")
	if _, err := admin.CreateUser(ctx, e.s, "test", e.org.ID, "zoe@example.com", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	e.refused(e.browser(), "zoe@example.com", identity.ReasonEmailUnverified, http.StatusUnauthorized)
	if e.linked("zoe@example.com") {
		t.Fatal("an unverified address was linked")
	}
	cfg, _ := e.s.GetSSOConfig(ctx, e.org.ID)
	in := admin.SSOSettingsOf(cfg)
	in.ProviderVerifiesEmail = true
	if _, err := admin.SetSSO(ctx, e.s, "test", e.org.ID, in); err != nil {
		t.Fatal(err)
	}
	if got := e.lastAudit("sso_config.set"); got.Summary["providerVerifiesEmail"] != true {
		t.Fatalf("the settings' audit entry: %+v", got.Summary)
	}
	e.signsIn(e.browser(), "zoe@example.com")
	if !e.linked("zoe@example.com") {
		t.Fatal("zoe is not linked with the provider trusted")
	}
	// A false email_verified is refused whatever the settings say.
	e.refused(e.browser(), "vera@example.com", identity.ReasonEmailUnverified, http.StatusUnauthorized)
}

// TestSSOSecondFactorLink: an existing password user with a second factor
// is not linked by its address (that would skip the factor); it links the
// provider account from its own session after its password and second
// factor, and from then on the provider signs it in.
func TestSSOSecondFactorLink(t *testing.T) {
	e := newSSOEnv(t)
	ctx := context.Background()
	e.configure(false, "example.com")
	if _, err := admin.CreateUser(ctx, e.s, "test", e.org.ID, "tess@example.com", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn("tess@example.com")
	secret, _ := enrollTOTP(t, b)

	e.refused(e.browser(), "tess@example.com", identity.ReasonSecondFactor, http.StatusForbidden)
	if e.linked("tess@example.com") {
		t.Fatal("a user with a second factor was linked by its address")
	}
	if a := e.lastAudit("sso.sign_in_failed"); a.Summary["email"] != "tess@example.com" {
		t.Fatalf("the refusal's audit entry: %+v", a.Summary)
	}

	// The link from a session with password and second factor.
	s := e.browser()
	if loc := s.passwordOnly("tess@example.com"); !strings.HasPrefix(loc, "/console/signin/code") {
		t.Fatalf("after the password: %s", loc)
	}
	// Before the second factor the link cannot start.
	if code, _ := s.get("/console/account/sso-link"); code != http.StatusSeeOther {
		t.Fatalf("the link before the second factor: %d", code)
	}
	s.get("/console/signin/code")
	if code, loc, body := s.post("/console/signin/code", url.Values{"code": {code(t, secret, 1)}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("the second factor: %d %s\n%.500s", code, loc, body)
	}
	if code, body := s.get("/console/account"); code != http.StatusOK || !strings.Contains(body, `href="/console/account/sso-link"`) {
		t.Fatalf("the account page offers no link: %d\n%.2000s", code, body)
	}
	resp, err := s.c.Get(e.url + "/console/account/sso-link")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(cb, sso.CallbackPath) {
		t.Fatalf("the link did not come back to the callback: %d %s", resp.StatusCode, cb)
	}
	// Finished in another browser (no session of tess), it links nothing.
	if code, _, _ := e.browser().callback(cb); code != http.StatusBadRequest || e.linked("tess@example.com") {
		t.Fatalf("a link finished in another browser: %d", code)
	}
	resp, err = s.c.Get(e.url + "/console/account/sso-link")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code, loc, body := s.callback(resp.Header.Get("Location")); code != http.StatusSeeOther || loc != "/console/account" {
		t.Fatalf("the link's callback: %d %s\n%.800s", code, loc, body)
	}
	if !e.linked("tess@example.com") {
		t.Fatal("tess is not linked")
	}
	if got := e.lastAudit("user.sso_link"); got.Summary["email"] != "tess@example.com" || !strings.Contains(got.Summary["by"].(string), "second factor") {
		t.Fatalf("the link's audit entry: %+v", got.Summary)
	}
	if code, body := s.get("/console/account"); code != http.StatusOK || !strings.Contains(body, `id="sso-state"><span class="badge on">linked`) {
		t.Fatalf("the account page after linking: %d", code)
	}
	e.signsIn(e.browser(), "tess@example.com")
}

// TestSSOAuthorizedParty: an ID token for several audiences must name
// patchd's client as its azp, and an azp must be patchd's client.
func TestSSOAuthorizedParty(t *testing.T) {
	e := newSSOEnv(t, "CLAIMS_IN_ID_TOKEN=1")
	e.configure(true, "example.com")
	e.refused(e.browser(), "ada@example.com", "id_token_invalid", http.StatusUnauthorized)
	if a := e.lastAudit("sso.sign_in_failed"); !strings.Contains(a.Summary["reason"].(string), "azp") {
		t.Fatalf("the refusal's reason: %v", a.Summary["reason"])
	}
	e.refused(e.browser(), "amy@example.com", "id_token_invalid", http.StatusUnauthorized)
	e.signsIn(e.browser(), "abe@example.com")
}

// TestSSOIssuerDiscovery: an issuer whose discovery document names another
// one (a missing trailing slash) is refused when saved, with a 400 in the
// Error shape naming the document's issuer; a stored one that fails makes
// every start a refusal in the Audit Trail.
func TestSSOIssuerDiscovery(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	issuer := startProvider(t, e.URL+sso.CallbackPath)
	c := e.Client(e.Org, perm.All)
	secret := oidcSecret
	body := apiv1.SSOBody{ProviderName: "Test IdP", Issuer: issuer + "/", ClientID: "patchd", ClientSecret: &secret,
		AllowedDomains: []string{"example.com"}, DefaultRole: store.RoleReadOnly, JustInTime: true, Enabled: true}
	_, err := c.SetSSO(ctx, body)
	var ae *client.Error
	if !client.IsStatus(err, http.StatusBadRequest) || !errors.As(err, &ae) || ae.Code != "issuer_discovery_failed" ||
		!strings.Contains(ae.Description, `names the issuer "`+issuer+`"`) {
		t.Fatalf("an issuer with a trailing slash: %v", err)
	}
	if _, err := e.Store.GetSSOConfig(ctx, e.Org.ID); err == nil {
		t.Fatal("a refused provider was stored")
	}
	// Disabled, it is stored without asking the provider.
	body.Enabled = false
	if _, err := c.SetSSO(ctx, body); err != nil {
		t.Fatalf("a disabled provider: %v", err)
	}
	body.Issuer, body.Enabled = issuer, true
	if _, err := c.SetSSO(ctx, body); err != nil {
		t.Fatalf("the provider's own issuer: %v", err)
	}

	// A provider whose discovery fails after it was saved: the start is
	// refused and audited.
	cfg, _ := e.Store.GetSSOConfig(ctx, e.Org.ID)
	cfg.Issuer = issuer + "/"
	if _, err := e.Store.SetSSOConfig(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "sso_config.set"}, cfg, nil); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.URL)
	if code, body := b.get("/console/sso/" + e.Org.ID + "/start"); code != http.StatusBadGateway || !strings.Contains(body, "could not be reached") {
		t.Fatalf("a start with a broken issuer: %d\n%.500s", code, body)
	}
	entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "sso.sign_in_failed", Limit: 1})
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Summary["reason"].(string), "provider_unreachable") ||
		!strings.Contains(entries[0].Summary["reason"].(string), "did not match") {
		t.Fatalf("the failed start's audit entry: %+v", entries)
	}
}
