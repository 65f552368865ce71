package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

var invitationURL = regexp.MustCompile(`<code id="invitation-url">([^<]+)</code>`)

// TestConsoleInviteUser: the Users page creates a user with a one-time
// password or invites one through POST /api/v1/users, showing the link
// once; the link lets the invitee choose a password and signs it in, and
// works only once; a Read-only user can do none of it.
func TestConsoleInviteUser(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	roles, _ := e.Store.ListRoles(t.Context(), e.Org.ID)
	roleID := map[string]string{}
	for _, r := range roles {
		roleID[r.Name] = r.ID
	}

	ro := newBrowser(t, e.URL)
	ro.signIn("reader@example.com")
	if code, _, _ := ro.post("/console/users", url.Values{"email": {"x@example.com"}, "role": {roleID[store.RoleAdministrator]}, "how": {"invite"}}); code != http.StatusForbidden {
		t.Errorf("Read-only invites: %d, want 403", code)
	}

	a := newBrowser(t, e.URL)
	a.from = "192.0.2.7"
	a.signIn("alice@example.com")
	_, body := a.get("/console/users")
	if !strings.Contains(body, `id="new-user-form"`) || !strings.Contains(body, `value="invite"`) {
		t.Fatal("the users page lacks the invitation form")
	}
	// A refusal of the API is shown, nothing made.
	code, _, _ := a.post("/console/users", url.Values{"email": {"not an address"}, "role": {roleID[store.RoleReadOnly]}, "how": {"invite"}})
	if _, body = a.get("/console/users"); code != http.StatusSeeOther || !strings.Contains(body, "email: must be an e-mail address") {
		t.Errorf("a bad address: %d\n%.300s", code, body)
	}
	// A one-time password.
	if code, _, _ := a.post("/console/users", url.Values{"email": {"erik@example.com"}, "role": {roleID[store.RoleReadOnly]}, "how": {"password"},
		"password": {"a one-time password 7"}}); code != http.StatusSeeOther {
		t.Fatalf("create with a password: %d", code)
	}
	eb := newBrowser(t, e.URL)
	eb.get("/console/login")
	if code, loc, _ := eb.post("/console/login", url.Values{"email": {"erik@example.com"}, "password": {"a one-time password 7"}}); code != http.StatusSeeOther ||
		!strings.HasPrefix(loc, "/console/signin/password") {
		t.Errorf("erik's first sign-in: %d %s, want the new-password step", code, loc)
	}
	// An invitation.
	code, _, body = a.post("/console/users", url.Values{"email": {"dana@example.com"}, "role": {roleID[store.RoleReadOnly]}, "how": {"invite"}, "expires_hours": {"24"}})
	m := invitationURL.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("invite: %d\n%.1500s", code, body)
	}
	link, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || link.Path != "/console/invitation" || link.Scheme+"://"+link.Host != e.URL {
		t.Fatalf("invitation link %q", m[1])
	}
	if _, body = a.get("/console/users"); strings.Contains(body, link.Query().Get("token")) || !strings.Contains(body, ">invited<") {
		t.Error("the users page shows the invitation's token again, or not the invited state")
	}
	if en := audited(t, e, e.Org.ID, "user.invite"); len(en) != 1 || en[0].Actor != "user:alice@example.com" || en[0].Address != "192.0.2.7" {
		t.Errorf("invite audit: %+v", en)
	}

	// The invitee opens the link, chooses a password and is signed in.
	d := newBrowser(t, e.URL)
	d.from = "203.0.113.9"
	code, body = d.get(link.RequestURI())
	if code != http.StatusOK || !strings.Contains(body, "dana@example.com") {
		t.Fatalf("the invitation page: %d\n%.500s", code, body)
	}
	form := func(pw, pw2 string) url.Values {
		return url.Values{"csrf": {d.formCSRF(body)}, "token": {link.Query().Get("token")}, "password": {pw}, "password2": {pw2}}
	}
	if code, _, _ := d.post("/console/invitation", form("dana's password 1", "dana's password 2")); code != http.StatusUnprocessableEntity {
		t.Errorf("differing passwords: %d", code)
	}
	if code, _, _ := d.post("/console/invitation", form("short", "short")); code != http.StatusUnprocessableEntity {
		t.Errorf("a short password: %d", code)
	}
	if code, loc, _ := d.post("/console/invitation", form("dana's own password", "dana's own password")); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("accepting: %d %s", code, loc)
	}
	if code, _ := d.get("/console/endpoints"); code != http.StatusOK {
		t.Errorf("after accepting, a page answered %d", code)
	}
	if en := audited(t, e, e.Org.ID, "user.invitation_accept"); len(en) != 1 || en[0].Address != "203.0.113.9" {
		t.Errorf("accept audit: %+v", en)
	}
	if en := audited(t, e, e.Org.ID, "user.sign_in"); len(en) == 0 || en[0].Actor != "user:dana@example.com" {
		t.Errorf("the sign-in after the invitation: %+v", en)
	}
	// The link works once.
	x := newBrowser(t, e.URL)
	if code, body = x.get(link.RequestURI()); code != http.StatusNotFound || !strings.Contains(body, "does not work") {
		t.Errorf("a used link: %d", code)
	}
	_, login := x.get("/console/login")
	if code, _, _ := x.post("/console/invitation", url.Values{"csrf": {x.formCSRF(login)}, "token": {link.Query().Get("token")},
		"password": {"an attacker's password"}, "password2": {"an attacker's password"}}); code != http.StatusNotFound {
		t.Errorf("a used link's form: %d", code)
	}
	// Dana's password signs in.
	db := newBrowser(t, e.URL)
	db.get("/console/login")
	if code, loc, _ := db.post("/console/login", url.Values{"email": {"dana@example.com"}, "password": {"dana's own password"}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Errorf("dana's password: %d %s", code, loc)
	}
}

var formCSRF = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// formCSRF answers the form token of a page without a session.
func (b *browser) formCSRF(body string) string {
	b.t.Helper()
	m := formCSRF.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no form token in\n%.500s", body)
	}
	return m[1]
}
