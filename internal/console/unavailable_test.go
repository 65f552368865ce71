package console_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestDatabaseOutagePages: with the database gone, the console answers 503
// with Retry-After and says so, where it answered 500.
func TestDatabaseOutagePages(t *testing.T) {
	t.Parallel()
	cut := storetest.OpenCut(t)
	e := apitest.NewOn(t, cut.Store)
	b := adminBrowser(t, e)
	other := newBrowser(t, e.URL)
	other.get("/console/login")

	cut.Cut()

	check := func(what string, status int, retryAfter, body string) {
		t.Helper()
		if status != http.StatusServiceUnavailable || retryAfter == "" || !strings.Contains(body, "database is unavailable") {
			t.Errorf("%s during the outage: %d Retry-After %q\n%.600s", what, status, retryAfter, body)
		}
	}
	resp, body := rawGet(t, b, "/console/endpoints")
	check("a page", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	req, _ := http.NewRequest(http.MethodPost, e.URL+"/console/login", strings.NewReader(url.Values{"email": {"alice@example.com"}, "password": {password}, "csrf": {other.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body = rawDo(t, other, req)
	check("a sign-in", resp.StatusCode, resp.Header.Get("Retry-After"), body)
}

func rawGet(t *testing.T, b *browser, path string) (*http.Response, string) {
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return rawDo(t, b, req)
}

func rawDo(t *testing.T, b *browser, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}
