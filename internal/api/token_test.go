package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
)

type tokenCall struct {
	name        string
	contentType string
	body        string
	basicUser   string
	basicPass   string
	// from is the caller's address, sent as X-Forwarded-For (the test
	// server trusts its loopback peer as a proxy: behindProxy).
	from string
}

// behindProxy starts the server as behind a reverse proxy on loopback, so
// that a test names each request's source address in X-Forwarded-For.
func behindProxy(c *config.Config) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

func postToken(t *testing.T, e *apitest.Env, c tokenCall) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/oauth/token", strings.NewReader(c.body))
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	if c.basicUser != "" {
		req.SetBasicAuth(c.basicUser, c.basicPass)
	}
	if c.from != "" {
		req.Header.Set("X-Forwarded-For", c.from)
	}
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s: answer is not JSON: %v", c.name, err)
	}
	return resp, out
}

func form(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

// call makes an authenticated request with a raw bearer token.
func call(t *testing.T, e *apitest.Env, method, path, token string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.HTTPClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func TestTokenGrantForms(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	cred := e.Credential(e.Org, perm.All)
	const formCT = "application/x-www-form-urlencoded"
	for _, c := range []tokenCall{
		{name: "form", contentType: formCT, body: form("grant_type", "client_credentials", "client_id", cred.ClientID, "client_secret", cred.ClientSecret)},
		{name: "json", contentType: "application/json", body: `{"grant_type":"client_credentials","client_id":"` + cred.ClientID + `","client_secret":"` + cred.ClientSecret + `"}`},
		{name: "basic", contentType: formCT, body: form("grant_type", "client_credentials"), basicUser: cred.ClientID, basicPass: cred.ClientSecret},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: `{"grant_type":"client_credentials","client_id":"` + cred.ClientID + `","client_secret":"` + cred.ClientSecret + `"}`},
	} {
		resp, out := postToken(t, e, c)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d %v", c.name, resp.StatusCode, out)
		}
		if out["token_type"] != "Bearer" || out["expires_in"] != float64(3600) || out["access_token"] == "" {
			t.Fatalf("%s: token response %v", c.name, out)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
			t.Fatalf("%s: Cache-Control %q", c.name, cc)
		}
		r, body := call(t, e, http.MethodGet, "/api/v1/endpoints", out["access_token"].(string))
		if r.StatusCode == http.StatusUnauthorized || r.StatusCode == http.StatusForbidden {
			t.Fatalf("%s: token refused: %d %v", c.name, r.StatusCode, body)
		}
	}
}

func TestTokenErrors(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	cred := e.Credential(e.Org, perm.All)
	disabled := e.Credential(e.Org, perm.All)
	if _, err := admin.SetCredentialDisabled(ctx, e.Store, "test", e.Org.ID, disabled.ClientID, true); err != nil {
		t.Fatal(err)
	}
	deleted := e.Credential(e.Org, perm.All)
	if _, err := admin.DeleteCredential(ctx, e.Store, "test", e.Org.ID, deleted.ClientID); err != nil {
		t.Fatal(err)
	}
	const formCT = "application/x-www-form-urlencoded"
	for _, c := range []struct {
		tokenCall
		status int
		code   string
	}{
		{tokenCall{name: "no grant_type", contentType: formCT, body: form("client_id", cred.ClientID, "client_secret", cred.ClientSecret)}, 400, "invalid_request"},
		{tokenCall{name: "password grant", contentType: formCT, body: form("grant_type", "password", "client_id", cred.ClientID, "client_secret", cred.ClientSecret)}, 400, "unsupported_grant_type"},
		{tokenCall{name: "no secret", contentType: formCT, body: form("grant_type", "client_credentials", "client_id", cred.ClientID)}, 400, "invalid_request"},
		{tokenCall{name: "no client id", contentType: formCT, body: form("grant_type", "client_credentials", "client_secret", "x")}, 400, "invalid_request"},
		{tokenCall{name: "empty body", contentType: formCT}, 400, "invalid_request"},
		{tokenCall{name: "malformed json", contentType: "application/json", body: `{"grant_type":`}, 400, "invalid_request"},
		{tokenCall{name: "json of wrong type", contentType: "application/json", body: `{"grant_type":5}`}, 400, "invalid_request"},
		{tokenCall{name: "unknown client", contentType: formCT, body: form("grant_type", "client_credentials", "client_id", "pdc_nobody", "client_secret", "x")}, 401, "invalid_client"},
		{tokenCall{name: "wrong secret", contentType: formCT, body: form("grant_type", "client_credentials", "client_id", cred.ClientID, "client_secret", "pds_wrong")}, 401, "invalid_client"},
		{tokenCall{name: "wrong secret basic", contentType: formCT, body: form("grant_type", "client_credentials"), basicUser: cred.ClientID, basicPass: "nope"}, 401, "invalid_client"},
		{tokenCall{name: "disabled", contentType: formCT, body: form("grant_type", "client_credentials", "client_id", disabled.ClientID, "client_secret", disabled.ClientSecret)}, 401, "invalid_client"},
		{tokenCall{name: "deleted", contentType: formCT, body: form("grant_type", "client_credentials", "client_id", deleted.ClientID, "client_secret", deleted.ClientSecret)}, 401, "invalid_client"},
	} {
		resp, out := postToken(t, e, c.tokenCall)
		if resp.StatusCode != c.status || out["error"] != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.name, resp.StatusCode, out, c.status, c.code)
		}
		if _, ok := out["error_description"]; !ok {
			t.Errorf("%s: no error_description in %v", c.name, out)
		}
		if c.basicUser != "" && resp.StatusCode == 401 && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("%s: 401 to Basic without a Basic challenge", c.name)
		}
	}
}

func secretCall(clientID, secret, from string) tokenCall {
	return tokenCall{name: clientID + " from " + from, contentType: "application/x-www-form-urlencoded",
		body: form("grant_type", "client_credentials", "client_id", clientID, "client_secret", secret), from: from}
}

// TestTokenRateLimitPerClient: ten wrong secrets for a client id from one
// address lock that client id from that address only; the right secret
// from another address is accepted, so nobody can lock a client out.
func TestTokenRateLimitPerClient(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, behindProxy)
	cred := e.Credential(e.Org, perm.All)
	const attacker, owner = "203.0.113.66", "198.51.100.7"
	wrong := secretCall(cred.ClientID, "pds_bad", attacker)
	for i := range auth.MaxFailures {
		if resp, out := postToken(t, e, wrong); resp.StatusCode != 401 {
			t.Fatalf("attempt %d: %d %v", i+1, resp.StatusCode, out)
		}
	}
	resp, out := postToken(t, e, wrong)
	if resp.StatusCode != http.StatusTooManyRequests || out["error"] != "too_many_attempts" {
		t.Fatalf("11th attempt: %d %v", resp.StatusCode, out)
	}
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || secs < 1 || secs > 300 {
		t.Fatalf("Retry-After %q", resp.Header.Get("Retry-After"))
	}
	// Even the right secret is refused from the locked address...
	if resp, _ := postToken(t, e, secretCall(cred.ClientID, cred.ClientSecret, attacker)); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("right secret from the locked address: %d", resp.StatusCode)
	}
	// ...and accepted from any other.
	if resp, out := postToken(t, e, secretCall(cred.ClientID, cred.ClientSecret, owner)); resp.StatusCode != http.StatusOK {
		t.Fatalf("right secret from another address while the attacker is locked: %d %v", resp.StatusCode, out)
	}
	// Another client id from the locked address is not locked.
	other := e.Credential(e.Org, perm.All)
	if resp, out := postToken(t, e, secretCall(other.ClientID, other.ClientSecret, attacker)); resp.StatusCode != http.StatusOK {
		t.Fatalf("another client from the address: %d %v", resp.StatusCode, out)
	}
	// After the window, the right secret works from the address again.
	e.Server.Auth().SetClock(func() time.Time { return time.Now().Add(auth.FailureWindow + time.Minute) })
	if resp, out := postToken(t, e, secretCall(cred.ClientID, cred.ClientSecret, attacker)); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the window: %d %v", resp.StatusCode, out)
	}
}

// TestTokenRateLimitPerAddress: one address trying many client ids is
// limited as a whole; other addresses are not.
func TestTokenRateLimitPerAddress(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, behindProxy)
	const sprayer = "203.0.113.9"
	for i := range auth.MaxAddressFailures {
		if resp, _ := postToken(t, e, secretCall("pdc_guess"+strconv.Itoa(i), "x", sprayer)); resp.StatusCode != 401 {
			t.Fatalf("attempt %d: %d", i, resp.StatusCode)
		}
	}
	cred := e.Credential(e.Org, perm.All)
	resp, out := postToken(t, e, secretCall(cred.ClientID, cred.ClientSecret, sprayer))
	if resp.StatusCode != http.StatusTooManyRequests || out["error"] != "too_many_attempts" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("address limit: %d %v", resp.StatusCode, out)
	}
	if resp, out := postToken(t, e, secretCall(cred.ClientID, cred.ClientSecret, "198.51.100.8")); resp.StatusCode != http.StatusOK {
		t.Fatalf("another address: %d %v", resp.StatusCode, out)
	}
	// Without --trusted-proxies the header is not believed: the sprayer
	// cannot pose as another address (tested in httpx.TestClientIP), and the
	// limit keys on the peer.
}

// TestTokenRateLimitParallel: 100 wrong secrets at once for one client id
// from one address get exactly the limit checked (401) and the rest 429:
// the count is one atomic write per attempt, on both engines.
func TestTokenRateLimitParallel(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, behindProxy)
	cred := e.Credential(e.Org, perm.All)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for range 100 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, e.URL+"/api/oauth/token",
				strings.NewReader(form("grant_type", "client_credentials", "client_id", cred.ClientID, "client_secret", "pds_wrong")))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Forwarded-For", "203.0.113.77")
			code := 0
			if resp, err := e.HTTPClient.Do(req); err == nil {
				code = resp.StatusCode
				resp.Body.Close()
			}
			mu.Lock()
			statuses[code]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[http.StatusUnauthorized] != auth.MaxFailures || statuses[http.StatusTooManyRequests] != 100-auth.MaxFailures {
		t.Fatalf("100 parallel wrong secrets answered %v, want %d × 401 and the rest 429", statuses, auth.MaxFailures)
	}
}

func TestBearerAuthentication(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	// RFC 6750 section 3.1: a request without a token is challenged without
	// an error code; a bad token gets error="invalid_token".
	const noToken, badToken = `Bearer realm="patchd"`, `Bearer realm="patchd", error="invalid_token"`
	for _, c := range []struct {
		name, header, challenge string
	}{
		{"no header", "", noToken},
		{"not bearer", "Basic abc", noToken},
		{"empty bearer", "Bearer ", noToken},
		{"unknown token", "Bearer pdt_unknown", badToken},
	} {
		req, _ := http.NewRequest(http.MethodGet, e.URL+"/api/v1/endpoints", nil)
		if c.header != "" {
			req.Header.Set("Authorization", c.header)
		}
		resp, err := e.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != 401 || out["error"] != "invalid_token" || resp.Header.Get("WWW-Authenticate") != c.challenge {
			t.Errorf("%s: %d %v %q, want 401 invalid_token with the challenge %q", c.name, resp.StatusCode, out, resp.Header.Get("WWW-Authenticate"), c.challenge)
		}
	}

	// An expired token answers 401.
	_, token := freshToken(t, e)
	e.Server.Auth().SetClock(func() time.Time { return time.Now().Add(time.Hour + time.Second) })
	if r, out := call(t, e, http.MethodGet, "/api/v1/endpoints", token); r.StatusCode != 401 || out["error"] != "invalid_token" ||
		r.Header.Get("WWW-Authenticate") != badToken {
		t.Fatalf("expired token: %d %v %q", r.StatusCode, out, r.Header.Get("WWW-Authenticate"))
	}
	e.Server.Auth().SetClock(time.Now)
}

// freshToken makes a credential of e's organization with every
// permission and answers it with a token it was given, which the API
// takes.
func freshToken(t *testing.T, e *apitest.Env) (admin.NewCredential, string) {
	t.Helper()
	cred, c := e.CredentialClient(e.Org, perm.All)
	token := tokenOf(t, c)
	if r, _ := call(t, e, http.MethodGet, "/api/v1/endpoints", token); r.StatusCode == 401 {
		t.Fatal("fresh token refused")
	}
	return cred, token
}

func TestClientRenewsTokenOn401(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	_, c := e.CredentialClient(e.Org, perm.All, client.WithToken("pdt_stale", time.Now().Add(time.Hour)))
	if _, err := c.ListEndpoints(context.Background(), client.EndpointQuery{}); client.IsStatus(err, 401) {
		t.Fatalf("client did not renew its token: %v", err)
	}
	tok, _, _ := c.Token(context.Background())
	if tok == "pdt_stale" {
		t.Fatal("stale token kept")
	}
}

func TestDisabledCredentialTokenStopsWorking(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	for _, verb := range []string{"disable", "delete"} {
		cred, token := freshToken(t, e)
		// The change is made as the admin command line does: straight in the
		// database, so the server learns it only through the store.
		var err error
		if verb == "disable" {
			_, err = admin.SetCredentialDisabled(ctx, e.Store, "test", e.Org.ID, cred.ClientID, true)
		} else {
			_, err = admin.DeleteCredential(ctx, e.Store, "test", e.Org.ID, cred.ClientID)
		}
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
		for {
			r, _ := call(t, e, http.MethodGet, "/api/v1/endpoints", token)
			if r.StatusCode == 401 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: token still accepted a minute after revocation", verb)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func TestPermissions(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	noAccess := e.Client(e.Org, perm.All&^perm.Set(perm.APIAccess))
	_, err := noAccess.ListEndpoints(ctx, client.EndpointQuery{})
	var apiErr *client.Error
	if !client.IsStatus(err, 403) || !asErr(err, &apiErr) || apiErr.Code != "insufficient_scope" || !strings.Contains(apiErr.Description, "api.access") {
		t.Fatalf("role without api.access: %v", err)
	}
	viewOnly := e.Client(e.Org, perm.Set(perm.APIAccess|perm.UpdatesView))
	mustStatus(t, errOf(viewOnly.ListEndpoints(ctx, client.EndpointQuery{})), 403, "role without endpoints.view")
}

func asErr(err error, target **client.Error) bool {
	e, ok := err.(*client.Error)
	if ok {
		*target = e
	}
	return ok
}

func TestPublicDocumentAndProbes(t *testing.T) {
	t.Parallel()
	const metricsToken = "metrics-token-0123456789"
	e := apitest.New(t, func(c *config.Config) { c.MetricsToken = metricsToken })
	r, out := call(t, e, http.MethodGet, "/api/v1/openapi.json", "")
	if r.StatusCode != 200 || out["openapi"] != "3.0.3" || out["info"].(map[string]any)["version"] != "1" {
		t.Fatalf("openapi.json: %d %v", r.StatusCode, out["info"])
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r, out := call(t, e, http.MethodGet, p, ""); r.StatusCode != 200 {
			t.Fatalf("%s: %d %v", p, r.StatusCode, out)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, e.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+metricsToken) // internal/server tests the metrics' access
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := new(strings.Builder)
	if _, err := io_Copy(buf, resp); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"patchd_http_requests_total", "patchd_http_request_duration_seconds", "patchd_db_connections_open"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if r, out := call(t, e, http.MethodGet, "/api/v1/nothing-here", ""); r.StatusCode != 404 || out["error"] != "not_found" {
		t.Fatalf("unknown path: %d %v", r.StatusCode, out)
	}
	if r, out := call(t, e, http.MethodPut, "/api/v1/endpoints", ""); r.StatusCode != 405 || out["error"] != "method_not_allowed" || r.Header.Get("Allow") != "GET" {
		t.Fatalf("wrong method: %d %v %q", r.StatusCode, out, r.Header.Get("Allow"))
	}
}
