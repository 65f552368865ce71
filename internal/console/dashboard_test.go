package console_test

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
)

// TestDashboardNumbersLeadToTheirLists: the dashboard answers "are we
// patched?" (compliant under the policy / out of compliance, fully
// patched, missing critical, missing any), draws the
// recorded trend, and counts overdue and critical CVEs, endpoints not
// seen, failed deployments of the week and agent versions; every number is
// a link to a list that holds exactly that many.
func TestDashboardNumbersLeadToTheirLists(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := withFeeds(t)
	crit, other, clean := e.Enroll("m1", "win-crit", "windows"), e.Enroll("m2", "deb-other", "linux"), e.Enroll("m3", "win-clean", "windows")
	doc := apitest.Sample("win-crit", "windows")
	doc.Software = append(doc.Software, agentproto.Software{Name: "VLC media player", Publisher: ptr("VideoLAN"), Version: ptr("3.0.18"), InstallType: ptr("msi")})
	crit.MustInventory(doc)
	other.MustInventory(apitest.Sample("deb-other", "linux"))
	doc = apitest.Sample("win-clean", "windows")
	doc.Updates = nil
	clean.MustInventory(doc)
	for ag, v := range map[*apitest.Agent]string{crit: "1.4.0", other: "1.4.0", clean: "1.3.2"} {
		ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: v})
	}
	started, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{crit.ID}})
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := crit.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.4.0"})
	for _, c := range resp.Commands {
		if c.RunID == started.RunID {
			crit.Status(c.ID, "FAILED", "no", nil)
		}
	}
	if err := e.Server.Presence().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	// Two recorded days before today, for the trend.
	for _, back := range []int{5, 40} {
		if _, err := e.Store.RecordCompliance(ctx, time.Now().AddDate(0, 0, -back)); err != nil {
			t.Fatal(err)
		}
	}
	// The CVE matching runs in the background: wait for VLC's CVE.
	deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
	for {
		l, err := e.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Total > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	code, page := b.get("/console/")
	if code != http.StatusOK {
		t.Fatalf("dashboard: %d", code)
	}
	want := map[string]string{
		"/console/endpoints?missing=none":              "1",
		"/console/endpoints?missing=critical":          "1",
		"/console/endpoints?compliance=compliant":      "3",
		"/console/endpoints?compliance=overdue":        "0",
		"/console/endpoints?missing=any":               "2",
		"/console/endpoints?status=connected":          "3",
		"/console/endpoints?notSeenDays=7":             "0",
		"/console/endpoints?agentVersion=1.4.0":        "2",
		"/console/endpoints?agentVersion=1.3.2":        "1",
		"/console/endpoints?platform=windows":          "2",
		"/console/runs?failed=1&days=7":                "1",
		"/console/vulnerabilities?remediation=Overdue": "",
		"/console/vulnerabilities?minCvss=9":           "",
	}
	links := regexp.MustCompile(`<a (?:id="[^"]*" )?href="(/console/[^"]+)">(\d+)</a>`).FindAllStringSubmatch(page, -1)
	got := map[string]string{}
	for _, l := range links {
		got[html.UnescapeString(l[1])] = l[2]
	}
	for href, n := range want {
		if got[href] == "" || (n != "" && got[href] != n) {
			t.Errorf("dashboard link %s shows %q, want %q", href, got[href], n)
		}
	}
	// Each number is what its list counts.
	totals := map[string]*regexp.Regexp{
		"/console/endpoints":       regexp.MustCompile(`<span id="endpoint-total"><strong>(\d+)</strong>`),
		"/console/runs":            regexp.MustCompile(`<p>(\d+) run\(s\)`),
		"/console/vulnerabilities": regexp.MustCompile(`<small>(\d+) CVE\(s\) on your fleet match`),
		"/console/updates":         regexp.MustCompile(`<p id="update-total"><strong>(\d+)</strong> update\(s\)`),
	}
	for href, n := range got {
		path, _, _ := strings.Cut(href, "?")
		re, ok := totals[path]
		if !ok {
			continue
		}
		code, list := b.get(href)
		m := re.FindStringSubmatch(list)
		if code != http.StatusOK || m == nil || m[1] != n {
			t.Errorf("%s: the dashboard says %s, the list (%d) %v", href, n, code, m)
		}
	}
	if got["/console/vulnerabilities?remediation=Overdue"] == "0" || got["/console/vulnerabilities?minCvss=9"] == "0" {
		t.Errorf("VLC's CVE-2023-47359 (9.8) is neither critical nor overdue: %v", got)
	}
	// The trend: the recorded day of 5 days ago and today; 40 days ago only
	// over 90 days.
	day := func(back int) string { return time.Now().UTC().AddDate(0, 0, -back).Format(time.DateOnly) }
	trend := between(page, `id="trend-days"`, "</table>")
	if !strings.Contains(trend, day(5)) || !strings.Contains(trend, day(0)) || strings.Contains(trend, day(40)) ||
		!strings.Contains(page, `class="bar-patched"`) {
		t.Errorf("30-day trend: %s", trend)
	}
	_, page = b.get("/console/?trend=90")
	if trend := between(page, `id="trend-days"`, "</table>"); !strings.Contains(trend, day(40)) {
		t.Errorf("90-day trend: %s", trend)
	}
	if code, _ := b.get("/console/?trend=7"); code != http.StatusBadRequest {
		t.Errorf("trend=7: %d", code)
	}
}

func ptr[T any](v T) *T { return &v }

// withFeeds is a server whose vulnerability feeds are the project's
// fixtures, matched every 50 ms, with the administrator alice@example.com.
func withFeeds(t *testing.T) *apitest.Env {
	t.Helper()
	e := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = 50 * time.Millisecond })
	if _, err := vulndb.ImportFiles(context.Background(), e.Store, []string{"../vulns/testdata/nvd-subset.json", "../vulns/testdata/kev-subset.json",
		"../vulns/testdata/osv-debian12.json"}, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	return e
}
