package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

var invitationSignIn = regexp.MustCompile(`href="([^"]+)" id="invitation-sign-in"`)

// inviteByAPI invites email into the Env's organization through
// POST /api/v1/users and answers the status, the answer with what
// differs for every invitation (ids, address, token, times) blanked, and
// the link's token.
func inviteByAPI(t *testing.T, e *apitest.Env, email string) (int, map[string]any, string) {
	t.Helper()
	token, _, err := e.Admin.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a := e.Call(http.MethodPost, "/api/v1/users", token, map[string]any{"email": email, "role": store.RoleReadOnly, "invite": true, "expiresInHours": 24}, false)
	var out map[string]any
	a.Decode(t, &out)
	inv, _ := out["invitation"].(map[string]any)
	if inv == nil {
		t.Fatalf("invite %s: %d %s", email, a.Status, a.Body)
	}
	link, err := url.Parse(inv["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"id", "email", "createdAt", "invitationExpiresAt"} {
		if _, ok := out[k]; ok {
			out[k] = "…"
		}
	}
	for _, k := range []string{"token", "url", "expiresAt"} {
		inv[k] = "…"
	}
	return a.Status, out, link.Query().Get("token")
}

// TestInvitationAcceptedByAnExistingPerson: Acme invites an address a
// person of Globex has; the API answers exactly as for a fresh address.
// The person signs in to its own account from the invitation page (its
// password and authenticator code), comes back and accepts: it is one
// person with two memberships and one password, Acme's Audit Trail
// records it without naming Globex, the session works in Acme, and the
// link is dead. Another signed-in address, a stale form, an expired or a
// used invitation change nothing.
func TestInvitationAcceptedByAnExistingPerson(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	totpCode := code
	acme := e.Org
	globex := e.NewOrg("Globex")
	addUser(t, e, acme, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, globex, "ann@example.com", store.RoleAdministrator)
	addUser(t, e, globex, "bob@example.com", store.RoleAdministrator)

	// The inviting administrator cannot tell the two addresses apart.
	code1, known, token := inviteByAPI(t, e, "ann@example.com")
	code2, fresh, freshToken := inviteByAPI(t, e, "fresh@example.com")
	if code1 != code2 || !reflect.DeepEqual(known, fresh) {
		t.Errorf("the answers differ:\n%d %v\n%d %v", code1, known, code2, fresh)
	}
	link := "/console/invitation?token=" + url.QueryEscape(token)
	members := func() int {
		users, err := e.Store.ListUsers(ctx, acme.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(users)
	}
	annUser, err := admin.FindUser(ctx, e.Store, globex.ID, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	unchanged := func(what string) {
		t.Helper()
		if mems, _ := e.Store.Memberships(ctx, annUser.ID); len(mems) != 1 {
			t.Errorf("%s: ann has %d memberships", what, len(mems))
		}
		if n := members(); n != 3 {
			t.Errorf("%s: Acme has %d members, want 3", what, n)
		}
		if len(audited(t, e, acme.ID, "user.invitation_accept")) != 0 {
			t.Errorf("%s: an acceptance was recorded", what)
		}
	}

	// Bob, signed in, is told the link is for another address.
	b := newBrowser(t, e.URL)
	b.signIn("bob@example.com")
	code, body := b.get(link)
	if code != http.StatusOK || !strings.Contains(body, `id="invitation-other"`) || strings.Contains(body, `id="invitation-join-form"`) {
		t.Errorf("bob's invitation page: %d\n%.2000s", code, body)
	}
	b.get("/console/")
	if code, _, body := b.post("/console/invitation/accept", url.Values{"token": {token}}); code != http.StatusForbidden || !strings.Contains(body, "another e-mail address") {
		t.Errorf("bob accepts ann's invitation: %d\n%.1000s", code, body)
	}
	unchanged("another address")

	// Ann has an authenticator app.
	a := newBrowser(t, e.URL)
	a.signIn("ann@example.com")
	secret, _ := enrollTOTP(t, a)
	a = newBrowser(t, e.URL)

	// Not signed in, the page offers both ways.
	code, body = a.get(link)
	m := invitationSignIn.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil || !strings.Contains(body, `id="invitation-form"`) {
		t.Fatalf("the invitation page: %d\n%.2000s", code, body)
	}
	signIn, err := url.Parse(html.UnescapeString(m[1]))
	if err != nil || signIn.Path != "/console/login" || signIn.Query().Get("next") != link {
		t.Fatalf("the sign-in link %q", m[1])
	}
	a.get(signIn.RequestURI())
	code, loc, _ := a.post("/console/login", url.Values{"email": {"ann@example.com"}, "password": {password}, "next": {link}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/signin/code") {
		t.Fatalf("ann's password: %d %s", code, loc)
	}
	_, body = a.get(loc)
	next := regexp.MustCompile(`name="next" value="([^"]*)"`).FindStringSubmatch(body)
	if next == nil || html.UnescapeString(next[1]) != link {
		t.Fatalf("the code page lost the invitation: %v", next)
	}
	if code, loc, _ := a.post("/console/signin/code", url.Values{"code": {totpCode(t, secret, 1)}, "next": {html.UnescapeString(next[1])}}); code != http.StatusSeeOther || loc != link {
		t.Fatalf("ann's code: %d %s, want back to the invitation", code, loc)
	}
	code, body = a.get(link)
	if code != http.StatusOK || !strings.Contains(body, `id="invitation-join-form"`) || strings.Contains(body, `id="invitation-form"`) {
		t.Fatalf("the invitation page signed in: %d\n%.2000s", code, body)
	}

	// A stale form changes nothing.
	if code, _, _ := a.post("/console/invitation/accept", url.Values{"token": {token}, "csrf": {"stale"}}); code != http.StatusForbidden {
		t.Errorf("a stale form: %d", code)
	}
	unchanged("a stale form")
	// An expired invitation of another organization opens nothing.
	initech := e.NewOrg("Initech")
	role, err := e.Store.FindRole(ctx, initech.ID, store.RoleReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	_, old, err := admin.InvitePerson(ctx, e.Store, admin.By{Actor: "test"}, initech.ID, "ann@example.com", role, -time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := a.post("/console/invitation/accept", url.Values{"token": {old}}); code != http.StatusNotFound || !strings.Contains(body, "does not work") {
		t.Errorf("an expired invitation: %d", code)
	}
	unchanged("an expired invitation")

	a.get(link)
	code, loc, body = a.post("/console/invitation/accept", url.Values{"token": {token}})
	if code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("accept: %d %s\n%.1000s", code, loc, body)
	}
	if _, body := a.get("/console/"); !strings.Contains(body, "selected>Acme (Read-only)</option>") || !strings.Contains(body, "The invitation is accepted") {
		t.Errorf("after accepting, the session is not in Acme:\n%.3000s", body)
	}
	mems, _ := e.Store.Memberships(ctx, annUser.ID)
	if len(mems) != 2 || mems[0].OrgID != acme.ID || mems[0].RoleName != store.RoleReadOnly {
		t.Errorf("ann's memberships: %+v", mems)
	}
	if people, _ := e.Store.UsersByEmail(ctx, "ann@example.com"); len(people) != 2 { // Initech's pending one apart
		t.Errorf("accounts of ann@example.com: %d, want hers and Initech's invitation", len(people))
	}
	if n := members(); n != 3 {
		t.Errorf("Acme has %d members, want 3 (alice, ann, fresh)", n)
	}
	en := audited(t, e, acme.ID, "user.invitation_accept")
	if len(en) != 1 || en[0].Actor != "user:ann@example.com" || en[0].TargetID != annUser.ID || en[0].Summary["email"] != "ann@example.com" {
		t.Errorf("the acceptance entry: %+v", en)
	}
	all, _ := e.Store.ListAudit(ctx, acme.ID, store.AuditFilter{Limit: 1000})
	raw, _ := json.Marshal(all)
	if strings.Contains(string(raw), globex.ID) || strings.Contains(string(raw), "Globex") {
		t.Error("Acme's Audit Trail names Globex")
	}

	// The link is dead, for ann and for anyone else.
	if code, body := a.get(link); code != http.StatusNotFound || !strings.Contains(body, "does not work") {
		t.Errorf("the used link: %d", code)
	}
	a.get("/console/")
	if code, _, _ := a.post("/console/invitation/accept", url.Values{"token": {token}}); code != http.StatusNotFound {
		t.Errorf("accepting again: %d", code)
	}
	x := newBrowser(t, e.URL)
	_, login := x.get("/console/login")
	if code, _, _ := x.post("/console/invitation", url.Values{"csrf": {x.formCSRF(login)}, "token": {token},
		"password": {"an attacker's password"}, "password2": {"an attacker's password"}}); code != http.StatusNotFound {
		t.Errorf("the used link's password form: %d", code)
	}

	// The fresh address still chooses a password.
	f := newBrowser(t, e.URL)
	_, body = f.get("/console/invitation?token=" + url.QueryEscape(freshToken))
	if code, loc, _ := f.post("/console/invitation", url.Values{"csrf": {f.formCSRF(body)}, "token": {freshToken},
		"password": {"fresh's own password"}, "password2": {"fresh's own password"}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Errorf("the fresh address's password: %d %s", code, loc)
	}
}

// TestInvitationAcceptedWithoutARequiredSecondFactor: a person without a
// second factor accepts the invitation of an organization that requires
// one: it becomes a member, but its session stays where it is and the
// Account page says to set one up first.
func TestInvitationAcceptedWithoutARequiredSecondFactor(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	globex := e.NewOrg("Globex")
	addUser(t, e, globex, "ann@example.com", store.RoleAdministrator)
	if err := e.Store.SetOrgRequireMFA(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "org.require_mfa", TargetType: "org"}, e.Org.ID, true); err != nil {
		t.Fatal(err)
	}
	_, _, token := inviteByAPI(t, e, "ann@example.com")
	a := newBrowser(t, e.URL)
	a.signIn("ann@example.com")
	a.get("/console/invitation?token=" + url.QueryEscape(token))
	code, loc, _ := a.post("/console/invitation/accept", url.Values{"token": {token}})
	if code != http.StatusSeeOther || loc != "/console/account" {
		t.Fatalf("accept: %d %s", code, loc)
	}
	_, body := a.get("/console/account")
	if !strings.Contains(body, "The invitation is accepted. Acme requires a second factor") || !strings.Contains(body, "selected>Globex (Administrator)</option>") {
		t.Errorf("the account page after accepting:\n%.3000s", body)
	}
	annUser, _ := admin.FindUser(ctx, e.Store, globex.ID, "ann@example.com")
	if mems, _ := e.Store.Memberships(ctx, annUser.ID); len(mems) != 2 {
		t.Errorf("ann's memberships: %+v", mems)
	}
}
