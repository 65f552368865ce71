package api_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
)

// TestSecretAnswersAreNotStored: the answers that carry a secret (a new
// credential's client secret, an enrollment token, an invitation's token)
// say Cache-Control: no-store; every answer, success or error, API or
// not, says X-Content-Type-Options: nosniff.
func TestSecretAnswersAreNotStored(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	token := tokenOf(t, e.Admin)
	do := func(method, path, body string, auth bool) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, e.URL+path, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct{ name, path, body string }{
		{"credential", "/api/v1/credentials", `{"name":"ci","role":"Read-only"}`},
		{"enrollment token", "/api/v1/enrollment-tokens", `{"expiresInHours":1}`},
		{"invitation", "/api/v1/users", `{"email":"new@example.com","role":"Read-only","invite":true}`},
	} {
		resp := do(http.MethodPost, c.path, c.body, true)
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Cache-Control"), "no-store") {
			t.Errorf("%s (POST %s): %d Cache-Control %q; want 200 with no-store", c.name, c.path, resp.StatusCode, resp.Header.Get("Cache-Control"))
		}
	}
	for _, c := range []struct {
		method, path string
		auth         bool
	}{
		{"GET", "/api/v1/endpoints", true},
		{"GET", "/api/v1/endpoints", false},
		{"GET", "/api/v1/no-such-thing", true},
		{"GET", "/api/v1/openapi.json", false},
		{"POST", "/api/oauth/token", false},
		{"GET", "/healthz", false},
		{"GET", "/readyz", false},
		{"GET", "/agent/v1/ca.pem", false},
		{"POST", "/agent/v1/checkin", false},
		{"GET", "/no-such-page", false},
	} {
		if resp := do(c.method, c.path, "", c.auth); resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: %d without X-Content-Type-Options: nosniff", c.method, c.path, resp.StatusCode)
		}
	}
}
