package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/store"
)

// TestOwnPasswordChange: the Account page changes the user's own password
// with the current one; a wrong current password changes nothing and is
// in the Audit Trail; the change signs the other sessions out and keeps
// this one; wrong current passwords are throttled like sign-ins.
func TestOwnPasswordChange(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "dora@example.com", store.RoleReadOnly)
	other := newBrowser(t, e.URL)
	other.signIn("dora@example.com")
	d := newBrowser(t, e.URL)
	d.from = "198.51.100.21"
	d.signIn("dora@example.com")
	_, body := d.get("/console/account")
	if !strings.Contains(body, `action="/console/account/password"`) {
		t.Fatal("the Account page lacks the password form")
	}
	const newPassword = "dora's brand new password"
	for _, tc := range []struct {
		name string
		form url.Values
		want int
	}{
		{"no current password", url.Values{"password": {newPassword}, "password2": {newPassword}}, http.StatusUnprocessableEntity},
		{"new passwords differ", url.Values{"current": {password}, "password": {newPassword}, "password2": {newPassword + "x"}}, http.StatusUnprocessableEntity},
		{"too short", url.Values{"current": {password}, "password": {"short"}, "password2": {"short"}}, http.StatusUnprocessableEntity},
		{"the same", url.Values{"current": {password}, "password": {password}, "password2": {password}}, http.StatusUnprocessableEntity},
		{"wrong current password", url.Values{"current": {"not my password"}, "password": {newPassword}, "password2": {newPassword}}, http.StatusUnauthorized},
	} {
		if code, _, body := d.post("/console/account/password", tc.form); code != tc.want || !strings.Contains(body, `id="password-error"`) {
			t.Errorf("%s: %d, want %d with the error shown", tc.name, code, tc.want)
		}
	}
	if n := len(audited(t, e, e.Org.ID, "user.password_change")); n != 0 {
		t.Fatalf("refused changes were recorded as %d changes", n)
	}
	if f := audited(t, e, e.Org.ID, "user.password_change_failed"); len(f) != 1 || f[0].Address != "198.51.100.21" {
		t.Errorf("failed change audit: %+v", f)
	}
	if code, _ := other.get("/console/"); code != http.StatusOK {
		t.Fatal("a refused change ended the other session")
	}

	code, loc, _ := d.post("/console/account/password", url.Values{"current": {password}, "password": {newPassword}, "password2": {newPassword}})
	if code != http.StatusSeeOther || loc != "/console/account" {
		t.Fatalf("password change: %d %s", code, loc)
	}
	if code, _ := d.get("/console/account"); code != http.StatusOK {
		t.Error("the session that changed the password was signed out")
	}
	if code, _ := other.get("/console/"); code != http.StatusSeeOther {
		t.Error("the other session outlived the password change")
	}
	if ch := audited(t, e, e.Org.ID, "user.password_change"); len(ch) != 1 || ch[0].Address != "198.51.100.21" || ch[0].Actor != "user:dora@example.com" {
		t.Errorf("password change audit: %+v", ch)
	}
	old := newBrowser(t, e.URL)
	old.get("/console/login")
	if code, _, _ := old.post("/console/login", url.Values{"email": {"dora@example.com"}, "password": {password}}); code != http.StatusUnauthorized {
		t.Errorf("the old password still signs in: %d", code)
	}
	if code, _, _ := old.post("/console/login", url.Values{"email": {"dora@example.com"}, "password": {newPassword}}); code != http.StatusSeeOther {
		t.Errorf("the new password does not sign in: %d", code)
	}

	// Guessing the current password from a stolen session is throttled:
	// MaxSignInFailures wrong ones (the one above counts), then 429 even
	// for the right one.
	for i := range console.MaxSignInFailures - 1 {
		if code, _, _ := d.post("/console/account/password", url.Values{"current": {"guess " + strings.Repeat("x", i)}, "password": {"a guessed password 1"},
			"password2": {"a guessed password 1"}}); code != http.StatusUnauthorized {
			t.Fatalf("wrong current password %d: %d, want 401", i+1, code)
		}
	}
	if code, _, body := d.post("/console/account/password", url.Values{"current": {newPassword}, "password": {"another new password"},
		"password2": {"another new password"}}); code != http.StatusTooManyRequests || !strings.Contains(body, "Too many wrong passwords") {
		t.Errorf("after %d wrong passwords: %d, want 429", console.MaxSignInFailures, code)
	}
}
