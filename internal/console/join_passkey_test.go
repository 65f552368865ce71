package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/store"
)

// The password of ann's account in Acme, which joins her other accounts
// (theirs is password).
const acmePassword = "Acme's own password of ann"

// signInAs signs in with a password of the test's choosing.
func (b *browser) signInAs(email, pw string) {
	b.t.Helper()
	b.get("/console/login")
	if code, loc, body := b.post("/console/login", url.Values{"email": {email}, "password": {pw}}); code != http.StatusSeeOther || loc != "/console/" {
		b.t.Fatalf("sign-in of %s: %d %s\n%.500s", email, code, loc, body)
	}
	b.get("/console/account")
}

// addPasskey registers key as a passkey of the browser's user.
func (b *browser) addPasskey(key *softKey, name string) {
	b.t.Helper()
	o := b.ceremony("/console/account/passkeys/options", `{"name": "`+name+`"}`)
	if code, body := b.postJSON("/console/account/passkeys", "application/json", key.register(o, b.base)); code != http.StatusOK {
		b.t.Fatalf("register %s: %d\n%.500s", name, code, body)
	}
	b.get("/console/account")
}

// joinPassword posts the join form with the other account's password (and
// code), and answers the status and page.
func (b *browser) joinPassword(pw, code string) (int, string) {
	b.t.Helper()
	b.get("/console/account")
	status, _, body := b.post("/console/account/join", url.Values{"password": {pw}, "code": {code}})
	return status, body
}

// allowed answers the credential ids request options allow.
func allowed(t *testing.T, b *browser) (options, []string) {
	t.Helper()
	code, out := b.postJSON("/console/account/join/passkey/options", "application/json", []byte(`{}`))
	var o options
	var list struct {
		PublicKey struct {
			AllowCredentials []struct {
				ID string `json:"id"`
			} `json:"allowCredentials"`
			UserVerification string `json:"userVerification"`
		} `json:"publicKey"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(out), &o) != nil || json.Unmarshal([]byte(out), &list) != nil || o.PublicKey.Challenge == "" {
		t.Fatalf("join passkey options: %d\n%.1000s", code, out)
	}
	if list.PublicKey.UserVerification != "preferred" {
		t.Errorf("the join asks user verification %q, want the sign-in's (preferred)", list.PublicKey.UserVerification)
	}
	var ids []string
	for _, c := range list.PublicKey.AllowCredentials {
		ids = append(ids, c.ID)
	}
	return o, ids
}

// TestJoinPasskeyOnlyAccount: ann's Globex account has a passkey as its
// only second factor; signed in to Acme, she joins it with its password
// and then an assertion of its passkey. Without the password step, with a
// passkey of another account, for another challenge or a second time, the
// assertion joins nothing; refused assertions count like wrong passwords.
func TestJoinPasskeyOnlyAccount(t *testing.T) {
	e := apitest.New(t, behindProxy)
	ctx := context.Background()
	acme, globex := e.Org, e.NewOrg("Globex")
	base := localhost(e)

	addUser(t, e, globex, "ann@example.com", store.RoleReadOnly)
	g := newBrowser(t, base)
	g.from = "198.51.100.7"
	g.signIn("ann@example.com")
	globexKey := newSoftKey(t)
	g.addPasskey(globexKey, "Globex key")
	if _, err := admin.CreateUser(ctx, e.Store, "test", acme.ID, "ann@example.com", store.RoleAdministrator, acmePassword); err != nil {
		t.Fatal(err)
	}
	accounts := func() map[string]store.ConsoleUser {
		t.Helper()
		people, err := e.Store.UsersByEmail(ctx, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]store.ConsoleUser{}
		for _, u := range people {
			out[u.OrgID] = u
		}
		return out
	}
	annGlobex, annAcme := accounts()[globex.ID], accounts()[acme.ID]
	if annGlobex.Passkeys != 1 || annGlobex.TOTP || annAcme.ID == "" {
		t.Fatalf("ann's accounts: %+v", accounts())
	}
	// At an IP address, where browsers refuse passkeys: the password step
	// says so.
	ip := newBrowser(t, e.URL)
	ip.signInAs("ann@example.com", acmePassword)
	if code, body := ip.joinPassword(password, ""); code != http.StatusConflict || !strings.Contains(body, "refuse passkeys at an IP address") ||
		strings.Contains(body, `id="join-passkey"`) {
		t.Errorf("the password step at an IP address: %d\n%.2000s", code, body)
	}

	a := newBrowser(t, base)
	a.from = "203.0.113.30"
	a.signInAs("ann@example.com", acmePassword)
	acmeKey := newSoftKey(t)
	a.addPasskey(acmeKey, "Acme key")
	unchanged := func(what string) {
		t.Helper()
		if got := accounts(); len(got) != 2 || got[globex.ID].ID != annGlobex.ID {
			t.Fatalf("%s: ann's accounts are %+v", what, got)
		}
		if mems, _ := e.Store.Memberships(ctx, annAcme.ID); len(mems) != 1 {
			t.Fatalf("%s: ann's Acme account belongs to %+v", what, mems)
		}
		if joins := audited(t, e, globex.ID, "user.join"); len(joins) != 0 {
			t.Fatalf("%s: joins audited: %+v", what, joins)
		}
	}
	count := uint32(0)
	answer := func(key *softKey, o options, userID string) []byte {
		count++
		return key.assert(o, base, count, userID)
	}

	// Without the password step: no options, and no assertion is taken.
	forged := options{}
	forged.PublicKey.Challenge, forged.PublicKey.RPID = b64u.EncodeToString([]byte("a challenge nobody was given")), "localhost"
	for _, tc := range []struct {
		what, path string
		body       []byte
	}{
		{"options without the password", "/console/account/join/passkey/options", []byte(`{}`)},
		{"an assertion without the password", "/console/account/join/passkey", answer(globexKey, forged, annGlobex.ID)},
	} {
		if code, body := a.postJSON(tc.path, "application/json", tc.body); code != http.StatusBadRequest || !errorPage(body) {
			t.Errorf("%s: %d, want 400 on the error page\n%.500s", tc.what, code, body)
		}
	}
	unchanged("without the password step")

	// The password step asks for one of the Globex account's passkeys;
	// answering before asking for the options is no answer.
	code, body := a.joinPassword(password, "")
	if code != http.StatusOK || !strings.Contains(body, `id="join-passkey"`) || strings.Contains(body, `id="join-error"`) {
		t.Fatalf("the password step: %d\n%.3000s", code, body)
	}
	if code, _ := a.postJSON("/console/account/join/passkey", "application/json", answer(globexKey, forged, annGlobex.ID)); code != http.StatusBadRequest {
		t.Errorf("an assertion before the options: %d", code)
	}
	// (That ended the pending join, as every answer does.)
	if code, _ := a.postJSON("/console/account/join/passkey/options", "application/json", []byte(`{}`)); code != http.StatusBadRequest {
		t.Errorf("options after an answer: %d", code)
	}

	// Ann's Acme passkey is not the Globex account's: refused, audited in
	// Globex, nothing joined.
	a.joinPassword(password, "")
	o, ids := allowed(t, a)
	if len(ids) != 1 || ids[0] != b64u.EncodeToString(globexKey.id) {
		t.Errorf("the join allows %q, want the Globex account's passkey only", ids)
	}
	if code, body := a.postJSON("/console/account/join/passkey", "application/json", answer(acmeKey, o, annAcme.ID)); code != http.StatusUnauthorized || !errorPage(body) ||
		!strings.Contains(body, "did not prove the other account") {
		t.Errorf("a passkey of the Acme account: %d\n%.500s", code, body)
	}
	unchanged("a passkey of another account")
	// The challenge it answered is spent: the right passkey on it is too
	// late.
	if code, _ := a.postJSON("/console/account/join/passkey", "application/json", answer(globexKey, o, annGlobex.ID)); code != http.StatusBadRequest {
		t.Errorf("the right passkey on a spent challenge: %d", code)
	}
	unchanged("a spent challenge")
	if failed := audited(t, e, globex.ID, "user.sign_in_failed"); len(failed) != 1 || failed[0].Summary["join"] != true ||
		failed[0].Summary["detail"] != "unknown passkey" || failed[0].Address != "203.0.113.30" {
		t.Errorf("the refused join's audit: %+v", failed)
	}

	// An assertion made for an earlier challenge: refused.
	a.joinPassword(password, "")
	earlier, _ := allowed(t, a)
	stale := answer(globexKey, earlier, annGlobex.ID)
	allowed(t, a) // asked again: a new challenge
	if code, _ := a.postJSON("/console/account/join/passkey", "application/json", stale); code != http.StatusUnauthorized {
		t.Errorf("an assertion for an earlier challenge: %d", code)
	}
	unchanged("an assertion for an earlier challenge")

	// Refused assertions count like wrong passwords: from another address,
	// after MaxSignInFailures of them (with one wrong password), even the
	// right password is refused.
	a.from = "203.0.113.31"
	if code, _ := a.joinPassword("not the password", ""); code != http.StatusUnauthorized {
		t.Fatalf("a wrong password: %d", code)
	}
	for i := 1; i < console.MaxSignInFailures; i++ {
		if code, _ := a.joinPassword(password, ""); code != http.StatusOK {
			t.Fatalf("password step %d: %d", i, code)
		}
		o, _ := allowed(t, a)
		if code, _ := a.postJSON("/console/account/join/passkey", "application/json", answer(acmeKey, o, annAcme.ID)); code != http.StatusUnauthorized {
			t.Fatalf("wrong passkey %d: %d", i, code)
		}
	}
	if code, body := a.joinPassword(password, ""); code != http.StatusTooManyRequests || !strings.Contains(body, `id="join-error"`) {
		t.Errorf("the right password after %d wrong answers: %d", console.MaxSignInFailures, code)
	}
	unchanged("the limit")

	// From her own address: the password, then the passkey, join.
	a.from = "203.0.113.30"
	a.joinPassword(password, "")
	o, _ = allowed(t, a)
	good := answer(globexKey, o, annGlobex.ID)
	if code, body := a.postJSON("/console/account/join/passkey", "application/json", good); code != http.StatusOK || !strings.Contains(body, `"next":"/console/account"`) {
		t.Fatalf("the join with the passkey: %d\n%.500s", code, body)
	}
	if people, _ := e.Store.UsersByEmail(ctx, "ann@example.com"); len(people) != 1 || people[0].ID != annAcme.ID {
		t.Fatalf("ann's accounts after the join: %+v", people)
	}
	mems, _ := e.Store.Memberships(ctx, annAcme.ID)
	if len(mems) != 2 {
		t.Errorf("ann's memberships after the join: %+v", mems)
	}
	joins := audited(t, e, globex.ID, "user.join")
	if len(joins) != 1 || joins[0].Summary["joinedUserId"] != annGlobex.ID || joins[0].Summary["method"] != "password+passkey" || joins[0].TargetID != annAcme.ID {
		t.Errorf("the join's audit: %+v", joins)
	}
	if code, _ := g.get("/console/"); code != http.StatusSeeOther {
		t.Errorf("the Globex account's session after the join: %d", code)
	}
	if _, page := a.get("/console/account"); !strings.Contains(page, "The accounts are joined") {
		t.Errorf("no message of the join:\n%.2000s", page)
	}
	// The same assertion again: refused.
	if code, _ := a.postJSON("/console/account/join/passkey", "application/json", good); code != http.StatusBadRequest {
		t.Errorf("a replayed assertion: %d", code)
	}
	if joins := audited(t, e, globex.ID, "user.join"); len(joins) != 1 {
		t.Errorf("joins after the replay: %d", len(joins))
	}
}

// TestJoinTOTPAndPasskeyAccount: an account with an authenticator app and
// passkeys is proved by either: without a code, the password asks for a
// passkey; with a code (or a recovery code), the password and the code
// join at once.
func TestJoinTOTPAndPasskeyAccount(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	globex, initech := e.NewOrg("Globex"), e.NewOrg("Initech")
	base := localhost(e)
	keys := map[string]*softKey{}
	recovery := map[string][]string{}
	for _, org := range []store.Org{globex, initech} {
		addUser(t, e, org, "ann@example.com", store.RoleReadOnly)
		b := newBrowser(t, base)
		b.signIn("ann@example.com")
		keys[org.ID] = newSoftKey(t)
		b.addPasskey(keys[org.ID], org.Name+" key")
		_, recovery[org.ID] = enrollTOTP(t, b)
		// Each has its own password (the join takes the first account
		// the password matches).
		u, err := admin.FindUser(ctx, e.Store, org.ID, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		if err := admin.ResetPassword(ctx, e.Store, admin.By{Actor: "test"}, u, org.Name+"'s own password", false); err != nil {
			t.Fatal(err)
		}
	}
	annGlobex, err := admin.FindUser(ctx, e.Store, globex.ID, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateUser(ctx, e.Store, "test", e.Org.ID, "ann@example.com", store.RoleAdministrator, acmePassword); err != nil {
		t.Fatal(err)
	}
	a := newBrowser(t, base)
	a.signInAs("ann@example.com", acmePassword)

	if code, body := a.joinPassword("Globex's own password", ""); code != http.StatusOK || !strings.Contains(body, `id="join-passkey"`) {
		t.Fatalf("the password of an account with both, without a code: %d\n%.2000s", code, body)
	}
	o, _ := allowed(t, a)
	if code, body := a.postJSON("/console/account/join/passkey", "application/json", keys[globex.ID].assert(o, base, 1, annGlobex.ID)); code != http.StatusOK {
		t.Fatalf("the join of Globex with its passkey: %d\n%.500s", code, body)
	}
	if code, body := a.joinPassword("Initech's own password", "000000"); code != http.StatusUnauthorized || !strings.Contains(body, `id="join-error"`) {
		t.Errorf("a wrong code: %d", code)
	}
	if code, body := a.joinPassword("Initech's own password", recovery[initech.ID][0]); code != http.StatusSeeOther {
		t.Fatalf("the join of Initech with a recovery code: %d\n%.2000s", code, body)
	}
	if people, _ := e.Store.UsersByEmail(ctx, "ann@example.com"); len(people) != 1 {
		t.Fatalf("ann's accounts after both joins: %d", len(people))
	}
	methods := map[string]any{}
	for _, org := range []store.Org{globex, initech} {
		if joins := audited(t, e, org.ID, "user.join"); len(joins) == 1 {
			methods[org.Name] = joins[0].Summary["method"]
		}
	}
	if methods["Globex"] != "password+passkey" || methods["Initech"] != "password+recovery_code" {
		t.Errorf("the joins' methods: %v", methods)
	}
}
