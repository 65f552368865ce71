package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	cdpwebauthn "github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// localhost is the test server's address by name: browsers take passkeys
// only for domain names, never for an IP address.
func localhost(e *apitest.Env) string {
	return strings.Replace(e.URL, "://127.0.0.1:", "://localhost:", 1)
}

// virtualAuthenticator gives the tab a platform authenticator (CTAP2,
// internal transport, resident keys, user verification that succeeds and
// presence simulated), as a laptop's fingerprint reader is.
func (tb *tab) virtualAuthenticator() cdpwebauthn.AuthenticatorID {
	tb.t.Helper()
	var id cdpwebauthn.AuthenticatorID
	tb.do("add a virtual authenticator", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, cdpwebauthn.Enable, cdpwebauthn.EnableParams{}); err != nil {
			return err
		}
		res, err := chromedp.Call(ctx, cdpwebauthn.AddVirtualAuthenticator, cdpwebauthn.AddVirtualAuthenticatorParams{
			Options: &cdpwebauthn.VirtualAuthenticatorOptions{Protocol: cdpwebauthn.AuthenticatorProtocolCtap2, Transport: cdpwebauthn.AuthenticatorTransportInternal,
				HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true}})
		id = res.AuthenticatorID
		return err
	}))
	return id
}

// signInWithPassword fills in the sign-in page (with next) and waits for
// the page that follows it.
func (tb *tab) signInWithPassword(base, email, next, waitFor string) {
	tb.t.Helper()
	tb.visit(base, "/console/login?next="+url.QueryEscape(next), "login-"+email)
	tb.do("sign in as "+email,
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Submit(chromedp.CSS("#password")),
		chromedp.WaitVisible(chromedp.CSS(waitFor)))
}

func (tb *tab) signOut() {
	tb.t.Helper()
	tb.do("sign out", chromedp.Click(chromedp.CSS(`form.who button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#email")))
}

// registerPasskey adds a passkey on the Account page and waits for the
// list to show it.
func (tb *tab) registerPasskey(base, name string) {
	tb.t.Helper()
	tb.visit(base, "/console/account", "account-"+name)
	tb.do("register the passkey "+name,
		chromedp.SendKeys(chromedp.CSS("#pkname"), name),
		chromedp.Click(chromedp.CSS(`#passkey-register button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(".flash.ok")))
	tb.accessible("the Account page with a passkey")
	tb.screenshot("passkey-" + name)
	if got := tb.text("#passkeys tbody"); !strings.Contains(got, name) {
		tb.t.Fatalf("the passkey list after adding %s: %q", name, got)
	}
}

// TestPasskeyBrowser: in Chromium with a virtual authenticator, a user
// registers a passkey on the Account page, signs out and signs in with
// the password and the passkey (the Audit Trail has both, with the
// address); once removed, the same passkey no longer signs in (the refusal
// is audited); a Read-only user manages its own passkeys, never another's.
func TestPasskeyBrowser(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "rita@example.com", store.RoleReadOnly)
	base := localhost(e)
	authenticator := tb.virtualAuthenticator()
	alice := findUser(t, e, "alice@example.com")

	tb.signInWithPassword(base, "alice@example.com", "/console/account", "#h-passkeys")
	tb.registerPasskey(base, "Work laptop")
	keys, err := e.Store.ListPasskeys(ctx, e.Org.ID, alice.ID)
	if err != nil || len(keys) != 1 || keys[0].Name != "Work laptop" || len(keys[0].Transports) == 0 {
		t.Fatalf("stored passkeys: %+v %v", keys, err)
	}
	if added := audited(t, e, e.Org.ID, "user.passkey_add"); len(added) != 1 || added[0].Address == "" || added[0].Actor != "user:alice@example.com" {
		t.Errorf("passkey_add audit: %+v", added)
	}

	// Sign out, then the password and the passkey sign in.
	tb.signOut()
	tb.signInWithPassword(base, "alice@example.com", "/console/audit?action=user.sign_in", "#passkey-signin")
	tb.accessible("the second-factor page with a passkey")
	tb.screenshot("passkey-second-factor")
	if tb.visible("#code") {
		t.Error("a user with a passkey and no authenticator app is asked for a code")
	}
	tb.do("sign in with the passkey", chromedp.Click(chromedp.CSS(`#passkey-signin button`)), chromedp.WaitVisible(chromedp.CSS("#audit")))
	tb.accessible("the Audit Trail")
	tb.screenshot("passkey-signed-in")
	if got := tb.text("#audit tbody"); !strings.Contains(got, "password+passkey") || !strings.Contains(got, "Work laptop") {
		t.Errorf("the Audit Trail page does not show the passkey sign-in: %q", got)
	}
	ins := audited(t, e, e.Org.ID, "user.sign_in")
	if len(ins) == 0 || ins[0].Summary["method"] != "password+passkey" || ins[0].Summary["passkey"] != "Work laptop" || ins[0].Address == "" {
		t.Errorf("the newest sign-in audit: %+v", ins[:min(1, len(ins))])
	}
	if k, _ := e.Store.GetPasskey(ctx, e.Org.ID, alice.ID, keys[0].ID); k.LastUsedAt.IsZero() {
		t.Error("the passkey's last use is not recorded")
	}

	// Remove it on the Account page (with the password). A second passkey
	// (on another device) keeps the second factor; the removed one, still
	// on this authenticator, is refused when the browser offers it.
	other, err := e.Store.AddPasskey(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "user.passkey_add", TargetType: "user", TargetID: alice.ID},
		store.Passkey{OrgID: e.Org.ID, UserID: alice.ID, CredentialID: []byte("a key on another device"), PublicKey: []byte{0xa0}, Name: "Phone"})
	if err != nil {
		t.Fatal(err)
	}
	tb.visit(base, "/console/account", "account-two-passkeys")
	tb.do("remove the passkey",
		chromedp.SendKeys(chromedp.CSS("#pkp-"+keys[0].ID), password),
		chromedp.Submit(chromedp.CSS("#pkp-"+keys[0].ID)),
		chromedp.WaitVisible(chromedp.CSS(".flash.ok")))
	if got := tb.text("#passkeys tbody"); strings.Contains(got, "Work laptop") || !strings.Contains(got, "Phone") {
		t.Errorf("the passkey list after the removal: %q", got)
	}
	if removed := audited(t, e, e.Org.ID, "user.passkey_remove"); len(removed) != 1 || removed[0].Summary["name"] != "Work laptop" || removed[0].Address == "" {
		t.Errorf("passkey_remove audit: %+v", removed)
	}
	tb.signOut()
	tb.signInWithPassword(base, "alice@example.com", "/console/", "#passkey-signin")
	tb.mu.Lock()
	tb.expect = map[int]bool{http.StatusUnauthorized: true}
	tb.mu.Unlock()
	tb.do("offer the removed passkey",
		// A browser offering whatever passkey of this site it holds, as a
		// stale or hostile client would.
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[bool](`(function () { var get = navigator.credentials.get.bind(navigator.credentials);
				navigator.credentials.get = function (o) { o.publicKey.allowCredentials = []; return get(o); }; return true; })()`)(ctx, t)
			return err
		}),
		chromedp.Click(chromedp.CSS(`#passkey-signin button`)),
		chromedp.WaitVisible(chromedp.CSS("#passkey-error")))
	tb.screenshot("passkey-refused")
	if got := tb.text("#passkey-error"); !strings.Contains(got, "did not sign you in") {
		t.Errorf("the refusal says %q", got)
	}
	failed := audited(t, e, e.Org.ID, "user.sign_in_failed")
	if len(failed) != 1 || failed[0].Summary["reason"] != "passkey" || failed[0].Summary["detail"] != "unknown passkey" || failed[0].Address == "" {
		t.Errorf("the refused passkey's audit: %+v", failed)
	}
	if code, _ := newBrowser(t, base).get("/console/"); code != http.StatusSeeOther {
		t.Errorf("an anonymous page answered %d", code)
	}
	tb.mu.Lock()
	tb.expect = nil
	tb.mu.Unlock()
	tb.do("cancel the sign-in", chromedp.Click(chromedp.CSS(`form[action="/console/logout"] button`)), chromedp.WaitVisible(chromedp.CSS("#email")))

	// A Read-only user adds and removes its own passkey.
	rita := findUser(t, e, "rita@example.com")
	// (Her second session, signed in before she has a passkey, tries
	// alice's below.)
	r := newBrowser(t, base)
	r.signIn("rita@example.com")
	tb.signInWithPassword(base, "rita@example.com", "/console/account", "#h-passkeys")
	tb.registerPasskey(base, "Rita's key")
	ritaKeys, err := e.Store.ListPasskeys(ctx, e.Org.ID, rita.ID)
	if err != nil || len(ritaKeys) != 1 {
		t.Fatalf("rita's passkeys: %+v %v", ritaKeys, err)
	}
	tb.do("rename it",
		chromedp.SetValue(chromedp.CSS("#pkn-"+ritaKeys[0].ID), "Rita's YubiKey"),
		chromedp.Submit(chromedp.CSS("#pkn-"+ritaKeys[0].ID)),
		chromedp.WaitVisible(chromedp.CSS(".flash.ok")))
	if got := tb.text("#passkeys tbody"); !strings.Contains(got, "Rita's YubiKey") {
		t.Errorf("after the rename: %q", got)
	}
	// …but not alice's (a forged form: the page offers none).
	r.get("/console/account")
	for _, op := range []url.Values{{"name": {"Mine"}}, {"password": {password}}} {
		path := "/console/account/passkeys/" + other.ID + "/rename"
		if op.Has("password") {
			path = "/console/account/passkeys/" + other.ID + "/remove"
		}
		if code, _, _ := r.post(path, op); code != http.StatusSeeOther {
			t.Errorf("%s of alice's passkey by rita: %d", path, code)
		}
	}
	if k, err := e.Store.GetPasskey(ctx, e.Org.ID, alice.ID, other.ID); err != nil || k.Name != "Phone" {
		t.Errorf("alice's passkey after rita's attempts: %+v %v", k, err)
	}
	tb.do("remove it",
		chromedp.SendKeys(chromedp.CSS("#pkp-"+ritaKeys[0].ID), password),
		chromedp.Submit(chromedp.CSS("#pkp-"+ritaKeys[0].ID)),
		chromedp.WaitVisible(chromedp.CSS("#passkeys-none")))
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, rita.ID); len(l) != 0 {
		t.Errorf("rita's passkeys after the removal: %+v", l)
	}
	tb.signOut()

	// The organization requires a second factor: a user without one adds a
	// passkey at the sign-in step and is signed in.
	if err := e.Store.SetOrgRequireMFA(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "org.require_mfa", TargetType: "org"}, e.Org.ID, true); err != nil {
		t.Fatal(err)
	}
	addUser(t, e, e.Org, "erin@example.com", store.RoleReadOnly)
	tb.signInWithPassword(base, "erin@example.com", "/console/groups", "#h-enroll-passkey")
	tb.accessible("the enrollment step")
	tb.screenshot("passkey-enroll")
	tb.do("add a passkey at the enrollment step",
		chromedp.SendKeys(chromedp.CSS("#pkname"), "Erin's laptop"),
		chromedp.Click(chromedp.CSS(`#passkey-register button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("header.top")))
	if got := tb.text("#main h1"); got != "Groups" {
		t.Errorf("after the enrollment step the page is %q, want Groups", got)
	}
	erin := findUser(t, e, "erin@example.com")
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, erin.ID); len(l) != 1 {
		t.Errorf("erin's passkeys: %+v", l)
	}

	// Passwordless: with only erin's passkey on the authenticator, "Sign
	// in with a passkey" on the sign-in page signs her in.
	tb.do("keep only erin's passkey on the authenticator", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		res, err := chromedp.Call(ctx, cdpwebauthn.GetCredentials, cdpwebauthn.GetCredentialsParams{AuthenticatorID: authenticator})
		if err != nil {
			return err
		}
		for _, c := range res.Credentials {
			if string(c.UserHandle) != erin.ID {
				if _, err := chromedp.Call(ctx, cdpwebauthn.RemoveCredential, cdpwebauthn.RemoveCredentialParams{AuthenticatorID: authenticator, CredentialID: c.CredentialID}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	tb.signOut()
	tb.visit(base, "/console/login?next=%2Fconsole%2Faccount", "login-passwordless")
	tb.do("sign in with a passkey alone",
		chromedp.Click(chromedp.CSS(`#passkey-login button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#h-passkeys")))
	tb.screenshot("passwordless-signed-in")
	if ins := audited(t, e, e.Org.ID, "user.sign_in"); len(ins) == 0 || ins[0].Actor != "user:erin@example.com" || ins[0].Summary["method"] != "passkey" {
		t.Errorf("erin's passwordless sign-in audit: %+v", ins[:min(1, len(ins))])
	}
}

func findUser(t *testing.T, e *apitest.Env, email string) store.ConsoleUser {
	t.Helper()
	users, err := e.Store.ListUsers(context.Background(), e.Org.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range users {
		if u.Email == email {
			return u
		}
	}
	t.Fatalf("no user %s", email)
	return store.ConsoleUser{}
}
