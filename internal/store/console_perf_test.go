package store_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

// TestConsolePerformance times the console's dashboard, lists and
// drill-downs through the real server (session cookie, HTML rendered) on
// 10,000 endpoints: 30 missing updates each from a catalog of 400 (every
// fifth endpoint fully patched), 2,000 CVEs on the fleet with 10 per
// endpoint, and 90 recorded days of compliance. It asserts that every page
// answers 200; the times go to docs/performance.md (a test does not assert
// speed).
func TestConsolePerformance(t *testing.T) {
	s := perfStore(t, "load 10,000 endpoints and time the console's pages")
	ctx := context.Background()
	o := newOrg(t, s, "Perf")
	n := perfScale(10000)
	start := time.Now()
	ids := bulkEndpoints(t, s, o.ID, n, start)
	sources := []string{updates.SourceOSMandatory, updates.SourceOSOptional, updates.SourceApps}
	keys := make([]store.BulkKey, 400)
	for k := range keys {
		src := sources[k%3]
		key := fmt.Sprintf("KB5%06d", k)
		if src == updates.SourceApps {
			key = fmt.Sprintf("Vendor.App%d@%d.0", k, k%7+1)
		}
		keys[k] = store.BulkKey{Key: key, Severity: updates.Severities[(k/3)%5], Source: src}
	}
	if err := s.BulkUpdatesForTest(ctx, o.ID, ids, keys, func(i int) []int {
		if i%5 == 0 {
			return nil
		}
		out := make([]int, 30)
		for j := range out {
			out[j] = (i + 13*j) % len(keys)
		}
		return out
	}, start); err != nil {
		t.Fatal(err)
	}
	if err := s.BulkVulnsForTest(ctx, o.ID, ids, 2000, func(i int) []int {
		out := make([]int, 10)
		for j := range out {
			out[j] = (i + 197*j) % 2000
		}
		return out
	}, start); err != nil {
		t.Fatal(err)
	}
	for d := 90; d >= 1; d-- {
		if _, err := s.RecordCompliance(ctx, start.AddDate(0, 0, -d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AnalyzeForTest(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: loaded %d endpoints in %s", s.Engine(), n, time.Since(start).Round(time.Second))

	base := perfConsole(t, s, o)
	pages := []string{"/console/", "/console/?trend=90", "/console/endpoints", "/console/endpoints?missing=critical",
		"/console/endpoints?search=10.0&sort=lastSeen&order=desc", "/console/endpoints?agentVersion=1.0.0&platform=windows",
		"/console/updates", "/console/updates/" + url.PathEscape(keys[7].Key), "/console/vulnerabilities",
		"/console/vulnerabilities?remediation=Overdue", "/console/vulnerabilities/CVE-2026-10005", "/console/software", "/console/runs"}
	for _, p := range pages {
		var times []time.Duration
		for i := range 21 {
			t0 := time.Now()
			resp, err := base.c.Get(base.url + p)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %d", p, resp.StatusCode)
			}
			if i > 0 { // the first call warms the caches
				times = append(times, time.Since(t0))
			}
		}
		t.Logf("%-62s p50 %6.1f ms  p95 %6.1f ms", p, ms(percentile(times, .5)), ms(percentile(times, .95)))
	}
}

type consoleClient struct {
	url string
	c   *http.Client
}

// perfConsole serves the console on s and signs an administrator of o in.
func perfConsole(t *testing.T, s *store.Store, o store.Org) consoleClient {
	t.Helper()
	ctx := context.Background()
	const email, pw = "perf@example.com", "a long perf password"
	if _, err := admin.CreateUser(ctx, s, "test", o.ID, email, store.RoleAdministrator, pw); err != nil {
		t.Fatal(err)
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := server.New(config.Config{CheckinInterval: time.Minute}, s)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(ts.URL + "/console/login")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(string(body))
	form := url.Values{"email": {email}, "password": {pw}}
	if m != nil {
		form.Set("csrf", m[1])
	}
	resp, err = c.Post(ts.URL+"/console/login", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", resp.StatusCode)
	}
	return consoleClient{url: ts.URL, c: c}
}
