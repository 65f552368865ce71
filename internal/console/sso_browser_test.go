package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
)

// TestSSOBrowserDomainSignIn: signing in by e-mail domain in Chromium,
// under the console's Content-Security-Policy (form-action 'self'), goes
// from the e-mail form through the real provider and back, signed in.
func TestSSOBrowserDomainSignIn(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	ctx := context.Background()
	issuer := startProvider(t, e.URL+sso.CallbackPath)
	secret := oidcSecret
	if _, err := admin.SetSSO(ctx, e.Store, "test", e.Org.ID, sso.Settings{ProviderName: "Test IdP", Issuer: issuer, ClientID: "patchd",
		ClientSecret: &secret, AllowedDomains: []string{"example.com"}, Scopes: []string{"groups"}, RoleClaim: "groups",
		RoleMap: []sso.Mapping{{Value: "patchd-readers", Role: store.RoleReadOnly}}, JustInTime: true, Enabled: true}); err != nil {
		t.Fatal(err)
	}
	tb.visit(e.URL, "/console/sso", "sso-email")
	// A navigation the page's Content-Security-Policy blocks is reported
	// to the page that asked for it.
	if _, err := chromedp.Run(tb.ctx, chromedp.Evaluate[bool](`window.cspViolations = [];
		document.addEventListener('securitypolicyviolation', e => window.cspViolations.push(e.violatedDirective + ' ' + e.blockedURI)); true`)); err != nil {
		t.Fatal(err)
	}
	tb.do("the e-mail form",
		chromedp.SendKeys(chromedp.CSS("#sso-email"), "rita@example.com"),
		chromedp.Submit(chromedp.CSS("#sso-email")))
	waitFor(t, "the sign-in through the provider", func() bool {
		if blocked, err := chromedp.Run(tb.ctx, chromedp.Evaluate[[]string](`window.cspViolations || []`)); err == nil && len(blocked) > 0 {
			tb.screenshot("sso-domain-blocked")
			t.Fatalf("the browser blocked the sign-in: %v", blocked)
		}
		loc, err := chromedp.Run(tb.ctx, chromedp.Location())
		return err == nil && strings.HasSuffix(loc, "/console/")
	})
	tb.do("the dashboard", chromedp.WaitVisible(chromedp.CSS("header.top")))
	if who := tb.text("header.top .who span"); !strings.Contains(who, "rita@example.com") {
		t.Fatalf("signed in as %q", who)
	}
	tb.screenshot("sso-domain-signed-in")
	users, err := e.Store.UsersByEmail(ctx, "rita@example.com")
	if err != nil || len(users) != 1 || users[0].RoleName != store.RoleReadOnly {
		t.Fatalf("rita: %+v %v", users, err)
	}
}
