package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/store"
)

var (
	secretText    = regexp.MustCompile(`id="totp-secret-text">([A-Z2-7 ]+)<`)
	recoveryCodes = regexp.MustCompile(`<li><code>([a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4})</code></li>`)
	sessionIDs    = regexp.MustCompile(`(this session )?<form method="post" action="/console/account/sessions/([0-9a-f]{64})/revoke">`)
)

// code is the TOTP code of secret, steps time steps from now.
func code(t *testing.T, secret string, steps int64) string {
	t.Helper()
	c, err := auth.TOTPCode(secret, auth.TOTPStep(time.Now())+steps)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// audited answers the organization's Audit Trail entries of an action.
func audited(t *testing.T, e *apitest.Env, orgID, action string) []store.AuditEntry {
	t.Helper()
	entries, err := e.Store.ListAudit(context.Background(), orgID, store.AuditFilter{Action: action, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// passwordOnly signs in with the password and answers where the console
// sends the browser next.
func (b *browser) passwordOnly(email string) string {
	b.t.Helper()
	b.get("/console/login")
	code, loc, body := b.post("/console/login", url.Values{"email": {email}, "password": {password}})
	if code != http.StatusSeeOther {
		b.t.Fatalf("password sign-in of %s: %d\n%.500s", email, code, body)
	}
	return loc
}

// enrollTOTP sets up an authenticator app on the Account page and answers
// its secret and the recovery codes.
func enrollTOTP(t *testing.T, b *browser) (string, []string) {
	t.Helper()
	b.get("/console/account")
	code, _, body := b.post("/console/account/totp", url.Values{})
	m := secretText.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil || !strings.Contains(body, `href="otpauth://totp/`) {
		t.Fatalf("start TOTP: %d\n%.2000s", code, body)
	}
	secret := strings.ReplaceAll(m[1], " ", "")
	if code, _, _ := b.post("/console/account/totp/confirm", url.Values{"code": {"000000"}}); code != http.StatusUnprocessableEntity {
		t.Errorf("a wrong confirmation code answered %d", code)
	}
	code, _, body = b.post("/console/account/totp/confirm", url.Values{"code": {codeNow(t, secret)}})
	var codes []string
	for _, m := range recoveryCodes.FindAllStringSubmatch(body, -1) {
		codes = append(codes, m[1])
	}
	if code != http.StatusOK || len(codes) != auth.RecoveryCodes {
		t.Fatalf("confirm TOTP: %d, %d recovery codes\n%.2000s", code, len(codes), body)
	}
	return secret, codes
}

func codeNow(t *testing.T, secret string) string { return code(t, secret, 0) }

// TestSecondFactorSignIn: a user with TOTP signs in with a code (within a
// step of skew, never twice the same) or a single-use recovery code; until
// then no page opens; each sign-in, failure and sign-out is in the Audit
// Trail with the client's address.
func TestSecondFactorSignIn(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a := newBrowser(t, e.URL)
	a.from = "198.51.100.10"
	a.signIn("alice@example.com")
	secret, recovery := enrollTOTP(t, a)
	if en := audited(t, e, e.Org.ID, "user.mfa_enable"); len(en) != 1 || en[0].Address != "198.51.100.10" {
		t.Errorf("mfa_enable audit: %+v", en)
	}

	b := newBrowser(t, e.URL)
	b.from = "203.0.113.5"
	if loc := b.passwordOnly("alice@example.com"); !strings.HasPrefix(loc, "/console/signin/code") {
		t.Fatalf("after the password: %s, want the second-factor page", loc)
	}
	if code, _ := b.get("/console/users"); code != http.StatusSeeOther {
		t.Errorf("a page before the second factor: %d, want a redirect", code)
	}
	b.get("/console/signin/code")
	if code, _, _ := b.post("/console/users", url.Values{"email": {"x@example.com"}}); code != http.StatusUnauthorized {
		t.Errorf("a write before the second factor: %d, want 401", code)
	}
	// A code two steps old is refused, one step ahead (a fast phone) is taken.
	if code, _, _ := b.post("/console/signin/code", url.Values{"code": {code(t, secret, -2)}}); code != http.StatusUnauthorized {
		t.Errorf("a code a minute old answered %d, want 401", code)
	}
	ahead := code(t, secret, 1)
	if code, loc, body := b.post("/console/signin/code", url.Values{"code": {ahead}, "next": {"/console/users"}}); code != http.StatusSeeOther || loc != "/console/users" {
		t.Fatalf("a code one step ahead: %d %s\n%.500s", code, loc, body)
	}
	if code, _ := b.get("/console/users"); code != http.StatusOK {
		t.Errorf("signed in with the second factor, a page answered %d", code)
	}
	b.post("/console/logout", url.Values{})

	// The same code does not sign in again, nor an older one.
	c := newBrowser(t, e.URL)
	c.from = "203.0.113.6"
	c.passwordOnly("alice@example.com")
	c.get("/console/signin/code")
	for _, replay := range []string{ahead, codeNow(t, secret)} {
		if code, _, _ := c.post("/console/signin/code", url.Values{"code": {replay}}); code != http.StatusUnauthorized {
			t.Errorf("a used (or older) code answered %d, want 401", code)
		}
	}
	// A recovery code signs in once, typed any way.
	typed := strings.ToUpper(strings.ReplaceAll(recovery[3], "-", " "))
	if code, _, body := c.post("/console/signin/code", url.Values{"code": {typed}}); code != http.StatusSeeOther {
		t.Fatalf("a recovery code: %d\n%.500s", code, body)
	}
	d := newBrowser(t, e.URL)
	d.passwordOnly("alice@example.com")
	d.get("/console/signin/code")
	if code, _, _ := d.post("/console/signin/code", url.Values{"code": {recovery[3]}}); code != http.StatusUnauthorized {
		t.Errorf("a used recovery code answered %d, want 401", code)
	}
	_, body := a.get("/console/account")
	if !strings.Contains(body, "9 of 10 recovery codes unused") {
		t.Error("the account page does not count the used recovery code")
	}

	ins := audited(t, e, e.Org.ID, "user.sign_in")
	methods := map[string]string{}
	for _, en := range ins {
		methods[en.Address] = en.Summary["method"].(string)
	}
	if methods["203.0.113.5"] != "password+totp" || methods["203.0.113.6"] != "password+recovery_code" || methods["198.51.100.10"] != "password" {
		t.Errorf("sign-in audit: %v", methods)
	}
	failed := audited(t, e, e.Org.ID, "user.sign_in_failed")
	if len(failed) != 4 || failed[0].Summary["reason"] != "second factor" {
		t.Errorf("failed second factors audited: %+v", failed)
	}
	if out := audited(t, e, e.Org.ID, "user.sign_out"); len(out) != 1 || out[0].Address != "203.0.113.5" || out[0].Actor != "user:alice@example.com" {
		t.Errorf("sign-out audit: %+v", out)
	}
	if used := audited(t, e, e.Org.ID, "user.recovery_code_use"); len(used) != 1 || count(used[0].Summary["recoveryCodesLeft"]) != 9 {
		t.Errorf("recovery code audit: %+v", used)
	}
	// The Audit Trail page shows the address.
	_, body = a.get("/console/audit?action=user.sign_in")
	if !strings.Contains(body, "203.0.113.5") {
		t.Error("the Audit Trail page does not show the client address")
	}

	// Turning the factor off takes a current code.
	a.get("/console/account")
	if code, _, _ := a.post("/console/account/totp/remove", url.Values{"code": {"123"}}); code != http.StatusSeeOther || len(audited(t, e, e.Org.ID, "user.mfa_disable")) != 0 {
		t.Error("the factor was removed without a code")
	}
	if code, _, _ := a.post("/console/account/totp/remove", url.Values{"code": {recovery[0]}}); code != http.StatusSeeOther || len(audited(t, e, e.Org.ID, "user.mfa_disable")) != 1 {
		t.Errorf("removing the factor with a recovery code: %d", code)
	}
	if loc := newBrowser(t, e.URL).passwordOnly("alice@example.com"); loc != "/console/" {
		t.Errorf("without a factor the password signs in: %s", loc)
	}
}

func count(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// TestSecondFactorFailuresThrottled: wrong codes lock the user's second
// factor for the window, from any address.
func TestSecondFactorFailuresThrottled(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	secret, _ := enrollTOTP(t, a)
	b := newBrowser(t, e.URL)
	b.passwordOnly("alice@example.com")
	b.get("/console/signin/code")
	for i := 0; i < 10; i++ {
		b.from = "203.0.113." + string(rune('1'+i%9))
		if code, _, _ := b.post("/console/signin/code", url.Values{"code": {"000000"}}); code != http.StatusUnauthorized {
			t.Fatalf("wrong code %d: %d", i+1, code)
		}
	}
	if code, _, _ := b.post("/console/signin/code", url.Values{"code": {codeNow(t, secret)}}); code != http.StatusTooManyRequests {
		t.Errorf("the right code after 10 wrong ones: %d, want 429", code)
	}
}

// TestRequireSecondFactor: when the organization requires a second
// factor, a password user without one sets it up before any page; only
// administrators change the setting.
func TestRequireSecondFactor(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	if code, _, _ := r.post("/console/settings/second-factor", url.Values{"require": {"on"}}); code != http.StatusForbidden {
		t.Errorf("a Read-only user set the requirement: %d", code)
	}
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	a.get("/console/users")
	if code, _, _ := a.post("/console/settings/second-factor", url.Values{"require": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("require: %d", code)
	}
	if en := audited(t, e, e.Org.ID, "org.require_mfa"); len(en) != 1 || en[0].Summary["requireSecondFactor"] != true {
		t.Errorf("audit: %+v", en)
	}

	n := newBrowser(t, e.URL)
	if loc := n.passwordOnly("reader@example.com"); !strings.HasPrefix(loc, "/console/signin/enroll") {
		t.Fatalf("after the password: %s, want the set-up page", loc)
	}
	if code, _ := n.get("/console/endpoints"); code != http.StatusSeeOther {
		t.Errorf("a page before setting up: %d", code)
	}
	_, body := n.get("/console/signin/enroll")
	m := secretText.FindStringSubmatch(body)
	if m == nil || !strings.Contains(body, "otpauth://totp/") {
		t.Fatalf("the set-up page shows no secret\n%.2000s", body)
	}
	secret := strings.ReplaceAll(m[1], " ", "")
	if code, _, _ := n.post("/console/signin/enroll", url.Values{"code": {code(t, secret, 3)}}); code != http.StatusUnprocessableEntity {
		t.Errorf("a wrong code: %d", code)
	}
	code, _, body := n.post("/console/signin/enroll", url.Values{"code": {codeNow(t, secret)}})
	if code != http.StatusOK || len(recoveryCodes.FindAllString(body, -1)) != auth.RecoveryCodes {
		t.Fatalf("set up: %d\n%.1000s", code, body)
	}
	if code, _ := n.get("/console/endpoints"); code != http.StatusOK {
		t.Errorf("after setting up, a page answered %d", code)
	}
	// The user cannot turn the required factor off.
	n.get("/console/account")
	if code, _, _ := n.post("/console/account/totp/remove", url.Values{"code": {codeNow(t, secret)}}); code != http.StatusSeeOther ||
		len(audited(t, e, e.Org.ID, "user.mfa_disable")) != 0 {
		t.Error("a required second factor was turned off")
	}
	// Next time: the password, then the code.
	if loc := newBrowser(t, e.URL).passwordOnly("reader@example.com"); !strings.HasPrefix(loc, "/console/signin/code") {
		t.Errorf("second sign-in: %s", loc)
	}
}

// TestOwnSessions: a user lists its sessions, signs out one of them,
// everywhere else or everywhere, and never another user's.
func TestOwnSessions(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleReadOnly)
	addUser(t, e, e.Org, "bob@example.com", store.RoleAdministrator)
	browsers := make([]*browser, 3)
	for i := range browsers {
		browsers[i] = newBrowser(t, e.URL)
		browsers[i].signIn("alice@example.com")
	}
	bob := newBrowser(t, e.URL)
	bob.signIn("bob@example.com")
	ids := func(b *browser) (current string, others []string) {
		_, body := b.get("/console/account")
		for _, m := range sessionIDs.FindAllStringSubmatch(body, -1) {
			if m[1] != "" {
				current = m[2]
			} else {
				others = append(others, m[2])
			}
		}
		return current, others
	}
	cur0, others := ids(browsers[0])
	cur1, _ := ids(browsers[1])
	if cur0 == "" || len(others) != 2 {
		t.Fatalf("alice's sessions: %s %v", cur0, others)
	}
	bobID, _ := ids(bob)
	// Bob's session is not alice's to end.
	browsers[0].get("/console/account")
	browsers[0].post("/console/account/sessions/"+bobID+"/revoke", url.Values{})
	if code, _ := bob.get("/console/"); code != http.StatusOK {
		t.Error("alice ended bob's session")
	}
	// One session.
	browsers[0].get("/console/account")
	if code, _, _ := browsers[0].post("/console/account/sessions/"+cur1+"/revoke", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", code)
	}
	if code, _ := browsers[1].get("/console/"); code != http.StatusSeeOther {
		t.Error("a revoked session still opens pages")
	}
	// Everywhere else.
	browsers[0].get("/console/account")
	browsers[0].post("/console/account/sessions/revoke", url.Values{"scope": {"others"}})
	if code, _ := browsers[2].get("/console/"); code != http.StatusSeeOther {
		t.Error("sign out everywhere else left a session")
	}
	if code, _ := browsers[0].get("/console/"); code != http.StatusOK {
		t.Error("sign out everywhere else ended this session")
	}
	// Everywhere.
	browsers[1].signIn("alice@example.com")
	browsers[0].get("/console/account")
	if code, loc, _ := browsers[0].post("/console/account/sessions/revoke", url.Values{"scope": {"all"}}); code != http.StatusSeeOther || loc != "/console/login" {
		t.Errorf("sign out everywhere: %d %s", code, loc)
	}
	for i, b := range browsers[:2] {
		if code, _ := b.get("/console/"); code != http.StatusSeeOther {
			t.Errorf("browser %d still signed in after sign out everywhere", i)
		}
	}
	if code, _ := bob.get("/console/"); code != http.StatusOK {
		t.Error("alice signing out everywhere signed bob out")
	}
	if len(audited(t, e, e.Org.ID, "user.session_revoke")) != 1 || len(audited(t, e, e.Org.ID, "user.sign_out_others")) != 1 ||
		len(audited(t, e, e.Org.ID, "user.sign_out_everywhere")) != 1 {
		t.Error("session revocations are not all audited")
	}
}

// TestManagePeople: an administrator changes a user's role, disables and
// enables it, resets its password (one-time: the user chooses a new one)
// and its second factor, each audited with the address; a Read-only user
// reaches none of it, and an administrator cannot do it to itself.
func TestManagePeople(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "bob@example.com", store.RoleReadOnly)
	addUser(t, e, e.Org, "carol@example.com", store.RoleReadOnly)
	ctx := context.Background()
	users, _ := e.Store.ListUsers(ctx, e.Org.ID)
	id := map[string]string{}
	for _, u := range users {
		id[u.Email] = u.ID
	}
	roles, _ := e.Store.ListRoles(ctx, e.Org.ID)
	roleID := map[string]string{}
	for _, r := range roles {
		roleID[r.Name] = r.ID
	}

	// Read-only bob reaches none of it.
	bob := newBrowser(t, e.URL)
	bob.signIn("bob@example.com")
	for _, op := range []string{"role", "password", "reset-mfa", "disable", "enable"} {
		if code, _, _ := bob.post("/console/users/"+id["carol@example.com"]+"/"+op, url.Values{"role": {roleID[store.RoleAdministrator]}, "password": {"a new password 123"}}); code != http.StatusForbidden {
			t.Errorf("Read-only POST %s: %d, want 403", op, code)
		}
	}
	if code, _ := bob.get("/console/users"); code != http.StatusForbidden {
		t.Errorf("Read-only GET users: %d", code)
	}

	carol := newBrowser(t, e.URL)
	carol.signIn("carol@example.com")
	enrollTOTP(t, carol)

	a := newBrowser(t, e.URL)
	a.from = "192.0.2.44"
	a.signIn("alice@example.com")
	_, body := a.get("/console/users")
	if !strings.Contains(body, `action="/console/users/`+id["carol@example.com"]+`/role"`) || !strings.Contains(body, "Reset second factor") {
		t.Error("the users page lacks the role and reset forms")
	}
	// Not on oneself.
	if a.post("/console/users/"+id["alice@example.com"]+"/role", url.Values{"role": {roleID[store.RoleReadOnly]}}); len(audited(t, e, e.Org.ID, "user.role_change")) != 0 {
		t.Error("an administrator changed its own role")
	}
	// A role of another organization is refused.
	other := e.NewOrg("Globex")
	oroles, _ := e.Store.ListRoles(ctx, other.ID)
	a.post("/console/users/"+id["bob@example.com"]+"/role", url.Values{"role": {oroles[0].ID}})
	if len(audited(t, e, e.Org.ID, "user.role_change")) != 0 {
		t.Error("a role of another organization was given")
	}
	if code, _, _ := a.post("/console/users/"+id["bob@example.com"]+"/role", url.Values{"role": {roleID[store.RoleAdministrator]}}); code != http.StatusSeeOther {
		t.Fatalf("role change: %d", code)
	}
	if code, _ := bob.get("/console/users"); code != http.StatusOK {
		t.Errorf("bob, now an administrator, opens the users page: %d", code)
	}
	rc := audited(t, e, e.Org.ID, "user.role_change")
	if len(rc) != 1 || rc[0].Summary["from"] != store.RoleReadOnly || rc[0].Summary["to"] != store.RoleAdministrator || rc[0].Address != "192.0.2.44" {
		t.Errorf("role change audit: %+v", rc)
	}

	// Second factor reset.
	if code, _, _ := a.post("/console/users/"+id["carol@example.com"]+"/reset-mfa", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("reset-mfa: %d", code)
	}
	if loc := newBrowser(t, e.URL).passwordOnly("carol@example.com"); loc != "/console/" {
		t.Errorf("after the reset carol signs in with her password: %s", loc)
	}
	// One-time password: carol's sessions end, she must choose another.
	if code, _, _ := a.post("/console/users/"+id["carol@example.com"]+"/password", url.Values{"password": {"short"}}); code != http.StatusSeeOther ||
		len(audited(t, e, e.Org.ID, "user.password_reset")) != 0 {
		t.Error("a short password was set")
	}
	if code, _, _ := a.post("/console/users/"+id["carol@example.com"]+"/password", url.Values{"password": {"one-time password 1"}, "must_change": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("password reset: %d", code)
	}
	if code, _ := carol.get("/console/"); code != http.StatusSeeOther {
		t.Error("carol's session outlived the password reset")
	}
	c2 := newBrowser(t, e.URL)
	c2.get("/console/login")
	if code, loc, _ := c2.post("/console/login", url.Values{"email": {"carol@example.com"}, "password": {"one-time password 1"}}); code != http.StatusSeeOther ||
		!strings.HasPrefix(loc, "/console/signin/password") {
		t.Fatalf("one-time password sign-in: %d %s", code, loc)
	}
	c2.get("/console/signin/password")
	if code, _, _ := c2.post("/console/signin/password", url.Values{"password": {"one-time password 1"}, "password2": {"one-time password 1"}}); code != http.StatusUnprocessableEntity {
		t.Errorf("keeping the one-time password: %d", code)
	}
	if code, loc, _ := c2.post("/console/signin/password", url.Values{"password": {"carol's own password"}, "password2": {"carol's own password"}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("choosing a password: %d %s", code, loc)
	}
	if code, _ := c2.get("/console/endpoints"); code != http.StatusOK {
		t.Errorf("after choosing a password: %d", code)
	}
	c3 := newBrowser(t, e.URL)
	c3.get("/console/login")
	if code, loc, _ := c3.post("/console/login", url.Values{"email": {"carol@example.com"}, "password": {"carol's own password"}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Errorf("her own password: %d %s", code, loc)
	}
	pr := audited(t, e, e.Org.ID, "user.password_reset")
	if len(pr) != 1 || pr[0].Summary["mustChange"] != true || len(audited(t, e, e.Org.ID, "user.password_change")) != 1 ||
		len(audited(t, e, e.Org.ID, "user.mfa_reset")) != 1 {
		t.Errorf("reset audit: %+v", pr)
	}

	// Disable and enable.
	a.post("/console/users/"+id["carol@example.com"]+"/disable", url.Values{})
	if code, _ := c3.get("/console/"); code != http.StatusSeeOther {
		t.Error("a disabled user's session still opens pages")
	}
	c4 := newBrowser(t, e.URL)
	c4.get("/console/login")
	if code, _, _ := c4.post("/console/login", url.Values{"email": {"carol@example.com"}, "password": {"carol's own password"}}); code != http.StatusUnauthorized {
		t.Errorf("a disabled user signs in: %d", code)
	}
	if f := audited(t, e, e.Org.ID, "user.sign_in_failed"); len(f) != 1 || f[0].Summary["disabled"] != true {
		t.Errorf("failed sign-in of a disabled user: %+v", f)
	}
	a.post("/console/users/"+id["carol@example.com"]+"/enable", url.Values{})
	if code, loc, _ := c4.post("/console/login", url.Values{"email": {"carol@example.com"}, "password": {"carol's own password"}}); code != http.StatusSeeOther || loc != "/console/" {
		t.Errorf("an enabled user signs in again: %d %s", code, loc)
	}
	if d := audited(t, e, e.Org.ID, "user.disable"); len(d) != 1 || d[0].Address != "192.0.2.44" {
		t.Errorf("disable audit: %+v", d)
	}
}
