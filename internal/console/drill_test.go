package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// formOf reads the hidden and selected values of the form with that id,
// as the browser would post them.
func formOf(t *testing.T, page, id string) url.Values {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no form %s", id)
	}
	form := page[i:]
	form = form[:strings.Index(form, "</form>")]
	v := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(form, -1) {
		v.Add(m[1], html.UnescapeString(m[2]))
	}
	for _, m := range regexp.MustCompile(`<select id="[^"]*" name="([^"]+)"><option value="([^"]*)"`).FindAllStringSubmatch(form, -1) {
		v.Set(m[1], m[2])
	}
	return v
}

// TestDrillDownsEndInAnAction: CVE → the updates that fix it and the
// endpoints it affects → deploy the fix; update → the CVEs it fixes and the
// endpoints missing it → deploy; endpoint → its CVEs and missing updates;
// software title → versions → endpoints → uninstall. Each action is run
// through the API and reaches exactly the endpoints the page named.
func TestDrillDownsEndInAnAction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := withFeeds(t)
	debian := func(host, latest string) *apitest.Agent {
		ag := e.Enroll("m-"+host, host, "linux")
		doc := apitest.Sample(host, "linux")
		doc.System.OSVersion = ptr("12.5")
		doc.Software = []agentproto.Software{{Name: "libssl3", Version: ptr("3.0.11-1~deb12u1"), InstallType: ptr("deb"), SourcePackage: ptr("openssl")}}
		doc.Updates = []agentproto.Update{{Title: "openssl " + latest, PackageName: ptr("openssl"), Distro: ptr("debian"),
			InstalledVersion: ptr("3.0.11-1~deb12u1"), LatestVersion: ptr(latest), Severity: ptr("Important"), Source: "OS - Mandatory"}}
		ag.MustInventory(doc)
		return ag
	}
	deb1, deb2 := debian("deb-01", "3.0.11-1~deb12u2"), debian("deb-02", "3.0.11-1~deb12u2")
	win := e.Enroll("m-win", "win-01", "windows")
	doc := apitest.Sample("win-01", "windows")
	doc.Software = append(doc.Software, agentproto.Software{Name: "VLC media player", Publisher: ptr("VideoLAN"), Version: ptr("3.0.18"), InstallType: ptr("msi")})
	win.MustInventory(doc)
	// The CVE matching runs in the background.
	deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
	for {
		l, err := e.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{})
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, v := range l.Items {
			found = found || (v.CVEID == "CVE-2023-5363" && len(v.Endpoints) == 2)
		}
		if found || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")

	// CVE → fixing update → deploy the fix to the affected endpoints.
	code, page := b.get("/console/vulnerabilities/cve-2023-5363")
	if code != http.StatusOK || !strings.Contains(page, `id="vuln-fixes"`) || !strings.Contains(page, ">deb-01<") || !strings.Contains(page, ">deb-02<") ||
		strings.Contains(page, ">win-01<") {
		t.Fatalf("CVE page: %d\n%s", code, between(page, "<main", "</main>"))
	}
	key := regexp.MustCompile(`<a href="/console/updates/([^"]+)">openssl`).FindStringSubmatch(page)
	if key == nil {
		t.Fatalf("no fixing update:\n%s", between(page, `id="vuln-fixes"`, "</table>"))
	}
	fix := formOf(t, page, "deploy-fix")
	if fix.Get("filter") != "cve=CVE-2023-5363" || fix.Get("type") != "DEPLOY_UPDATES" || fix.Get("cves") != "CVE-2023-5363" {
		t.Fatalf("deploy form: %v", fix)
	}
	code, loc, _ := b.post("/console/actions", fix)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("deploy the fix: %d %s", code, loc)
	}
	run, err := e.Admin.GetRun(ctx, strings.TrimPrefix(loc, "/console/runs/"))
	if err != nil || run.Total != 2 || run.Name != "Fix CVE-2023-5363" {
		t.Fatalf("the fix's run: %+v %v", run, err)
	}
	for _, ag := range []*apitest.Agent{deb1, deb2} {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
		if len(resp.Commands) != 1 || resp.Commands[0].Type != "DEPLOY_UPDATES" || !strings.Contains(string(resp.Commands[0].Payload), "openssl") {
			t.Errorf("%s commands: %+v", ag.ID, resp.Commands)
		}
	}

	// Update → the CVEs it fixes, the endpoints missing it → deploy, approve.
	updatePath, _ := url.PathUnescape(key[1])
	code, page = b.get("/console/updates/" + key[1])
	if code != http.StatusOK || !strings.Contains(between(page, `id="update-fixes"`, "</table>"), "CVE-2023-5363") ||
		!strings.Contains(page, ">deb-01<") || !strings.Contains(page, "Deploy to the 2 endpoint(s) missing it") {
		t.Fatalf("update page: %d\n%s", code, between(page, "<main", "</main>"))
	}
	if f := formOf(t, page, "deploy-update"); f.Get("filter") != "updateKey="+url.QueryEscape(updatePath) || f.Get("keys") != updatePath {
		t.Errorf("update deploy form: %v", f)
	}
	code, loc, _ = b.post("/console/updates/approvals", url.Values{"key": {updatePath}, "status": {"APPROVED"}, "back": {"/console/updates/" + key[1]}})
	if code != http.StatusSeeOther || loc != "/console/updates/"+key[1] {
		t.Errorf("approve from the update page: %d %s", code, loc)
	}
	if _, page = b.get("/console/updates/" + key[1]); !strings.Contains(between(page, `id="update-facts"`, "</dl>"), "Approved") {
		t.Errorf("the approval is not shown: %s", between(page, `id="update-facts"`, "</dl>"))
	}

	// Endpoint → its CVEs and missing updates, each a link.
	_, page = b.get("/console/endpoints/" + deb1.ID)
	if !strings.Contains(between(page, `id="endpoint-cves"`, "</table>"), `href="/console/vulnerabilities/CVE-2023-5363"`) ||
		!strings.Contains(between(page, `id="endpoint-missing"`, "</table>"), `href="/console/updates/`+key[1]+`"`) {
		t.Errorf("endpoint page:\n%s", between(page, `id="endpoint-missing"`, `id="h-sw"`))
	}

	// The endpoints list takes the same filters.
	for q, want := range map[string]string{"updateKey=" + url.QueryEscape(updatePath): "2", "cve=CVE-2023-5363": "2",
		"software=VLC+media+player": "1", "software=VLC+media+player&softwareVersion=3.0.18": "1", "software=VLC+media+player&softwareVersion=9": "0"} {
		_, list := b.get("/console/endpoints?" + q)
		if m := regexp.MustCompile(`<span id="endpoint-total"><strong>(\d+)</strong>`).FindStringSubmatch(list); m == nil || m[1] != want {
			t.Errorf("endpoints?%s: %v, want %s", q, m, want)
		}
	}

	// Software title → versions → endpoints → uninstall.
	code, page = b.get("/console/software/title?name=VLC+media+player")
	if code != http.StatusOK || !strings.Contains(between(page, `id="title-versions"`, "</table>"), "3.0.18") || !strings.Contains(page, ">win-01<") {
		t.Fatalf("title page: %d\n%s", code, between(page, "<main", "</main>"))
	}
	_, page = b.get("/console/software/title?name=VLC+media+player&version=3.0.18")
	un := formOf(t, page, "uninstall-title")
	if un.Get("filter") != "software=VLC+media+player&softwareVersion=3.0.18" || un.Get("name") != "VLC media player" {
		t.Fatalf("uninstall form: %v", un)
	}
	if code, loc, _ := b.post("/console/actions", un); code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("uninstall: %d %s", code, loc)
	} else if r, _ := e.Admin.GetRun(ctx, strings.TrimPrefix(loc, "/console/runs/")); r.Total != 1 {
		t.Errorf("uninstall run: %+v", r)
	}

	// Mistakes are pages, not errors.
	for path, want := range map[string]int{
		"/console/vulnerabilities/NOT-A-CVE":       http.StatusBadRequest,
		"/console/vulnerabilities/CVE-2099-0001":   http.StatusNotFound,
		"/console/updates/no-such-update":          http.StatusNotFound,
		"/console/software/title":                  http.StatusBadRequest,
		"/console/software/title?name=Nothing":     http.StatusNotFound,
		"/console/endpoints?softwareVersion=3.0.1": http.StatusBadRequest,
	} {
		if code, _ := b.get(path); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
}

// TestUpdatesListSorts: the updates list sorts by its column headers both
// ways (aria-sort tells which), keeps its filters in the links, and
// refuses an order it does not know.
func TestUpdatesListSorts(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.Enroll("m1", "pc-1", "windows").MustInventory(apitest.Sample("pc-1", "windows")) // KB5048685 (Critical), Mozilla Firefox
	b := adminBrowser(t, e)
	first := func(q string) string {
		t.Helper()
		code, page := b.get("/console/updates?" + q)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", q, code)
		}
		m := regexp.MustCompile(`<a href="/console/updates/[^"]+">([^<]+)</a>`).FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s: no update listed", q)
		}
		return m[1]
	}
	for q, want := range map[string]string{"sort=severity": "2026-11 Cumulative", "sort=severity&order=desc": "Mozilla Firefox",
		"sort=title": "2026-11 Cumulative", "sort=title&order=desc": "Mozilla Firefox"} {
		if got := first(q); !strings.HasPrefix(got, want) {
			t.Errorf("%s: first %q, want %q", q, got, want)
		}
	}
	_, page := b.get("/console/updates?source=OS&sort=severity")
	if !strings.Contains(page, `aria-sort="ascending"><a href="/console/updates?order=desc&amp;sort=severity&amp;source=OS">Severity</a>`) {
		t.Errorf("severity header:\n%s", between(page, "<thead>", "</thead>"))
	}
	for _, q := range []string{"sort=secret", "order=up"} {
		if code, _ := b.get("/console/updates?" + q); code != http.StatusBadRequest {
			t.Errorf("%s: %d", q, code)
		}
	}
}

// TestUpdatesBulkBar: above the updates list, "All N that match" makes
// Approve/Decline work on every update the filters match, not only the
// ticked ones; "Deploy selected" deploys the ticked updates to every
// endpoint missing one of them, in one run; nothing ticked is refused
// with nothing done.
func TestUpdatesBulkBar(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	for _, host := range []string{"pc-1", "pc-2"} {
		e.Enroll("m-"+host, host, "windows").MustInventory(apitest.Sample(host, "windows")) // KB5048685 (Critical), Mozilla Firefox
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	_, page := b.get("/console/updates")
	bar, table := strings.Index(page, `id="bulk-bar"`), strings.Index(page, `<table class="list"`)
	if bar < 0 || table < 0 || bar > table || !strings.Contains(page, `id="deploy-selected"`) || !strings.Contains(page, `id="all-matching"`) {
		t.Fatalf("the bulk bar is not above the list:\n%s", between(page, "<main", "</main>"))
	}
	var keys []string
	for _, m := range regexp.MustCompile(`name="key" value="([^"]+)"`).FindAllStringSubmatch(page, -1) {
		keys = append(keys, m[1])
	}
	if len(keys) != 2 {
		t.Fatalf("keys on the page: %v", keys)
	}
	approval := func() map[string]string {
		t.Helper()
		p, err := e.Admin.ListUpdates(ctx, client.UpdateQuery{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, u := range p.Items {
			out[u.Severity] = u.Approval
		}
		return out
	}

	// All that match severity=Critical, nothing ticked: only the Critical one.
	code, _, _ := b.post("/console/updates/approvals", url.Values{"allMatching": {"1"}, "status": {"APPROVED"}, "back": {"?severity=Critical"}})
	if got := approval(); code != http.StatusSeeOther || got["Critical"] != "APPROVED" || len(got) != 2 || got["Unspecified"] == "APPROVED" {
		t.Fatalf("approve all matching Critical: %d %v", code, got)
	}
	// Nothing ticked, not all: refused, nothing done.
	if code, loc, _ := b.post("/console/updates/deploy", url.Values{"back": {"?"}}); code == http.StatusSeeOther && strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("a deployment of nothing started a run: %s", loc)
	}
	// Deploy the ticked Firefox update: one run over both endpoints.
	var firefox string
	for _, k := range keys {
		if !strings.HasPrefix(strings.ToUpper(k), "KB") {
			firefox = k
		}
	}
	code, loc, body := b.post("/console/updates/deploy", url.Values{"key": {firefox}, "approvalMode": {"notDeclined"}, "back": {"?"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("deploy selected: %d %s %.1000s", code, loc, body)
	}
	run, err := e.Admin.GetRun(ctx, strings.TrimPrefix(loc, "/console/runs/"))
	if err != nil || run.ActionType != "DEPLOY_UPDATES" || run.Total != 2 {
		t.Fatalf("the run: %+v %v", run, err)
	}
}
