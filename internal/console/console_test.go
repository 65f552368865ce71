package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/netip"
	"net/url"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/console"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/version"
)

const password = "correct horse battery"

// browser is a cookie-keeping HTTP client signed in to the console.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
	csrf string
	// from, when set, is sent as X-Forwarded-For: the browser's address
	// as a trusted reverse proxy reports it.
	from string
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) get(path string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	if b.from != "" {
		req.Header.Set("X-Forwarded-For", b.from)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if m := csrfField.FindStringSubmatch(string(body)); m != nil {
		b.csrf = m[1]
	}
	return resp.StatusCode, string(body)
}

func (b *browser) post(path string, form url.Values) (int, string, string) {
	b.t.Helper()
	if form.Get("csrf") == "" && b.csrf != "" {
		form.Set("csrf", b.csrf)
	}
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if b.from != "" {
		req.Header.Set("X-Forwarded-For", b.from)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func (b *browser) signIn(email string) {
	b.t.Helper()
	b.get("/console/login")
	code, loc, body := b.post("/console/login", url.Values{"email": {email}, "password": {password}})
	if code != http.StatusSeeOther || loc != "/console/" {
		b.t.Fatalf("sign-in of %s: %d %s\n%.500s", email, code, loc, body)
	}
	b.get("/console/")
}

func addUser(t *testing.T, e *apitest.Env, org store.Org, email, role string) {
	t.Helper()
	if _, err := admin.CreateUser(context.Background(), e.Store, "test", org.ID, email, role, password); err != nil {
		t.Fatal(err)
	}
}

// adminBrowser adds alice@example.com as an Administrator of e's
// organization and answers a browser signed in as her.
func adminBrowser(t *testing.T, e *apitest.Env) *browser {
	t.Helper()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	return b
}

func TestSignInSessionAndPages(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)

	if code, loc, _ := b.post("/console/logout", url.Values{}); code != http.StatusUnauthorized && loc == "" {
		t.Fatalf("logout without a session: %d", code)
	}
	code, _ := b.get("/console/endpoints")
	if code != http.StatusSeeOther {
		t.Fatalf("a page without a session answered %d, want a redirect to sign-in", code)
	}
	b.get("/console/login")
	if code, _, body := b.post("/console/login", url.Values{"email": {"alice@example.com"}, "password": {"wrong password!"}}); code != http.StatusUnauthorized ||
		!strings.Contains(body, "wrong") {
		t.Fatalf("wrong password: %d", code)
	}
	b.signIn("alice@example.com")
	for _, p := range []string{"/console/", "/console/endpoints", "/console/updates", "/console/groups", "/console/groups/new", "/console/automations",
		"/console/automations/new", "/console/runs", "/console/scripts", "/console/users", "/console/enrollment", "/console/audit",
		"/console/automations/preview?scheduleKind=RECURRING&freq=PATCH_TUESDAY&atTime=22:00&offsetDays=1",
		"/console/groups/preview?matchAll=true&r0field=platform&r0op=equals&r0value=linux"} {
		if code, body := b.get(p); code != http.StatusOK {
			t.Errorf("GET %s: %d\n%.800s", p, code, body)
		}
	}
	// A write without the CSRF token is refused.
	if code, _, _ := b.post("/console/credentials", url.Values{"csrf": {"forged"}, "name": {"x"}}); code != http.StatusForbidden {
		t.Errorf("a form without the CSRF token answered %d, want 403", code)
	}
	// Sign-out ends the session on the server.
	b.get("/console/")
	if code, loc, _ := b.post("/console/logout", url.Values{}); code != http.StatusSeeOther || loc != "/console/login" {
		t.Fatalf("sign-out: %d %s", code, loc)
	}
	if code, _ := b.get("/console/"); code != http.StatusSeeOther {
		t.Errorf("after sign-out a page answered %d, want a redirect", code)
	}
}

func TestReadOnlyUserAndIsolation(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	other := e.NewOrg("Globex")
	addUser(t, e, other, "admin@globex.example", store.RoleAdministrator)
	ctx := context.Background()
	cred, err := admin.CreateCredential(ctx, e.Store, "test", other.ID, "globex-secret-name", store.RoleAdministrator)
	if err != nil {
		t.Fatal(err)
	}

	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	_, body := r.get("/console/updates")
	if strings.Contains(body, "Approve selected") {
		t.Error("a Read-only user sees the approve button")
	}
	for _, p := range []string{"/console/users", "/console/enrollment", "/console/groups/new", "/console/automations/new"} {
		if code, _ := r.get(p); code != http.StatusForbidden {
			t.Errorf("Read-only GET %s: %d, want 403", p, code)
		}
	}
	r.get("/console/")
	for _, p := range []string{"/console/updates/approvals", "/console/groups", "/console/automations", "/console/credentials", "/console/users",
		"/console/actions", "/console/enrollment", "/console/scripts", "/console/endpoints/x/delete"} {
		if code, _, _ := r.post(p, url.Values{"key": {"k"}, "status": {"APPROVED"}, "name": {"n"}}); code != http.StatusForbidden {
			t.Errorf("Read-only POST %s: %d, want 403", p, code)
		}
	}

	// An administrator of another organization sees none of Acme's data,
	// and Acme's administrator none of Globex's.
	g := newBrowser(t, e.URL)
	g.signIn("admin@globex.example")
	_, body = g.get("/console/users")
	if strings.Contains(body, "reader@example.com") || !strings.Contains(body, "globex-secret-name") {
		t.Error("the users page mixes organizations")
	}
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	_, body = a.get("/console/users")
	if strings.Contains(body, "globex-secret-name") || strings.Contains(body, cred.ClientID) {
		t.Error("Acme's administrator sees Globex's credential")
	}
	if code, _, _ := a.post("/console/credentials/"+cred.ID+"/delete", url.Values{}); code != http.StatusSeeOther {
		t.Errorf("deleting another organization's credential: %d", code)
	}
	if _, err := e.Store.FindCredential(ctx, other.ID, cred.ID); err != nil {
		t.Errorf("another organization's credential went away: %v", err)
	}
}

func TestFirstRunSetup(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	cred, err := admin.CreateCredential(ctx, e.Store, "test", e.Org.ID, "bootstrap-admin", store.RoleAdministrator)
	if err != nil {
		t.Fatal(err)
	}
	reader, err := admin.CreateCredential(ctx, e.Store, "test", e.Org.ID, "reader", store.RoleReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.URL)
	b.get("/console/setup")
	form := func(id, secret string) url.Values {
		return url.Values{"client_id": {id}, "client_secret": {secret}, "email": {"first@example.com"}, "password": {password}, "password2": {password}}
	}
	if code, _, _ := b.post("/console/setup", form(reader.ClientID, reader.ClientSecret)); code != http.StatusUnauthorized {
		t.Errorf("setup with a Read-only credential: %d, want 401", code)
	}
	if code, _, _ := b.post("/console/setup", form(cred.ClientID, "pds_wrong")); code != http.StatusUnauthorized {
		t.Errorf("setup with a wrong secret: %d, want 401", code)
	}
	if code, loc, body := b.post("/console/setup", form(cred.ClientID, cred.ClientSecret)); code != http.StatusSeeOther || loc != "/console/" {
		t.Fatalf("setup: %d %s\n%.600s", code, loc, body)
	}
	if code, _ := b.get("/console/users"); code != http.StatusOK {
		t.Fatalf("the first administrator cannot open the users page: %d", code)
	}
	second := newBrowser(t, e.URL)
	second.get("/console/setup")
	if code, _, _ := second.post("/console/setup", form(cred.ClientID, cred.ClientSecret)); code != http.StatusConflict {
		t.Errorf("a second setup answered %d, want 409", code)
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Actor: "user:first@example.com"})
	if err != nil || len(entries) != 1 || entries[0].Action != "user.create" {
		t.Errorf("audit of the setup: %+v %v", entries, err)
	}
}

// behindProxy starts the server as behind a reverse proxy on loopback
// (--trusted-proxies), so that a browser's address is its X-Forwarded-For.
func behindProxy(c *config.Config) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// TestSignInThrottle: failed sign-ins lock one e-mail address from one
// source address, never the account: its owner signs in from elsewhere.
// Behind a trusted proxy the source is the client's address, as for the API.
func TestSignInThrottle(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "bob@example.com", store.RoleAdministrator)
	attacker := newBrowser(t, e.URL)
	attacker.from = "203.0.113.66"
	attacker.get("/console/login")
	for i := range console.MaxSignInFailures {
		if code, _, _ := attacker.post("/console/login", url.Values{"email": {"bob@example.com"}, "password": {"not the password"}}); code != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d answered %d, want 401", i+1, code)
		}
	}
	code, _, body := attacker.post("/console/login", url.Values{"email": {"bob@example.com"}, "password": {"not the password"}})
	if code != http.StatusTooManyRequests || !strings.Contains(body, "Too many failed sign-ins") {
		t.Fatalf("the 11th failed sign-in answered %d, want 429", code)
	}
	if code, _, _ := attacker.post("/console/login", url.Values{"email": {"bob@example.com"}, "password": {password}}); code != http.StatusTooManyRequests {
		t.Errorf("the right password from the locked address answered %d, want 429", code)
	}
	// Bob, elsewhere, signs in: the e-mail address is not locked.
	bob := newBrowser(t, e.URL)
	bob.from = "198.51.100.7"
	bob.signIn("bob@example.com")
}

// TestSignInThrottlePerAddress: one address failing for many e-mail
// addresses is locked as a whole; other addresses are not.
func TestSignInThrottlePerAddress(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "carol@example.com", store.RoleAdministrator)
	sprayer := newBrowser(t, e.URL)
	sprayer.from = "203.0.113.9"
	sprayer.get("/console/login")
	for i := range console.MaxAddressSignInFailures {
		email := fmt.Sprintf("guess%d@example.com", i)
		if code, _, _ := sprayer.post("/console/login", url.Values{"email": {email}, "password": {"not the password"}}); code != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d answered %d, want 401", i+1, code)
		}
	}
	if code, _, _ := sprayer.post("/console/login", url.Values{"email": {"carol@example.com"}, "password": {password}}); code != http.StatusTooManyRequests {
		t.Fatalf("a sign-in from the locked address answered %d, want 429", code)
	}
	carol := newBrowser(t, e.URL)
	carol.from = "198.51.100.8"
	carol.signIn("carol@example.com")
}

// TestSignInThrottleIgnoresUntrustedHeader: without --trusted-proxies the
// address is the peer's, whatever X-Forwarded-For claims, so a client
// cannot escape its lock by naming other addresses.
func TestSignInThrottleIgnoresUntrustedHeader(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "dave@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.get("/console/login")
	for i := range console.MaxSignInFailures {
		b.from = fmt.Sprintf("192.0.2.%d", i+1)
		if code, _, _ := b.post("/console/login", url.Values{"email": {"dave@example.com"}, "password": {"not the password"}}); code != http.StatusUnauthorized {
			t.Fatalf("failed sign-in %d answered %d, want 401", i+1, code)
		}
	}
	b.from = "192.0.2.200"
	if code, _, _ := b.post("/console/login", url.Values{"email": {"dave@example.com"}, "password": {password}}); code != http.StatusTooManyRequests {
		t.Fatalf("a new X-Forwarded-For from an untrusted peer escaped the lock: %d", code)
	}
}

// TestSignInFloodBoundsMemory: 200 sign-ins at once, each from its own
// address (so no failed-attempt limit applies) with a wrong password or an
// unknown e-mail address, run at most auth.PasswordConcurrency password
// hashes at once; the others answer 503 with Retry-After at once. The
// heap grows by a bounded amount (each hash holds 64 MiB: without the
// bound, 200 at once would ask for 12.5 GiB) and the API keeps answering.
// Not parallel, so that the heap measured is this test's.
func TestSignInFloodBoundsMemory(t *testing.T) {
	e := apitest.New(t, behindProxy)
	addUser(t, e, e.Org, "erin@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.get("/console/login") // the form token cookie all the sign-ins share

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	const n = 200
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	var problems []string
	for i := range n {
		wg.Go(func() {
			email := "erin@example.com"
			if i%2 == 1 {
				email = fmt.Sprintf("nobody%d@example.com", i)
			}
			form := url.Values{"email": {email}, "password": {"not the password"}, "csrf": {b.csrf}}
			req, _ := http.NewRequest(http.MethodPost, e.URL+"/console/login", strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.18.%d.%d", i/250, i%250+1))
			resp, err := b.c.Do(req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				problems = append(problems, err.Error())
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			statuses[resp.StatusCode]++
			if resp.StatusCode == http.StatusServiceUnavailable &&
				(resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "too many sign-ins at once")) {
				problems = append(problems, fmt.Sprintf("503 without Retry-After: 1 or the message: %q", resp.Header.Get("Retry-After")))
			}
		})
	}
	// The API answers while the sign-ins run.
	apiCalls := 0
	for done := false; !done; {
		if _, err := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{}); err != nil {
			t.Errorf("an API request during the sign-ins: %v", err)
			break
		}
		apiCalls++
		mu.Lock()
		total := len(problems)
		for _, c := range statuses {
			total += c
		}
		mu.Unlock()
		done = total == n
	}
	wg.Wait()

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	for _, p := range problems {
		t.Error(p)
	}
	if statuses[http.StatusUnauthorized]+statuses[http.StatusServiceUnavailable] != n || statuses[http.StatusUnauthorized] == 0 {
		t.Errorf("answers %v: want only 401 (checked) and 503 (busy), some 401", statuses)
	}
	// HeapSys is the heap's high-water mark (memory given back to the
	// system stays counted). The bound: the hashes that may run at once,
	// as much again and more in garbage the collector has not taken yet
	// (GOGC=100 lets the heap double before it runs), and 128 MiB for
	// everything else. Without the bound, 24 sign-ins at once grow it by
	// 1.5 GiB; 200 would ask for 12.5 GiB.
	const hashMemory = 64 << 20
	growth := int64(after.HeapSys) - int64(before.HeapSys)
	bound := int64(3*auth.PasswordConcurrency()+2) * hashMemory
	t.Logf("%d sign-ins at once: %v; heap grew %d MiB (bound %d MiB); %d API requests answered meanwhile",
		n, statuses, growth>>20, bound>>20, apiCalls)
	if growth > bound {
		t.Errorf("the heap grew by %d MiB, more than %d MiB", growth>>20, bound>>20)
	}
}

// TestFooterTellsBuild: signed-in pages end with the server's version,
// commit and build date; the sign-in page does not tell them.
func TestFooterTellsBuild(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	i := version.Get()
	footer := fmt.Sprintf(`<footer class="foot">patchd %s · commit %.12s · built %s</footer>`, i.Version, i.Commit, i.Date)
	if _, body := b.get("/console/login"); strings.Contains(body, `class="foot"`) {
		t.Errorf("the sign-in page tells the build:\n%.800s", body)
	}
	b.signIn("alice@example.com")
	for _, p := range []string{"/console/", "/console/endpoints"} {
		if code, body := b.get(p); code != http.StatusOK || !strings.Contains(body, footer) {
			t.Errorf("GET %s: %d, no %s\n%.800s", p, code, footer, body)
		}
	}
}
