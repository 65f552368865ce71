package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/sim"
)

// Risk in the console: the updates list says why an update has its
// severity ("fixes 1 CVE · KEV …") and sorts by risk, the update and CVE
// pages show how the risk score is made, and the automation form deploys by
// risk (kev, minCvss, minEpss become DEPLOY_UPDATES filters, and show again
// when the automation is edited).
func TestConsoleShowsSeverityReasonAndDeploysByRisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	apitest.ImportDemoFeeds(t, e.Store)
	var ids []string
	for i := range 60 {
		if sim.Platform(1, i) == "windows" {
			doc := sim.Generate(1, i)
			a := e.Enroll(fmt.Sprintf("sim-%d", i), doc.System.Hostname, "windows")
			a.MustInventory(doc)
			ids = append(ids, a.ID)
		}
	}
	if _, _, err := (&vulndb.Matcher{Store: e.Store, Holder: "test"}).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	b := adminBrowser(t, e)

	code, page := b.get("/console/updates?sort=risk")
	if code != http.StatusOK {
		t.Fatalf("updates by risk: %d", code)
	}
	m := regexp.MustCompile(`<a href="(/console/updates/[^"]+)">([^<]+)</a>`).FindStringSubmatch(page)
	if m == nil || !strings.HasPrefix(m[2], "Mozilla Firefox (x64 en-US) 133.0.3") {
		t.Fatalf("first by risk: %v", m)
	}
	row := between(page, m[0], "</tr>")
	for _, want := range []string{">Critical</span>", "fixes 1 CVE · KEV · CVSS 9.8 · EPSS 0.12889", "risk 72.9"} {
		if !strings.Contains(row, want) {
			t.Errorf("the Firefox row lacks %q:\n%s", want, row)
		}
	}
	_, page = b.get(m[1])
	page = html.UnescapeString(page)
	for _, want := range []string{"the vendor says Unspecified", "CVE-2024-9680: CVSS 9.8 × 5 = 49 + EPSS 0.12889 × 30 = 3.87 + in KEV 20 = 72.9"} {
		if !strings.Contains(page, want) {
			t.Errorf("the Firefox update page lacks %q", want)
		}
	}
	_, page = b.get("/console/vulnerabilities/CVE-2024-9680")
	page = html.UnescapeString(page)
	if risk := between(page, `id="vuln-risk">`, "</dd>"); !strings.Contains(risk, "72.9") || !strings.Contains(risk, "in KEV 20") ||
		!strings.Contains(page, "0.12889") {
		t.Errorf("the CVE page's risk: %q", risk)
	}

	// An endpoint with CVE-2024-9680: its risk is that CVE's.
	var withFirefox string
	for _, id := range ids {
		fs, err := e.Store.EndpointFindings(ctx, e.Org.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(fs, func(f store.EndpointFinding) bool { return f.CVEID == "CVE-2024-9680" }) {
			withFirefox = id
		}
	}
	if withFirefox == "" {
		t.Fatal("no endpoint has CVE-2024-9680")
	}
	_, page = b.get("/console/endpoints/" + withFirefox)
	if risk := html.UnescapeString(between(page, `id="endpoint-risk">`, "</p>")); !strings.Contains(risk, "<strong>72.9</strong>") ||
		!strings.Contains(risk, "CVE-2024-9680: CVSS 9.8 × 5 = 49") {
		t.Errorf("the endpoint page's risk: %q", risk)
	}

	b.get("/console/automations/new")
	form := url.Values{"name": {"KEV within 24 hours"}, "actionType": {"DEPLOY_UPDATES"}, "approvalMode": {"notDeclined"}, "kev": {"true"},
		"minEpss": {"0.1"}, "kind": {"SCHEDULED"}, "targetMode": {"all"}, "scheduleKind": {"RECURRING"}, "freq": {"DAILY"}, "atTime": {"02:00"}}
	if code, loc, body := b.post("/console/automations", form); code != http.StatusSeeOther || loc == "" {
		t.Fatalf("create: %d %s\n%s", code, loc, between(body, `id="form-problems">`, "</div>"))
	}
	list, err := e.Store.ListAutomations(ctx, e.Org.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("automations: %v %v", list, err)
	}
	a, err := e.Admin.GetAutomation(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Mode    string `json:"mode"`
		Filters struct {
			KEV     bool     `json:"kev"`
			MinEPSS *float64 `json:"minEpss"`
			MinCVSS *float64 `json:"minCvss"`
		} `json:"filters"`
	}
	if err := json.Unmarshal(a.Payload, &p); err != nil || p.Mode != "filters" || !p.Filters.KEV || p.Filters.MinEPSS == nil || *p.Filters.MinEPSS != 0.1 ||
		p.Filters.MinCVSS != nil {
		t.Errorf("payload %s", a.Payload)
	}
	_, page = b.get("/console/automations/" + a.ID + "/edit")
	risk := between(page, `id="deploy-risk">`, "</fieldset>")
	if !strings.Contains(risk, `value="true" checked`) || !strings.Contains(risk, `name="minEpss" type="number" min="0" max="1" step="0.001" value="0.1"`) ||
		strings.Contains(page, `id="kept-payload"`) {
		t.Errorf("the edit form's risk fields (payload %s):\n%s", a.Payload, risk)
	}
}
