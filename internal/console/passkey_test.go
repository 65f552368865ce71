package console_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/store"
)

var b64u = base64.RawURLEncoding

// softKey is an authenticator in the test: an ES256 credential that
// answers a ceremony's options as a browser would hand its answer on, for
// any origin the test claims.
type softKey struct {
	t     *testing.T
	id    []byte
	key   *ecdsa.PrivateKey
	count uint32
}

func newSoftKey(t *testing.T) *softKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	id := make([]byte, 32)
	rand.Read(id)
	return &softKey{t: t, id: id, key: k}
}

// options is what the test reads of a ceremony's options.
type options struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RPID      string `json:"rpId"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	} `json:"publicKey"`
}

func clientData(kind, challenge, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false})
	return b
}

// register answers creation options with a "none" attestation.
func (k *softKey) register(o options, origin string) []byte {
	k.t.Helper()
	pub, err := k.key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		k.t.Fatal(err)
	}
	x, y := pub[1:33], pub[33:]
	cose, err := webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: x, -3: y})
	if err != nil {
		k.t.Fatal(err)
	}
	rp := sha256.Sum256([]byte(o.PublicKey.RP.ID))
	var auth bytes.Buffer
	auth.Write(rp[:])
	auth.WriteByte(0x45) // user present, user verified, attested credential data
	binary.Write(&auth, binary.BigEndian, k.count)
	auth.Write(make([]byte, 16)) // AAGUID
	binary.Write(&auth, binary.BigEndian, uint16(len(k.id)))
	auth.Write(k.id)
	auth.Write(cose)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": auth.Bytes()})
	if err != nil {
		k.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"id": b64u.EncodeToString(k.id), "rawId": b64u.EncodeToString(k.id), "type": "public-key",
		"clientExtensionResults": map[string]any{}, "response": map[string]any{
			"clientDataJSON":    b64u.EncodeToString(clientData("webauthn.create", o.PublicKey.Challenge, origin)),
			"attestationObject": b64u.EncodeToString(att), "transports": []string{"usb"}}})
	return b
}

// assert answers request options, with the signature counter count, as
// an authenticator that verified its user.
func (k *softKey) assert(o options, origin string, count uint32, userID string) []byte {
	return k.assertFlags(o, origin, count, userID, 0x05)
}

func (k *softKey) assertFlags(o options, origin string, count uint32, userID string, flags byte) []byte {
	k.t.Helper()
	rp := sha256.Sum256([]byte(o.PublicKey.RPID))
	var auth bytes.Buffer
	auth.Write(rp[:])
	auth.WriteByte(flags)
	binary.Write(&auth, binary.BigEndian, count)
	cd := clientData("webauthn.get", o.PublicKey.Challenge, origin)
	h := sha256.Sum256(cd)
	signed := sha256.Sum256(append(auth.Bytes(), h[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, k.key, signed[:])
	if err != nil {
		k.t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"id": b64u.EncodeToString(k.id), "rawId": b64u.EncodeToString(k.id), "type": "public-key",
		"clientExtensionResults": map[string]any{}, "response": map[string]any{
			"clientDataJSON": b64u.EncodeToString(cd), "authenticatorData": b64u.EncodeToString(auth.Bytes()),
			"signature": b64u.EncodeToString(sig), "userHandle": b64u.EncodeToString([]byte(userID))}})
	return b
}

// postJSON posts a JSON body as console.js does (the CSRF token in its
// header) and answers the status and body.
func (b *browser) postJSON(path, contentType string, body []byte) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-CSRF-Token", b.csrf)
	if b.from != "" {
		req.Header.Set("X-Forwarded-For", b.from)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func (b *browser) ceremony(path string, body string) options {
	b.t.Helper()
	code, out := b.postJSON(path, "application/json", []byte(body))
	var o options
	if code != http.StatusOK || json.Unmarshal([]byte(out), &o) != nil || o.PublicKey.Challenge == "" {
		b.t.Fatalf("options of %s: %d\n%.1000s", path, code, out)
	}
	return o
}

// errorPage tells whether an answer is the console's error page (never a
// bare text or a Go error).
func errorPage(body string) bool {
	return strings.Contains(body, `class="panel error" role="alert"`) || strings.Contains(body, `<p class="error" role="alert">`)
}

// TestPasskeyCeremonies: the console's passkey endpoints, with a software
// authenticator: bad input is a 4xx on the console's error page (never a
// 500), an answer for another origin is refused, a challenge answers once,
// a signature counter that does not move on is refused, each refusal is in
// the Audit Trail; a passkey satisfies an organization's required second
// factor.
func TestPasskeyCeremonies(t *testing.T) {
	e := apitest.New(t, behindProxy)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	base := localhost(e)
	a := newBrowser(t, base)
	a.from = "198.51.100.20"
	a.signIn("alice@example.com")
	a.get("/console/account")
	alice := findUser(t, e, "alice@example.com")

	for _, tc := range []struct {
		what, path, contentType, body string
		status                        int
	}{
		{"not JSON", "/console/account/passkeys/options", "application/json", `{"name": `, http.StatusBadRequest},
		{"a form", "/console/account/passkeys/options", "application/x-www-form-urlencoded", `name=Key`, http.StatusBadRequest},
		{"no name", "/console/account/passkeys/options", "application/json", `{"name": "  "}`, http.StatusBadRequest},
		{"a number for a name", "/console/account/passkeys/options", "application/json", `{"name": 5}`, http.StatusBadRequest},
		{"a long name", "/console/account/passkeys/options", "application/json", `{"name": "` + strings.Repeat("k", 61) + `"}`, http.StatusBadRequest},
		{"a control character", "/console/account/passkeys/options", "application/json", `{"name": "a\u0007b"}`, http.StatusBadRequest},
		{"an answer without a request", "/console/account/passkeys", "application/json", `{}`, http.StatusBadRequest},
		{"an answer that is not JSON", "/console/account/passkeys", "application/json", `]`, http.StatusBadRequest},
		{"a huge answer", "/console/account/passkeys", "application/json", `"` + strings.Repeat("a", 70<<10) + `"`, http.StatusRequestEntityTooLarge},
		{"a sign-in answer when signed in", "/console/signin/passkey", "application/json", `{}`, http.StatusSeeOther},
	} {
		code, body := a.postJSON(tc.path, tc.contentType, []byte(tc.body))
		if code != tc.status || code != http.StatusSeeOther && !errorPage(body) {
			t.Errorf("%s: %d, want %d on the error page\n%.600s", tc.what, code, tc.status, body)
		}
	}
	// Without the CSRF token: refused.
	saved := a.csrf
	a.csrf = "forged"
	if code, _ := a.postJSON("/console/account/passkeys/options", "application/json", []byte(`{"name": "Key"}`)); code != http.StatusForbidden {
		t.Errorf("options without the CSRF token: %d", code)
	}
	a.csrf = saved

	// An answer that is not a registration ends the request.
	a.ceremony("/console/account/passkeys/options", `{"name": "Key"}`)
	if code, body := a.postJSON("/console/account/passkeys", "application/json", []byte(`{"id": "x", "type": "public-key"}`)); code != http.StatusBadRequest || !errorPage(body) {
		t.Errorf("a malformed registration: %d\n%.500s", code, body)
	}
	key := newSoftKey(t)
	// Another origin (a phishing site relaying the ceremony) is refused.
	o := a.ceremony("/console/account/passkeys/options", `{"name": "YubiKey"}`)
	if code, body := a.postJSON("/console/account/passkeys", "application/json", key.register(o, "https://patchd.example.net")); code != http.StatusBadRequest ||
		!strings.Contains(body, "not accepted") {
		t.Errorf("a registration for another origin: %d\n%.500s", code, body)
	}
	o = a.ceremony("/console/account/passkeys/options", `{"name": "YubiKey"}`)
	if o.PublicKey.RP.ID != "localhost" || o.PublicKey.User.ID != b64u.EncodeToString([]byte(alice.ID)) {
		t.Errorf("the options name RP %q and user %q", o.PublicKey.RP.ID, o.PublicKey.User.ID)
	}
	reg := key.register(o, base)
	if code, body := a.postJSON("/console/account/passkeys", "application/json", reg); code != http.StatusOK || !strings.Contains(body, `"next":"/console/account"`) {
		t.Fatalf("a registration: %d\n%.500s", code, body)
	}
	// The same answer again: its challenge was used.
	if code, _ := a.postJSON("/console/account/passkeys", "application/json", reg); code != http.StatusBadRequest {
		t.Errorf("a replayed registration: %d", code)
	}
	keys, _ := e.Store.ListPasskeys(ctx, e.Org.ID, alice.ID)
	if len(keys) != 1 || keys[0].Name != "YubiKey" || keys[0].Transports[0] != "usb" {
		t.Fatalf("stored: %+v", keys)
	}
	// Registering the same authenticator twice is refused (the options
	// exclude it; a browser that ignores that gets a conflict).
	o = a.ceremony("/console/account/passkeys/options", `{"name": "Again"}`)
	if code, body := a.postJSON("/console/account/passkeys", "application/json", key.register(o, base)); code != http.StatusConflict || !errorPage(body) {
		t.Errorf("the same passkey again: %d\n%.300s", code, body)
	}

	// The organization requires a second factor: the passkey is one.
	if _, err := e.Store.OrgRequiresMFA(ctx, e.Org.ID); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := a.post("/console/settings/second-factor", url.Values{"require": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("require a second factor: %d", code)
	}

	b := newBrowser(t, base)
	b.from = "203.0.113.9"
	if loc := b.passwordOnly("alice@example.com"); !strings.HasPrefix(loc, "/console/signin/code") {
		t.Fatalf("after the password: %s, want the second-factor page", loc)
	}
	_, page := b.get("/console/signin/code")
	if !strings.Contains(page, `id="passkey-signin"`) || strings.Contains(page, `id="code"`) {
		t.Errorf("the second-factor page of a user with only a passkey:\n%.2000s", page)
	}
	if code, body := b.postJSON("/console/signin/passkey", "application/json", []byte(`{"id":`)); code != http.StatusBadRequest || !errorPage(body) {
		t.Errorf("a sign-in answer that is not JSON: %d", code)
	}
	o = b.ceremony("/console/signin/passkey/options", `{}`)
	if code, body := b.postJSON("/console/signin/passkey", "application/json", key.assert(o, "https://patchd.example.net", 1, alice.ID)); code != http.StatusUnauthorized || !errorPage(body) {
		t.Errorf("an assertion for another origin: %d\n%.300s", code, body)
	}
	o = b.ceremony("/console/signin/passkey/options", `{}`)
	if code, body := b.postJSON("/console/signin/passkey?next=/console/users", "application/json", key.assert(o, base, 1, alice.ID)); code != http.StatusOK ||
		!strings.Contains(body, `"next":"/console/users"`) {
		t.Fatalf("a passkey sign-in: %d\n%.500s", code, body)
	}
	if code, _ := b.get("/console/users"); code != http.StatusOK {
		t.Errorf("signed in with the passkey, a page answered %d", code)
	}
	// A counter that does not move on (a cloned key) is refused.
	c := newBrowser(t, base)
	c.from = "203.0.113.10"
	c.passwordOnly("alice@example.com")
	c.get("/console/signin/code")
	o = c.ceremony("/console/signin/passkey/options", `{}`)
	if code, _ := c.postJSON("/console/signin/passkey", "application/json", key.assert(o, base, 1, alice.ID)); code != http.StatusUnauthorized {
		t.Errorf("a repeated signature counter: %d", code)
	}
	// Nor is a finished ceremony answered again.
	if code, _ := c.postJSON("/console/signin/passkey", "application/json", key.assert(o, base, 2, alice.ID)); code != http.StatusBadRequest {
		t.Errorf("a second answer to one challenge: %d", code)
	}

	failed := audited(t, e, e.Org.ID, "user.sign_in_failed")
	details := map[string]string{}
	for _, f := range failed {
		if f.Summary["reason"] == "passkey" {
			details[f.Address], _ = f.Summary["detail"].(string)
		}
	}
	if details["203.0.113.9"] != "invalid assertion" || details["203.0.113.10"] != "signature counter did not increase" {
		t.Errorf("failed passkey sign-ins audited: %+v", failed)
	}
	if ins := audited(t, e, e.Org.ID, "user.sign_in"); len(ins) == 0 || ins[0].Address != "203.0.113.9" || ins[0].Summary["method"] != "password+passkey" {
		t.Errorf("passkey sign-in audit: %+v", ins[:min(1, len(ins))])
	}

	// Removing the last passkey when a second factor is required: refused;
	// with a wrong password: refused and audited.
	a.get("/console/account")
	a.post("/console/account/passkeys/"+keys[0].ID+"/remove", url.Values{"password": {password}})
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, alice.ID); len(l) != 1 {
		t.Error("the only required second factor was removed")
	}
	a.post("/console/settings/second-factor", url.Values{})
	a.get("/console/account")
	a.post("/console/account/passkeys/"+keys[0].ID+"/remove", url.Values{"password": {"not the password"}})
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, alice.ID); len(l) != 1 {
		t.Error("a passkey was removed with a wrong password")
	}
	if checks := audited(t, e, e.Org.ID, "user.mfa_check_failed"); len(checks) != 1 || checks[0].Summary["reason"] != "password" || checks[0].Address != "198.51.100.20" {
		t.Errorf("the wrong password's audit: %+v", checks)
	}
	a.get("/console/account")
	if code, _, _ := a.post("/console/account/passkeys/"+keys[0].ID+"/rename", url.Values{"name": {""}}); code != http.StatusSeeOther {
		t.Errorf("an empty new name: %d", code)
	}
	if k, _ := e.Store.GetPasskey(ctx, e.Org.ID, alice.ID, keys[0].ID); k.Name != "YubiKey" {
		t.Errorf("the name after an empty rename: %q", k.Name)
	}
}

// TestPasskeySecondFactorReset: an administrator's "reset second factor"
// (the REST API and the Users page) removes the user's passkeys with its
// authenticator app.
func TestPasskeySecondFactorReset(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "admin@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "bob@example.com", store.RoleReadOnly)
	addUser(t, e, e.Org, "carol@example.com", store.RoleReadOnly)
	give := func(u store.ConsoleUser, n int) {
		for i := range n {
			if _, err := e.Store.AddPasskey(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "user.passkey_add", TargetType: "user"},
				store.Passkey{OrgID: e.Org.ID, UserID: u.ID, CredentialID: []byte(u.ID + string(rune('a'+i))), PublicKey: []byte{1}, Name: "Key"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	bob, carol := findUser(t, e, "bob@example.com"), findUser(t, e, "carol@example.com")
	give(bob, 2)
	give(carol, 1)
	if !findUser(t, e, "bob@example.com").SecondFactor {
		t.Fatal("a user with passkeys has no second factor")
	}

	var out struct {
		SecondFactor bool `json:"secondFactor"`
	}
	if err := e.Admin.Do(ctx, http.MethodDelete, "/api/v1/users/"+bob.ID+"/second-factor", nil, nil, &out); err != nil || out.SecondFactor {
		t.Fatalf("reset through the API: %+v %v", out, err)
	}
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, bob.ID); len(l) != 0 {
		t.Errorf("bob's passkeys after the API's reset: %d", len(l))
	}
	if r := audited(t, e, e.Org.ID, "user.mfa_reset"); len(r) != 1 || count(r[0].Summary["passkeysRemoved"]) != 2 {
		t.Errorf("the API reset's audit: %+v", r)
	}

	a := newBrowser(t, e.URL)
	a.signIn("admin@example.com")
	_, page := a.get("/console/users")
	if !strings.Contains(page, "/console/users/"+carol.ID+"/reset-mfa") {
		t.Fatal("the Users page offers no reset of a user with only a passkey")
	}
	if code, _, _ := a.post("/console/users/"+carol.ID+"/reset-mfa", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("reset in the console: %d", code)
	}
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, carol.ID); len(l) != 0 {
		t.Errorf("carol's passkeys after the console's reset: %d", len(l))
	}
	if loc := newBrowser(t, e.URL).passwordOnly("carol@example.com"); loc != "/console/" {
		t.Errorf("after the reset carol's password signs in to %s", loc)
	}
}

// TestPasskeyEnrollStage: a user whose organization requires a second
// factor, and who has none, may add a passkey at the sign-in step instead
// of an authenticator app, and is then signed in.
func TestPasskeyEnrollStage(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "admin@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "dan@example.com", store.RoleReadOnly)
	base := localhost(e)
	a := newBrowser(t, base)
	a.signIn("admin@example.com")
	a.get("/console/users")
	if code, _, _ := a.post("/console/settings/second-factor", url.Values{"require": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("require a second factor: %d", code)
	}
	d := newBrowser(t, base)
	if loc := d.passwordOnly("dan@example.com"); !strings.HasPrefix(loc, "/console/signin/enroll") {
		t.Fatalf("after the password: %s, want the enrollment step", loc)
	}
	_, page := d.get("/console/signin/enroll?method=password&next=%2Fconsole%2Fgroups")
	if !strings.Contains(page, `action="/console/signin/enroll/passkey/options"`) {
		t.Fatalf("the enrollment step offers no passkey:\n%.2000s", page)
	}
	// Before the step is done, the Account page's own endpoints stay shut.
	if code, _ := d.postJSON("/console/account/passkeys/options", "application/json", []byte(`{"name": "Key"}`)); code != http.StatusUnauthorized {
		t.Errorf("the Account page's passkey options before the second factor: %d", code)
	}
	key := newSoftKey(t)
	o := d.ceremony("/console/signin/enroll/passkey/options", `{"name": "Dan's key"}`)
	code, body := d.postJSON("/console/signin/enroll/passkey?next=%2Fconsole%2Fgroups&method=password", "application/json", key.register(o, base))
	if code != http.StatusOK || !strings.Contains(body, `"next":"/console/groups"`) {
		t.Fatalf("a passkey at the enrollment step: %d\n%.500s", code, body)
	}
	if code, _ := d.get("/console/groups"); code != http.StatusOK {
		t.Errorf("after adding the passkey a page answered %d", code)
	}
	dan := findUser(t, e, "dan@example.com")
	if l, _ := e.Store.ListPasskeys(ctx, e.Org.ID, dan.ID); len(l) != 1 || l[0].Name != "Dan's key" {
		t.Errorf("dan's passkeys: %+v", l)
	}
	ins := audited(t, e, e.Org.ID, "user.sign_in")
	if len(ins) == 0 || ins[0].Actor != "user:dan@example.com" || ins[0].Summary["enrolled"] != "passkey" {
		t.Errorf("dan's sign-in audit: %+v", ins[:min(1, len(ins))])
	}
	// The next sign-in asks for the passkey.
	if loc := newBrowser(t, base).passwordOnly("dan@example.com"); !strings.HasPrefix(loc, "/console/signin/code") {
		t.Errorf("dan's next sign-in goes to %s", loc)
	}
}

// TestPasskeyPasswordless: "Sign in with a passkey" on the sign-in page
// signs in the passkey's owner without the password when the passkey
// verified its user; an unknown passkey, one that did not verify its
// user, a disabled account, another browser's ceremony or a stale page is
// refused, and bad input is a 4xx on the error page.
func TestPasskeyPasswordless(t *testing.T) {
	e := apitest.New(t, behindProxy)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "bob@example.com", store.RoleReadOnly)
	base := localhost(e)
	key := newSoftKey(t)
	{
		b := newBrowser(t, base)
		b.signIn("bob@example.com")
		b.get("/console/account")
		o := b.ceremony("/console/account/passkeys/options", `{"name": "Key"}`)
		if code, body := b.postJSON("/console/account/passkeys", "application/json", key.register(o, base)); code != http.StatusOK {
			t.Fatalf("bob registers: %d\n%.300s", code, body)
		}
	}
	alice, bob := findUser(t, e, "alice@example.com"), findUser(t, e, "bob@example.com")

	login := func(from string) *browser {
		b := newBrowser(t, base)
		b.from = from
		b.get("/console/login?next=%2Fconsole%2Fgroups")
		return b
	}
	start := func(b *browser) options { return b.ceremony("/console/login/passkey/options", `{}`) }

	// Bob's passkey signs bob in, without the password.
	b := login("203.0.113.40")
	o := start(b)
	code, body := b.postJSON("/console/login/passkey?next=%2Fconsole%2Fgroups", "application/json", key.assert(o, base, 1, bob.ID))
	if code != http.StatusOK || !strings.Contains(body, `"next":"/console/groups"`) {
		t.Fatalf("a passwordless sign-in: %d\n%.500s", code, body)
	}
	if code, _ := b.get("/console/groups"); code != http.StatusOK {
		t.Errorf("signed in with a passkey alone, a page answered %d", code)
	}
	if ins := audited(t, e, e.Org.ID, "user.sign_in"); len(ins) == 0 || ins[0].Summary["method"] != "passkey" || ins[0].Address != "203.0.113.40" {
		t.Errorf("the passwordless sign-in's audit: %+v", ins[:min(1, len(ins))])
	}

	for _, tc := range []struct {
		what   string
		answer func(o options) []byte
		csrf   string
		status int
		reason string
	}{
		{"an unknown passkey", func(o options) []byte { return newSoftKey(t).assert(o, base, 1, bob.ID) }, "", http.StatusUnauthorized, ""},
		{"no user verification", func(o options) []byte { return key.assertFlags(o, base, 5, bob.ID, 0x01) }, "", http.StatusUnauthorized, "invalid assertion"},
		{"another user's handle", func(o options) []byte { return key.assert(o, base, 6, alice.ID) }, "", http.StatusUnauthorized, "invalid assertion"},
		{"another origin", func(o options) []byte { return key.assert(o, "https://patchd.example.net", 7, bob.ID) }, "", http.StatusUnauthorized, "invalid assertion"},
		{"a replayed counter", func(o options) []byte { return key.assert(o, base, 1, bob.ID) }, "", http.StatusUnauthorized, "signature counter did not increase"},
		{"not JSON", func(options) []byte { return []byte(`{"id":`) }, "", http.StatusBadRequest, ""},
		{"not an assertion", func(options) []byte { return []byte(`{"id": "x"}`) }, "", http.StatusBadRequest, ""},
		{"a stale page", func(o options) []byte { return key.assert(o, base, 8, bob.ID) }, "not-the-form-token-of-this-browser-at-all-xx", http.StatusForbidden, ""},
	} {
		before := len(audited(t, e, e.Org.ID, "user.sign_in_failed"))
		b := login("203.0.113.41")
		o := start(b)
		if tc.csrf != "" {
			b.csrf = tc.csrf
		}
		code, body := b.postJSON("/console/login/passkey", "application/json", tc.answer(o))
		if code != tc.status || !errorPage(body) {
			t.Errorf("%s: %d, want %d on the error page\n%.500s", tc.what, code, tc.status, body)
		}
		failed := audited(t, e, e.Org.ID, "user.sign_in_failed")
		if tc.reason == "" && len(failed) != before || tc.reason != "" && (len(failed) != before+1 || failed[0].Summary["detail"] != tc.reason || failed[0].Address != "203.0.113.41") {
			t.Errorf("%s: failed sign-ins audited %+v", tc.what, failed[:min(1, len(failed))])
		}
		if code, _ := b.get("/console/groups"); code == http.StatusOK {
			t.Errorf("%s signed in", tc.what)
		}
	}

	// A ceremony is bound to its browser and answered once.
	b1, b2 := login("203.0.113.42"), login("203.0.113.43")
	o = start(b1)
	if code, _ := b2.postJSON("/console/login/passkey", "application/json", key.assert(o, base, 20, bob.ID)); code != http.StatusBadRequest {
		t.Errorf("another browser's ceremony: %d", code)
	}
	if code, _ := b1.postJSON("/console/login/passkey", "application/json", key.assert(o, base, 21, bob.ID)); code != http.StatusOK {
		t.Errorf("the ceremony's own browser: %d", code)
	}
	b3 := login("203.0.113.44")
	b3.csrf = b1.csrf
	if code, _ := b3.postJSON("/console/login/passkey", "application/json", key.assert(o, base, 22, bob.ID)); code != http.StatusForbidden {
		t.Errorf("a finished ceremony answered again from elsewhere: %d", code)
	}

	// One address has at most MaxPasskeyStarts unfinished passwordless
	// sign-ins; one that signs in gives its start back.
	b = login("203.0.113.61")
	o = start(b)
	if code, _ := b.postJSON("/console/login/passkey", "application/json", key.assert(o, base, 25, bob.ID)); code != http.StatusOK {
		t.Fatalf("a passwordless sign-in: %d", code)
	}
	b = login("203.0.113.61")
	for i := range console.MaxPasskeyStarts {
		if code, body := b.postJSON("/console/login/passkey/options", "application/json", []byte(`{}`)); code != http.StatusOK {
			t.Fatalf("start %d: %d\n%.300s", i+1, code, body)
		}
	}
	code, body = b.postJSON("/console/login/passkey/options", "application/json", []byte(`{}`))
	if code != http.StatusTooManyRequests || !errorPage(body) {
		t.Errorf("one start too many: %d", code)
	}
	start(login("203.0.113.62"))

	// A disabled account does not sign in.
	a := newBrowser(t, base)
	a.signIn("alice@example.com")
	a.get("/console/users")
	if code, _, _ := a.post("/console/users/"+bob.ID+"/disable", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("disable bob: %d", code)
	}
	b = login("203.0.113.45")
	o = start(b)
	if code, _ := b.postJSON("/console/login/passkey", "application/json", key.assert(o, base, 30, bob.ID)); code != http.StatusUnauthorized {
		t.Errorf("a disabled account's passkey: %d", code)
	}
	if f := audited(t, e, e.Org.ID, "user.sign_in_failed"); len(f) == 0 || f[0].Summary["detail"] != "account disabled" {
		t.Errorf("the disabled account's refusal audit: %+v", f[:min(1, len(f))])
	}
	if k, _ := e.Store.ListPasskeys(ctx, e.Org.ID, bob.ID); len(k) != 1 || k[0].SignCount != 25 {
		t.Errorf("bob's passkey after the sign-ins: %+v", k)
	}
}
