package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/clock"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"golang.org/x/oauth2"
)

const oidcSecret = "patchd-test-client-secret-0123456789"

// testAccounts are the provider's accounts: their groups claim.
var testAccounts = map[string]any{
	"alice@example.com":   map[string]any{"groups": []string{"staff", "patchd-admins"}},
	"rita@example.com":    map[string]any{"groups": []string{"patchd-readers"}},
	"nina@example.com":    map[string]any{"groups": []string{"patchd-readers"}},
	"eve@elsewhere.test":  map[string]any{"groups": []string{"patchd-admins"}},
	"vera@example.com":    map[string]any{"groups": []string{"patchd-admins"}, "email_verified": false},
	"olga@example.com":    map[string]any{"groups": []string{"staff"}},
	"oscar@other.example": map[string]any{"groups": []string{"patchd-admins"}},
}

// startProvider runs testdata/oidc/provider.mjs (oidc-provider, installed
// from the pinned lock file with npm ci when missing) and answers its
// issuer. Without node the test cannot run and says so.
func startProvider(t *testing.T, redirectURI string, env ...string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: the single sign-on tests need Node.js (node and npm) to run the OpenID provider oidc-provider; install nodejs and npm")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "oidc"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "oidc-provider", "package.json")); err != nil {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Skip("SKIPPED: node is installed but npm is not, and testdata/oidc/node_modules is missing: install npm (or run .ci/run)")
		}
		cmd := exec.Command(npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
		}
	}
	accounts, _ := json.Marshal(testAccounts)
	cmd := exec.Command(node, "provider.mjs")
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "REDIRECT_URI="+redirectURI, "CLIENT_SECRET="+oidcSecret, "ACCOUNTS="+string(accounts)), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the OpenID provider did not start: %v\n%s", err, stderr.String())
	}
	var hello struct{ Issuer string }
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Issuer == "" {
		t.Fatalf("the OpenID provider said %q", line)
	}
	return hello.Issuer
}

// forwardedFor sends the console's requests as a trusted proxy would,
// with X-Forwarded-For.
type forwardedFor struct{ from, consoleHost string }

func (f forwardedFor) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == f.consoleHost {
		req = req.Clone(req.Context())
		req.Header.Set("X-Forwarded-For", f.from)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// swapIDToken replaces the ID token of patchd's code exchange with another
// one (a token substitution, as a compromised network path or a confused
// provider would make it), when set.
// It counts the UserInfo requests too.
type swapIDToken struct {
	mu       sync.Mutex
	with     string
	userInfo int
}

func (s *swapIDToken) userInfoCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.userInfo
}

func (s *swapIDToken) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Path == "/me" { // oidc-provider's UserInfo endpoint
		s.mu.Lock()
		s.userInfo++
		s.mu.Unlock()
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	s.mu.Lock()
	with := s.with
	s.mu.Unlock()
	if err != nil || with == "" || !strings.HasSuffix(req.URL.Path, "/token") {
		return resp, err
	}
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	body["id_token"] = with
	b, _ := json.Marshal(body)
	resp.Body = io.NopCloser(bytes.NewReader(b))
	resp.ContentLength = int64(len(b))
	resp.Header.Del("Content-Length")
	return resp, nil
}

type ssoEnv struct {
	t        *testing.T
	s        *store.Store
	url      string
	issuer   string
	org      store.Org
	clk      *clock.Clock
	swap     *swapIDToken
	consoleS *httptest.Server
}

func newSSOEnv(t *testing.T, providerEnv ...string) *ssoEnv {
	s := storetest.Open(t)
	org, err := admin.CreateOrg(context.Background(), s, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	e := &ssoEnv{t: t, s: s, org: org, clk: &clock.Clock{}, swap: &swapIDToken{}}
	con, err := console.New(console.Config{Store: s, API: api.New(api.Config{Store: s}), SSOClient: &http.Client{Transport: e.swap, Timeout: time.Minute}, Now: e.clk.Now,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	e.consoleS = httptest.NewServer(con)
	t.Cleanup(e.consoleS.Close)
	e.url = e.consoleS.URL
	e.issuer = startProvider(t, e.url+sso.CallbackPath, providerEnv...)
	return e
}

func (e *ssoEnv) configure(justInTime bool, domains ...string) {
	e.t.Helper()
	secret := oidcSecret
	_, err := admin.SetSSO(context.Background(), e.s, "test", e.org.ID, sso.Settings{ProviderName: "Test IdP", Issuer: e.issuer,
		ClientID: "patchd", ClientSecret: &secret, AllowedDomains: domains, Scopes: []string{"groups"}, RoleClaim: "groups",
		RoleMap:    []sso.Mapping{{Value: "patchd-admins", Role: store.RoleAdministrator}, {Value: "patchd-readers", Role: store.RoleReadOnly}},
		JustInTime: justInTime, Enabled: true})
	if err != nil {
		e.t.Fatal(err)
	}
}

// ssoBrowser is a browser: it follows redirects through the provider, and
// stops before patchd's callback so the test may look at it.
func (e *ssoEnv) browser() *browser {
	jar, _ := cookiejar.New(nil)
	b := &browser{t: e.t, base: e.url}
	b.c = &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Path == sso.CallbackPath || strings.HasPrefix(req.URL.Path, "/console/") && req.URL.Host == strings.TrimPrefix(e.url, "http://") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

// toCallback starts a sign-in at the organization's link as email and
// answers the callback address the provider sends the browser to.
func (e *ssoEnv) toCallback(b *browser, email string) string {
	e.t.Helper()
	resp, err := b.c.Get(e.url + "/console/sso/" + e.org.ID + "/start?login_hint=" + url.QueryEscape(email))
	if err != nil {
		e.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, sso.CallbackPath) {
		e.t.Fatalf("sign-in of %s did not come back to the callback: %d %s\n%.600s", email, resp.StatusCode, loc, body)
	}
	return loc
}

// callback sends the browser to the callback address; it answers the
// status, where it goes next and the page.
func (b *browser) callback(u string) (int, string, string) {
	b.t.Helper()
	resp, err := b.c.Get(u)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

// lastAudit answers the newest Audit Trail entry with the action.
func (e *ssoEnv) lastAudit(action string) store.AuditEntry {
	e.t.Helper()
	list, err := e.s.ListAudit(context.Background(), e.org.ID, store.AuditFilter{Action: action, Limit: 1})
	if err != nil || len(list) == 0 {
		e.t.Fatalf("no audit entry %s: %v", action, err)
	}
	return list[0]
}

func (e *ssoEnv) refused(b *browser, email, wantReason string, wantStatus int) {
	e.t.Helper()
	code, loc, body := b.callback(e.toCallback(b, email))
	if code != wantStatus || loc != "" {
		e.t.Fatalf("%s: %d %s, want %d and no session\n%.800s", wantReason, code, loc, wantStatus, body)
	}
	if a := e.lastAudit("sso.sign_in_failed"); !strings.HasPrefix(a.Summary["reason"].(string), wantReason) || a.Summary["address"] == "" {
		e.t.Fatalf("%s: the Audit Trail says %v", wantReason, a.Summary)
	}
	if code, _ := b.get("/console/settings/sso"); code != http.StatusSeeOther {
		e.t.Fatalf("%s: a refused sign-in has a session (%d)", wantReason, code)
	}
}

func TestSSOSignInAgainstOIDCProvider(t *testing.T) {
	e := newSSOEnv(t)
	ctx := context.Background()
	e.configure(true, "example.com")

	t.Run("sign-in with role mapping and just-in-time users", func(t *testing.T) {
		e.t = t
		a := e.browser()
		code, loc, body := a.callback(e.toCallback(a, "alice@example.com"))
		if code != http.StatusSeeOther || loc != "/console/" {
			t.Fatalf("alice's sign-in: %d %s\n%.800s", code, loc, body)
		}
		users, err := e.s.UsersByEmail(ctx, "alice@example.com")
		if err != nil || len(users) != 1 || users[0].RoleName != store.RoleAdministrator || users[0].InstanceOperator || users[0].PasswordHash != "" {
			t.Fatalf("alice was made %+v, %v; want one Administrator, no operator, no password", users, err)
		}
		if code, body := a.get("/console/settings/sso"); code != http.StatusOK || !strings.Contains(body, e.url+sso.CallbackPath) {
			t.Fatalf("alice's session on the settings page: %d\n%.500s", code, body)
		}
		// This provider gives the e-mail address and the groups in its
		// UserInfo answer only (the code flow's default).
		if e.swap.userInfoCalls() == 0 {
			t.Error("the sign-in did not read the UserInfo answer for the claims the ID token lacks")
		}
		if got := e.lastAudit("sso.sign_in"); got.Actor != "user:alice@example.com" || got.Summary["address"] != "127.0.0.1" {
			t.Errorf("the sign-in's audit entry: %+v", got)
		}
		if got := e.lastAudit("user.create"); got.Summary["justInTime"] != true || got.Summary["role"] != store.RoleAdministrator {
			t.Errorf("the user's creation audit entry: %+v", got)
		}

		r := e.browser()
		if code, loc, body := r.callback(e.toCallback(r, "rita@example.com")); code != http.StatusSeeOther || loc != "/console/" {
			t.Fatalf("rita's sign-in: %d %s\n%.800s", code, loc, body)
		}
		if users, _ := e.s.UsersByEmail(ctx, "rita@example.com"); len(users) != 1 || users[0].RoleName != store.RoleReadOnly {
			t.Fatalf("rita was made %+v, want Read-only", users)
		}
		// A Read-only user reaches none of the SSO management.
		if code, _ := r.get("/console/settings/sso"); code != http.StatusForbidden {
			t.Errorf("Read-only GET /console/settings/sso: %d, want 403", code)
		}
		// (the 403 page carries the session's CSRF token: the refusals
		// below are the role's, not the CSRF check's)
		for _, p := range []string{"/console/settings/sso", "/console/settings/sso/delete"} {
			if code, _, body := r.post(p, url.Values{"provider_name": {"Evil"}, "issuer": {"https://evil.example"}}); code != http.StatusForbidden ||
				!strings.Contains(body, "does not allow") {
				t.Errorf("Read-only POST %s: %d, want 403\n%.300s", p, code, body)
			}
		}
		if cfg, err := e.s.GetSSOConfig(ctx, e.org.ID); err != nil || cfg.ProviderName != "Test IdP" {
			t.Fatalf("the configuration after a Read-only user's writes: %+v %v", cfg, err)
		}

		// The mapping is applied at every sign-in: patchd-readers now
		// maps to Administrator, and rita's next sign-in changes her role.
		secret := (*string)(nil)
		cfg, _ := e.s.GetSSOConfig(ctx, e.org.ID)
		in := admin.SSOSettingsOf(cfg)
		in.ClientSecret = secret
		in.RoleMap = []sso.Mapping{{Value: "patchd-readers", Role: store.RoleAdministrator}}
		if _, err := admin.SetSSO(ctx, e.s, "test", e.org.ID, in); err != nil {
			t.Fatal(err)
		}
		r2 := e.browser()
		if code, _, body := r2.callback(e.toCallback(r2, "rita@example.com")); code != http.StatusSeeOther {
			t.Fatalf("rita's second sign-in: %d\n%.800s", code, body)
		}
		if users, _ := e.s.UsersByEmail(ctx, "rita@example.com"); users[0].RoleName != store.RoleAdministrator {
			t.Fatalf("rita's role after the mapping changed: %s", users[0].RoleName)
		}
		if got := e.lastAudit("user.role_change"); got.Summary["from"] != store.RoleReadOnly || got.Summary["to"] != store.RoleAdministrator {
			t.Errorf("the role change's audit entry: %+v", got.Summary)
		}
		// A user no mapping matches gets no role (no default role): refused.
		e.refused(e.browser(), "olga@example.com", "no_role", http.StatusForbidden)
		e.configure(true, "example.com")
	})

	t.Run("the e-mail domain picks the organization", func(t *testing.T) {
		e.t = t
		b := e.browser()
		b.get("/console/sso")
		// One organization: the page goes on to its start by itself (a
		// redirect of the form's POST would be followed to the provider
		// under form-action 'self', which browsers refuse).
		code, loc, body := b.post("/console/sso", url.Values{"email": {"Alice@Example.com"}})
		start := "/console/sso/" + e.org.ID + "/start?login_hint=alice%40example.com"
		if code != http.StatusOK || loc != "" || !strings.Contains(body, `<meta http-equiv="refresh" content="0; url=`+start+`">`) ||
			!strings.Contains(body, `href="`+start+`"`) {
			t.Fatalf("the e-mail form: %d %s\n%.1500s", code, loc, body)
		}
		if code, _, body := b.post("/console/sso", url.Values{"email": {"someone@nowhere.example"}}); code != http.StatusNotFound ||
			!strings.Contains(body, "nowhere.example") || strings.Contains(body, "Test IdP") {
			t.Fatalf("an address of no organization's domain: %d\n%.500s", code, body)
		}
		if code, body := b.get("/console/sso/Acme"); code != http.StatusOK || !strings.Contains(body, "Sign in with Test IdP") {
			t.Fatalf("the organization's sign-in link: %d\n%.500s", code, body)
		}
		if code, _ := b.get("/console/sso/NoSuchOrg"); code != http.StatusNotFound {
			t.Fatalf("the link of no organization: %d", code)
		}
	})

	t.Run("a replayed state is refused", func(t *testing.T) {
		e.t = t
		b := e.browser()
		cb := e.toCallback(b, "alice@example.com")
		// The binding cookie, as an attacker replaying the whole request
		// would carry it.
		binding := ""
		for _, ck := range b.c.Jar.Cookies(mustURL(t, e.url+"/console/sso/callback")) {
			if ck.Name == "patchd_sso" {
				binding = ck.Value
			}
		}
		if code, _, body := b.callback(cb); code != http.StatusSeeOther {
			t.Fatalf("the first callback: %d\n%.500s", code, body)
		}
		for _, withCookie := range []bool{false, true} {
			req, _ := http.NewRequest(http.MethodGet, cb, nil)
			if withCookie {
				req.AddCookie(&http.Cookie{Name: "patchd_sso", Value: binding})
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Set-Cookie") != "" && strings.Contains(resp.Header.Get("Set-Cookie"), "patchd_session=") ||
				!strings.Contains(string(body), "finished already") {
				t.Fatalf("the replayed callback (cookie %v): %d %v\n%.500s", withCookie, resp.StatusCode, resp.Header["Set-Cookie"], body)
			}
		}
		// A callback in a browser that did not start the sign-in is refused.
		other := e.browser()
		cb = e.toCallback(b, "alice@example.com")
		if code, _, body := other.callback(cb); code != http.StatusBadRequest || !strings.Contains(body, "another browser") {
			t.Fatalf("a callback in another browser: %d\n%.500s", code, body)
		}
	})

	t.Run("an ID token for another client is refused", func(t *testing.T) {
		e.t = t
		e.swap.mu.Lock()
		e.swap.with = idTokenFor(t, e.issuer, "other-app", "http://127.0.0.1:9/other-app/callback")
		e.swap.mu.Unlock()
		defer func() { e.swap.mu.Lock(); e.swap.with = ""; e.swap.mu.Unlock() }()
		e.refused(e.browser(), "alice@example.com", "id_token_invalid", http.StatusUnauthorized)
		if a := e.lastAudit("sso.sign_in_failed"); !strings.Contains(a.Summary["reason"].(string), "audience") {
			t.Fatalf("the refusal's reason: %v", a.Summary["reason"])
		}
	})

	t.Run("an ID token of another sign-in is refused (nonce)", func(t *testing.T) {
		e.t = t
		e.swap.mu.Lock()
		e.swap.with = idTokenFor(t, e.issuer, "patchd", e.url+sso.CallbackPath)
		e.swap.mu.Unlock()
		defer func() { e.swap.mu.Lock(); e.swap.with = ""; e.swap.mu.Unlock() }()
		e.refused(e.browser(), "alice@example.com", "nonce_mismatch", http.StatusUnauthorized)
	})

	t.Run("an expired ID token is refused", func(t *testing.T) {
		e.t = t
		b := e.browser()
		cb := e.toCallback(b, "alice@example.com")
		// The provider's ID tokens live 60 seconds; the callback comes 9
		// minutes later by the server's clock (within the sign-in's 10).
		later := time.Now().Add(9 * time.Minute)
		e.clk.Set(func() time.Time { return later })
		defer e.clk.Set(time.Now)
		code, _, body := b.callback(cb)
		if code != http.StatusUnauthorized || !strings.Contains(body, "expired") {
			t.Fatalf("an expired ID token: %d\n%.500s", code, body)
		}
		if a := e.lastAudit("sso.sign_in_failed"); a.Summary["reason"] != "id_token_expired" {
			t.Fatalf("the refusal's reason: %v", a.Summary["reason"])
		}
		// Past the sign-in's own 10 minutes the state has expired.
		e.clk.Set(time.Now)
		cb = e.toCallback(b, "alice@example.com")
		muchLater := time.Now().Add(console.SSOLoginTTL + time.Minute)
		e.clk.Set(func() time.Time { return muchLater })
		if code, _, body := b.callback(cb); code != http.StatusBadRequest || !strings.Contains(body, "took longer") {
			t.Fatalf("an expired state: %d\n%.500s", code, body)
		}
	})

	t.Run("an address outside the allowed domains is refused", func(t *testing.T) {
		e.t = t
		e.refused(e.browser(), "eve@elsewhere.test", "domain_not_allowed", http.StatusForbidden)
		if users, _ := e.s.UsersByEmail(ctx, "eve@elsewhere.test"); len(users) != 0 {
			t.Fatalf("a user was made for eve: %+v", users)
		}
		e.refused(e.browser(), "vera@example.com", "email_unverified", http.StatusUnauthorized)
	})

	t.Run("invite-only refuses an unknown user and links an invited one", func(t *testing.T) {
		e.t = t
		e.configure(false, "example.com")
		e.refused(e.browser(), "nina@example.com", "not_invited", http.StatusForbidden)
		if users, _ := e.s.UsersByEmail(ctx, "nina@example.com"); len(users) != 0 {
			t.Fatalf("invite-only made a user: %+v", users)
		}
		if _, err := admin.CreateUser(ctx, e.s, "test", e.org.ID, "nina@example.com", store.RoleReadOnly, password); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		if code, loc, body := b.callback(e.toCallback(b, "nina@example.com")); code != http.StatusSeeOther || loc != "/console/" {
			t.Fatalf("the invited user's sign-in: %d %s\n%.500s", code, loc, body)
		}
		if got := e.lastAudit("user.sso_link"); got.Summary["email"] != "nina@example.com" {
			t.Fatalf("the link's audit entry: %+v", got)
		}
		// A disabled user is refused.
		users, _ := e.s.UsersByEmail(ctx, "nina@example.com")
		if err := e.s.SetUserDisabled(ctx, &store.AuditEntry{OrgID: e.org.ID, Actor: "test", Action: "user.disable", TargetType: "user"},
			e.org.ID, users[0].ID, true); err != nil {
			t.Fatal(err)
		}
		e.refused(e.browser(), "nina@example.com", "user_disabled", http.StatusForbidden)
	})

	t.Run("unfinished sign-ins from one address are bounded", func(t *testing.T) {
		e.t = t
		e.configure(true, "example.com")
		start := func(from string) *http.Response {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, e.url+"/console/sso/"+e.org.ID+"/start", nil)
			req.Header.Set("X-Forwarded-For", from)
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		for i := 1; i < console.MaxSSOStarts; i++ {
			if resp := start("203.0.113.7"); resp.StatusCode != http.StatusSeeOther {
				t.Fatalf("start %d: %d", i, resp.StatusCode)
			}
		}
		// A sign-in that succeeds gives its start back.
		b := e.browser()
		b.c.Transport = forwardedFor{from: "203.0.113.7", consoleHost: strings.TrimPrefix(e.url, "http://")}
		if code, loc, body := b.callback(e.toCallback(b, "alice@example.com")); code != http.StatusSeeOther || loc != "/console/" {
			t.Fatalf("a sign-in at the bound: %d %s\n%.500s", code, loc, body)
		}
		if resp := start("203.0.113.7"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the start a successful sign-in gave back: %d", resp.StatusCode)
		}
		if resp := start("203.0.113.7"); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("a start past the bound: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if resp := start("198.51.100.1"); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("another address: %d", resp.StatusCode)
		}
	})

	t.Run("another organization's provider signs in nobody here", func(t *testing.T) {
		e.t = t
		e.configure(true, "example.com")
		if _, err := admin.DeleteSSO(ctx, e.s, "test", e.org.ID); err != nil {
			t.Fatal(err)
		}
		if got := e.lastAudit("sso_config.delete"); got.Actor != "test" {
			t.Fatalf("the deletion's audit entry: %+v", got)
		}
		b := e.browser()
		if code, _ := b.get("/console/sso/" + e.org.ID + "/start"); code != http.StatusNotFound {
			t.Fatalf("a sign-in start without a provider: %d", code)
		}
	})
}

// TestSSOClaimsInIDToken: a provider that puts the e-mail address and the
// groups in the ID token (Keycloak, Entra ID) is not asked for UserInfo.
func TestSSOClaimsInIDToken(t *testing.T) {
	e := newSSOEnv(t, "CLAIMS_IN_ID_TOKEN=1")
	e.configure(true, "example.com")
	b := e.browser()
	if code, loc, body := b.callback(e.toCallback(b, "rita@example.com")); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("rita's sign-in: %d %s\n%.800s", code, loc, body)
	}
	if users, _ := e.s.UsersByEmail(context.Background(), "rita@example.com"); len(users) != 1 || users[0].RoleName != store.RoleReadOnly {
		t.Fatalf("rita was made %+v, want Read-only", users)
	}
	if n := e.swap.userInfoCalls(); n != 0 {
		t.Fatalf("UserInfo was asked %d times though the ID token had every claim", n)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// idTokenFor signs alice in to the provider as the client clientID (with
// its redirect URI, not followed) and answers the ID token it gets: valid,
// signed by the provider, with the nonce "n-other".
func idTokenFor(t *testing.T, issuer, clientID, redirectURI string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	callback := mustURL(t, redirectURI).Path
	var code string
	c := &http.Client{Jar: jar, Timeout: time.Minute, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == callback {
			code = req.URL.Query().Get("code")
			return http.ErrUseLastResponse
		}
		return nil
	}}
	oc := &oauth2.Config{ClientID: clientID, ClientSecret: oidcSecret, RedirectURL: redirectURI,
		Endpoint: oauth2.Endpoint{AuthURL: issuer + "/auth", TokenURL: issuer + "/token", AuthStyle: oauth2.AuthStyleInHeader},
		Scopes:   []string{"openid", "email"}}
	verifier := oauth2.GenerateVerifier()
	resp, err := c.Get(oc.AuthCodeURL(auth.NewSecret("st"), oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", "n-other"),
		oauth2.SetAuthURLParam("login_hint", "alice@example.com")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if code == "" {
		t.Fatalf("%s got no code (%d %s)", clientID, resp.StatusCode, resp.Header.Get("Location"))
	}
	tok, err := oc.Exchange(context.Background(), code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		t.Fatalf("%s got no ID token", clientID)
	}
	return raw
}

func TestSSOSettingsPage(t *testing.T) {
	s := storetest.Open(t)
	ctx := context.Background()
	org, err := admin.CreateOrg(ctx, s, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateUser(ctx, s, "test", org.ID, "admin@acme.example", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	con, err := console.New(console.Config{Store: s, API: api.New(api.Config{Store: s}), BaseURL: "https://patchd.acme.example"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(con)
	defer ts.Close()
	if code, body := newBrowser(t, ts.URL).get("/console/login"); code != http.StatusOK || !strings.Contains(body, `href="/console/sso"`) {
		t.Fatalf("the sign-in page has no single sign-on link: %d\n%.800s", code, body)
	}
	b := newBrowser(t, ts.URL)
	b.signIn("admin@acme.example")

	code, body := b.get("/console/settings/sso")
	if code != http.StatusOK || !strings.Contains(body, "https://patchd.acme.example/console/sso/callback") ||
		!strings.Contains(body, "https://patchd.acme.example/console/sso/"+org.ID) {
		t.Fatalf("the settings page: %d\n%.800s", code, body)
	}
	// Saving asks the issuer's discovery document: a real provider's.
	issuer := startProvider(t, "https://patchd.acme.example"+sso.CallbackPath)
	form := url.Values{"provider_name": {"Keycloak"}, "issuer": {issuer}, "client_id": {"patchd"},
		"client_secret": {"s3cret-keycloak"}, "allowed_domains": {"acme.example"}, "role_claim": {"realm_access.roles"},
		"role_map": {"patchd-admin = Administrator\r\npatchd-reader = Read-only"}, "just_in_time": {"on"}, "enabled": {"on"}}
	bad := url.Values{}
	for k, v := range form {
		bad[k] = v
	}
	bad.Set("issuer", "http://id.acme.example")
	bad.Set("role_map", "patchd-admin = Nope\nno equals sign")
	code, _, body = b.post("/console/settings/sso", bad)
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "issuer") || !strings.Contains(body, "is not &#34;claim value = role&#34;") {
		t.Fatalf("a bad form: %d\n%.1500s", code, body)
	}
	if _, err := s.GetSSOConfig(ctx, org.ID); err == nil {
		t.Fatal("a refused form stored a configuration")
	}
	// An issuer its discovery document does not name (a trailing slash).
	bad.Set("issuer", issuer+"/")
	bad.Set("role_map", form.Get("role_map"))
	if code, _, body = b.post("/console/settings/sso", bad); code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, "names the issuer &#34;"+issuer+"&#34;") {
		t.Fatalf("an issuer the discovery document does not name: %d\n%.1500s", code, body)
	}
	bad.Set("issuer", form.Get("issuer"))
	bad.Set("role_map", "patchd-admin = Nope")
	if code, _, body = b.post("/console/settings/sso", bad); code != http.StatusUnprocessableEntity || !strings.Contains(body, "no role &#34;Nope&#34;") {
		t.Fatalf("a mapping to no role: %d\n%.1500s", code, body)
	}
	form.Set("provider_verifies_email", "on")
	if code, loc, body := b.post("/console/settings/sso", form); code != http.StatusSeeOther || loc != "/console/settings/sso" {
		t.Fatalf("saving: %d %s\n%.1500s", code, loc, body)
	}
	cfg, err := s.GetSSOConfig(ctx, org.ID)
	if err != nil || cfg.ClientSecret() != "s3cret-keycloak" || len(cfg.RoleMap) != 2 || cfg.RoleMap[1].RoleName != store.RoleReadOnly || !cfg.JustInTime ||
		!cfg.ProviderVerifiesEmail {
		t.Fatalf("saved %+v %v", cfg, err)
	}
	code, body = b.get("/console/settings/sso")
	if code != http.StatusOK || strings.Contains(body, "s3cret-keycloak") || !strings.Contains(body, "one is stored") || !strings.Contains(body, "patchd-reader = Read-only") {
		t.Fatalf("the page after saving: %d\n%.1500s", code, body)
	}
	if !strings.Contains(body, `name="provider_verifies_email" id="sso-verifies-email" checked`) {
		t.Fatalf("the page does not show that the provider verifies every address\n%.3000s", body)
	}
	// Saving again without a secret keeps it; turning it off is audited.
	form.Del("client_secret")
	form.Del("provider_verifies_email")
	form.Del("enabled")
	if code, _, body := b.post("/console/settings/sso", form); code != http.StatusSeeOther {
		t.Fatalf("saving again: %d\n%.800s", code, body)
	}
	if cfg, _ := s.GetSSOConfig(ctx, org.ID); cfg.ClientSecret() != "s3cret-keycloak" || cfg.Enabled {
		t.Fatalf("after saving without a secret: %+v", cfg)
	}
	entries, _ := s.ListAudit(ctx, org.ID, store.AuditFilter{Action: "sso_config.set"})
	if len(entries) != 2 || entries[0].Actor != "user:admin@acme.example" || entries[0].Summary["clientSecretChanged"] != false ||
		entries[1].Summary["clientSecretChanged"] != true {
		t.Fatalf("the Audit Trail: %+v", entries)
	}
	// A turned-off provider is offered to nobody.
	if code, _ := b.get("/console/sso/" + org.ID); code != http.StatusNotFound {
		t.Fatalf("the link of a turned-off provider: %d", code)
	}
	b.get("/console/settings/sso")
	if code, _, _ := b.post("/console/settings/sso/delete", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("removing: %d", code)
	}
	if _, err := s.GetSSOConfig(ctx, org.ID); err == nil {
		t.Fatal("the configuration stayed")
	}
}
