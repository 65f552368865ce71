package console_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

var feedFixtures = []string{"../vulns/testdata/nvd-subset.json", "../vulns/testdata/kev-subset.json"}

// upload posts files as the multipart form field "file".
func (b *browser) upload(path string, files ...string) (int, string) {
	b.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	mw.WriteField("csrf", b.csrf)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			b.t.Fatal(err)
		}
		fw, err := mw.CreateFormFile("file", filepath.Base(name))
		if err != nil {
			b.t.Fatal(err)
		}
		fw.Write(data)
	}
	mw.Close()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

func chromeInventory(a *apitest.Agent, host string) {
	doc := apitest.Sample(host, "windows")
	v, p, it := "116.0.5845.96", "Google LLC", "msi"
	doc.Software = []agentproto.Software{{Name: "Google Chrome", Publisher: &p, Version: &v, InstallType: &it}}
	a.MustInventory(doc)
}

func TestReportsVulnerabilitiesAlertsFeeds(t *testing.T) {
	e := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = 50 * time.Millisecond })
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	if _, err := admin.SetOperator(ctx, e.Store, admin.InstanceActor{Actor: "test"}, "", "alice@example.com", true); err != nil {
		t.Fatal(err)
	}
	a := e.Enroll("pages-1", "pc-alpha", "windows")
	chromeInventory(a, "pc-alpha")
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")

	// Feeds: upload through the console, the result shown, audited.
	b.get("/console/feeds")
	code, body := b.upload("/console/feeds", feedFixtures...)
	if code != http.StatusOK || !strings.Contains(body, `id="import-result"`) || !strings.Contains(body, "kev-subset.json") {
		t.Fatalf("feed upload: %d\n%.1500s", code, body)
	}
	if events, _ := e.Store.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"vulndb.import"}, Actor: "user:alice@example.com"}); len(events) != 1 {
		t.Errorf("the upload is not audited as the user: %+v", events)
	}
	if _, body := b.get("/console/feeds"); !strings.Contains(body, "kev-subset.json") {
		t.Error("the feeds page does not list the upload")
	}
	// Microsoft's security update data is uploaded the same way.
	if code, body := b.upload("/console/feeds", "../vulns/testdata/msrc-2025-Nov.xml"); code != http.StatusOK ||
		!strings.Contains(body, `id="result-msrc">5<`) || !strings.Contains(body, `id="stored-msrc">5<`) {
		t.Errorf("MSRC upload: %d\n%.3000s", code, body)
	}
	// And the Microsoft 365 Apps release history (36 rows, 35 builds by channel).
	if code, body := b.upload("/console/feeds", "../vulns/testdata/m365-apps-builds-2025Q4.json"); code != http.StatusOK ||
		!strings.Contains(body, `id="result-office">36<`) || !strings.Contains(body, `id="stored-office">35<`) {
		t.Errorf("release history upload: %d\n%.3000s", code, body)
	}

	// Vulnerabilities: the matcher finds Chrome's CVEs on pc-alpha.
	waitFor(t, "the fleet's vulnerabilities", func() bool {
		_, body := b.get("/console/vulnerabilities")
		return strings.Contains(body, "CVE-2024-4671") && strings.Contains(body, `<a href="/console/endpoints?cve=CVE-2024-4671" class="nowrap">1 endpoint</a>`)
	})
	_, body = b.get("/console/vulnerabilities?minCvss=9&kev=1")
	if !strings.Contains(body, "CVE-2024-4671") || strings.Contains(body, `id="CVE-2023-4863"`) || !strings.Contains(body, "Overdue") {
		t.Errorf("minCvss=9&kev=1 should show CVE-2024-4671 (9.6) and not CVE-2023-4863 (8.8)\n%.3000s", body)
	}
	// "Fixed by": the version that fixes it (Vulnerability.remediatedBy).
	if !strings.Contains(body, `Google Chrome <strong>124.0.6367.201</strong> <small>(1 endpoint)</small>`) {
		t.Errorf("the fixing version of CVE-2024-4671 is not shown\n%.3000s", body)
	}
	if code, _ := b.get("/console/vulnerabilities?minCvss=11"); code != http.StatusBadRequest {
		t.Errorf("minCvss=11: %d, want 400", code)
	}
	code, loc, _ := b.post("/console/vulnerabilities/CVE-2024-4671/exception", url.Values{"kind": {"compensating_control"},
		"reason": {"Chrome blocked at the proxy"}, "expires": {"90d"}, "back": {"?minCvss=9"}})
	if code != http.StatusSeeOther || loc != "/console/vulnerabilities?minCvss=9" {
		t.Fatalf("accept: %d %s", code, loc)
	}
	xs, _ := e.Store.ListVulnExceptions(ctx, e.Org.ID, "", time.Now())
	if len(xs) != 1 || xs[0].CreatedBy != "user:alice@example.com" || xs[0].Kind != store.ExceptionCompensatingControl || xs[0].ExpiresAt == nil {
		t.Fatalf("exceptions after the form: %+v", xs)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "vulnerability.compensating_control", Actor: "user:alice@example.com"}); len(entries) != 1 {
		t.Errorf("the decision is not audited as the user: %+v", entries)
	}
	if _, body := b.get("/console/vulnerabilities"); strings.Contains(body, `id="CVE-2024-4671"`) || !strings.Contains(body, "Chrome blocked at the proxy") {
		t.Error("an accepted CVE should leave the list and show among the decisions")
	}
	if _, body := b.get("/console/vulnerabilities?accepted=1"); !strings.Contains(body, `id="CVE-2024-4671"`) {
		t.Error("accepted=1 should list the accepted CVE")
	}
	if code, _, _ := b.post("/console/vulnerabilities/CVE-2024-4671/exception", url.Values{"kind": {"accepted"}, "reason": {" "}, "expires": {"30d"}}); code != http.StatusSeeOther {
		t.Errorf("an empty reason: %d", code)
	}
	if code, loc, _ := b.post("/console/vulnerabilities/CVE-2024-4671/revoke", url.Values{}); code != http.StatusSeeOther || loc != "/console/vulnerabilities" {
		t.Fatalf("revoke: %d %s", code, loc)
	}
	if xs, _ := e.Store.ListVulnExceptions(ctx, e.Org.ID, "", time.Now()); len(xs) != 0 {
		t.Errorf("after revoke: %+v", xs)
	}

	// Reports: the catalog, a page, the CSV.
	_, body = b.get("/console/reports")
	if !strings.Contains(body, `href="/console/reports/endpoints.csv"`) || !strings.Contains(body, ">Vulnerabilities</h2>") {
		t.Errorf("the catalog lacks the endpoints report or a category\n%.1000s", body)
	}
	if code, body := b.get("/console/reports/endpoints?limit=1"); code != http.StatusOK || !strings.Contains(body, "pc-alpha") || !strings.Contains(body, "Rows 1–1") {
		t.Errorf("endpoints report page: %d\n%.2000s", code, body)
	}
	if code, _ := b.get("/console/reports/no-such-report"); code != http.StatusNotFound {
		t.Errorf("unknown report: %d", code)
	}
	resp, err := b.c.Get(e.URL + "/console/reports/endpoints.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(resp.Header.Get("Content-Disposition"), "attachment") ||
		len(rows) != 2 || rows[0][0] != "Endpoint" || rows[1][0] != "pc-alpha" {
		t.Errorf("CSV: %d %v %q", resp.StatusCode, err, rows)
	}

	// Alert rules: create through the API's code, edit, disable, test, delete.
	b.get("/console/alerts")
	code, loc, _ = b.post("/console/alerts", url.Values{"name": {"New machines"}, "trigger": {"NEW_ENDPOINT"}, "webhookUrl": {"https://hooks.example.com/new"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/alerts/") {
		t.Fatalf("create alert rule: %d %s", code, loc)
	}
	id := strings.TrimPrefix(loc, "/console/alerts/")
	if _, body := b.get("/console/alerts"); !strings.Contains(body, "New machines") {
		t.Error("the new rule is not listed")
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "alert.create", Actor: "user:alice@example.com"}); len(entries) != 1 {
		t.Errorf("creation not audited as the user: %+v", entries)
	}
	// A refused rule: the form again, its problems in the form's labels.
	if code, _, body := b.post("/console/alerts", url.Values{"name": {""}, "trigger": {"NOPE"}}); code != http.StatusUnprocessableEntity {
		t.Errorf("an invalid rule: %d", code)
	} else if !strings.Contains(body, "Trigger: must be one of") {
		t.Errorf("the API's field problems are not shown\n%.1500s", body)
	}
	b.get("/console/alerts/" + id)
	if code, _, _ := b.post("/console/alerts/"+id, url.Values{"name": {"New machines (ops)"}, "trigger": {"NEW_ENDPOINT"}, "threshold": {"0"},
		"webhookUrl": {"https://hooks.example.com/x"}, "emailTo": {"ops@example.com"}}); code != http.StatusSeeOther {
		t.Fatalf("edit: %d", code)
	}
	rule, err := e.Store.GetAlertRule(ctx, e.Org.ID, id)
	if err != nil || rule.Name != "New machines (ops)" || rule.EmailTo == nil || *rule.EmailTo != "ops@example.com" {
		t.Errorf("after the edit: %+v %v", rule, err)
	}
	// A refused edit is PATCH /api/v1/alerts/{id}'s 422, in the form's labels; nothing changed.
	if code, _, body := b.post("/console/alerts/"+id, url.Values{"name": {"renamed"}, "trigger": {"NEW_ENDPOINT"}, "threshold": {"-1"},
		"emailTo": {"ops@example.com"}}); code != http.StatusUnprocessableEntity || !strings.Contains(body, "Threshold: must be") {
		t.Errorf("a refused edit: %d\n%.1500s", code, body)
	}
	if rule, _ := e.Store.GetAlertRule(ctx, e.Org.ID, id); rule.Name != "New machines (ops)" {
		t.Errorf("a refused edit changed the rule: %+v", rule)
	}
	if code, _, _ := b.post("/console/alerts/"+id+"/enabled", url.Values{"enabled": {"false"}}); code != http.StatusSeeOther {
		t.Fatalf("disable: %d", code)
	}
	if rule, _ := e.Store.GetAlertRule(ctx, e.Org.ID, id); rule.Enabled {
		t.Error("the rule is still enabled")
	}
	if code, _, _ := b.post("/console/alerts/"+id+"/test", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("test: %d", code)
	}
	if _, body := b.get("/console/alerts/" + id); !strings.Contains(body, "Test of alert rule") {
		t.Errorf("the test event is not shown\n%.2000s", body)
	}
	for _, action := range []string{"alert.update", "alert.disable", "alert.test"} {
		if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: action, Actor: "user:alice@example.com"}); len(entries) != 1 {
			t.Errorf("%s not audited as the user: %+v", action, entries)
		}
	}
	// The test event went through POST /api/v1/alerts/{id}/test: one
	// transaction raised it and wrote its audit entry, with the rule's name.
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "alert.test"}); len(entries) != 1 || entries[0].Summary["name"] != "New machines (ops)" {
		t.Errorf("alert.test audit entry: %+v", entries)
	}
	if code, loc, _ := b.post("/console/alerts/"+id+"/delete", url.Values{}); code != http.StatusSeeOther || loc != "/console/alerts" {
		t.Fatalf("delete: %d %s", code, loc)
	}
	if _, err := e.Store.GetAlertRule(ctx, e.Org.ID, id); err == nil {
		t.Error("the rule is still there")
	}
}

func TestNewPagesReadOnlyAndIsolation(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	e.Enroll("iso-1", "acme-pc", "windows")

	// Globex: an endpoint, an alert rule and a decision of its own.
	other := e.NewOrg("Globex")
	addUser(t, e, other, "admin@globex.example", store.RoleAdministrator)
	tok, err := admin.CreateEnrollToken(ctx, e.Store, "test", other.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	acmeToken := e.EnrollToken
	e.EnrollToken = tok.Token
	e.Enroll("iso-2", "globex-secret-pc", "windows")
	e.EnrollToken = acmeToken
	g := newBrowser(t, e.URL)
	g.signIn("admin@globex.example")
	g.get("/console/alerts")
	code, loc, _ := g.post("/console/alerts", url.Values{"name": {"Globex secret rule"}, "trigger": {"NEW_ENDPOINT"}, "emailTo": {"sec@globex.example"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/alerts/") {
		t.Fatalf("Globex creates a rule: %d %s", code, loc)
	}
	globexRule := strings.TrimPrefix(loc, "/console/alerts/")
	if code, _, _ := g.post("/console/vulnerabilities/CVE-2023-4863/exception", url.Values{"kind": {"accepted"}, "reason": {"Globex secret reason"}, "expires": {"never"}}); code != http.StatusSeeOther {
		t.Fatalf("Globex accepts a risk: %d", code)
	}

	// The Read-only user sees the pages without their write buttons.
	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	for p, buttons := range map[string][]string{
		"/console/reports":                    nil,
		"/console/reports/endpoints":          nil,
		"/console/vulnerabilities":            {"Accept risk", "Revoke"},
		"/console/alerts":                     {"Create alert rule"},
		"/console/feeds":                      {"Upload feed files", `type="file"`},
		"/console/vulnerabilities?accepted=1": {"Accept risk"},
	} {
		code, body := r.get(p)
		if code != http.StatusOK {
			t.Errorf("Read-only GET %s: %d", p, code)
		}
		for _, btn := range buttons {
			if strings.Contains(body, btn) {
				t.Errorf("Read-only %s shows %q", p, btn)
			}
		}
		for _, secret := range []string{"globex-secret-pc", "Globex secret"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows Globex's %q to Acme", p, secret)
			}
		}
	}
	if code, body := r.get("/console/reports/endpoints.csv"); code != http.StatusOK || strings.Contains(body, "globex-secret-pc") || !strings.Contains(body, "acme-pc") {
		t.Errorf("Acme's CSV: %d\n%s", code, body)
	}
	r.get("/console/alerts")
	for _, p := range []string{"/console/alerts", "/console/alerts/" + globexRule, "/console/alerts/" + globexRule + "/enabled",
		"/console/alerts/" + globexRule + "/delete", "/console/alerts/" + globexRule + "/test",
		"/console/vulnerabilities/CVE-2023-4863/exception", "/console/vulnerabilities/CVE-2023-4863/revoke"} {
		if code, _, _ := r.post(p, url.Values{"name": {"x"}, "trigger": {"NEW_ENDPOINT"}, "kind": {"accepted"}, "reason": {"r"}, "expires": {"never"}}); code != http.StatusForbidden {
			t.Errorf("Read-only POST %s: %d, want 403", p, code)
		}
	}
	if code, _ := r.upload("/console/feeds", feedFixtures[1]); code != http.StatusForbidden {
		t.Errorf("Read-only feed upload: %d, want 403", code)
	}

	// Acme's administrator can neither see nor change Globex's rule or decision.
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	if code, _ := a.get("/console/alerts/" + globexRule); code != http.StatusNotFound {
		t.Errorf("Acme opens Globex's rule: %d, want 404", code)
	}
	a.get("/console/alerts")
	for _, op := range []string{"/enabled", "/delete", "/test", ""} {
		a.post("/console/alerts/"+globexRule+op, url.Values{"name": {"hijacked"}, "trigger": {"NEW_ENDPOINT"}, "enabled": {"false"}})
	}
	rule, err := e.Store.GetAlertRule(ctx, other.ID, globexRule)
	if err != nil || rule.Name != "Globex secret rule" || !rule.Enabled || rule.Events != 0 {
		t.Errorf("Globex's rule changed through Acme's console: %+v %v", rule, err)
	}
	if code, _, _ := a.post("/console/vulnerabilities/CVE-2023-4863/revoke", url.Values{}); code != http.StatusSeeOther {
		t.Errorf("Acme revokes a decision it does not have: %d", code)
	}
	if xs, _ := e.Store.ListVulnExceptions(ctx, other.ID, "", time.Now()); len(xs) != 1 {
		t.Errorf("Globex's decision went away: %+v", xs)
	}
	if _, body := a.get("/console/vulnerabilities?accepted=1"); strings.Contains(body, "Globex secret reason") {
		t.Error("Acme sees Globex's decision")
	}
}
