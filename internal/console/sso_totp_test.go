package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSSOUserIsNotOfferedAnAuthenticatorApp: a single sign-on sign-in never
// asks patchd's second factor, so a user who signs in only that way is not
// offered an authenticator app (one set up would protect nothing): the
// Account page says so, and the setup's forms are refused.
func TestSSOUserIsNotOfferedAnAuthenticatorApp(t *testing.T) {
	e := newSSOEnv(t)
	e.configure(true, "example.com")
	a := e.browser()
	if code, loc, body := a.callback(e.toCallback(a, "alice@example.com")); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("alice's sign-in: %d %s\n%.800s", code, loc, body)
	}
	code, body := a.get("/console/account")
	if code != http.StatusOK || strings.Contains(body, `action="/console/account/totp"`) || !strings.Contains(body, `id="totp-sso"`) {
		t.Fatalf("the Account page of a single sign-on user offers an authenticator app: %d\n%.3000s", code, body)
	}
	for _, p := range []string{"/console/account/totp", "/console/account/totp/confirm"} {
		code, loc, body := a.post(p, url.Values{"code": {"123456"}})
		if code != http.StatusSeeOther || loc != "/console/account" || strings.Contains(body, "otpauth://") {
			t.Errorf("POST %s by a single sign-on user: %d %s, want 303 back to the Account page\n%.800s", p, code, loc, body)
		}
	}
	_, body = a.get("/console/account")
	if !strings.Contains(body, "single sign-on") || strings.Contains(body, "otpauth://") {
		t.Errorf("the refusal is not shown:\n%.3000s", body)
	}
}
