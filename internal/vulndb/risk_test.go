package vulndb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/sim"
)

// simWindowsFleet enrolls the Windows endpoints among the first n of
// simulated fleet 1, imports the demo feeds (the real NVD, KEV, MSRC
// records and the EPSS rows of internal/vulns/testdata) and matches them.
func simWindowsFleet(t *testing.T, n int) *apitest.Env {
	t.Helper()
	ctx := context.Background()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = time.Hour })
	apitest.ImportDemoFeeds(t, env.Store)
	for i := range n {
		if sim.Platform(1, i) != "windows" {
			continue
		}
		doc := sim.Generate(1, i)
		env.Enroll(fmt.Sprintf("sim-%d", i), doc.System.Hostname, "windows").MustInventory(doc)
	}
	m := &vulndb.Matcher{Store: env.Store, Holder: "test"}
	if _, _, err := m.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	return env
}

// The Firefox case: CVE-2024-9680 (CISA-ADP's CVSS 9.8, in
// CISA's KEV catalog) on Firefox 128.0.3 makes the winget update to
// Firefox 133.0.3, which the agent reports without a severity, Critical,
// with its reason; the vendor's Unspecified is kept beside it. An
// application update that fixes nothing known stays Unspecified.
func TestApplicationUpdateSeverityFromFixedCVEs(t *testing.T) {
	env := simWindowsFleet(t, 60)
	ctx := context.Background()
	var firefox, plain int
	for u, err := range env.Admin.Updates(ctx, client.UpdateQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if u.Source != "Applications" {
			continue
		}
		if strings.HasPrefix(u.Title, "Mozilla Firefox (x64 en-US) 133.0.3") && hasCVE(u.CVEs, "CVE-2024-9680") {
			firefox++
			if u.Severity != "Critical" || u.VendorSeverity != "Unspecified" || !u.KEV || u.MaxCVSS == nil || *u.MaxCVSS != 9.8 ||
				u.CVECount < 1 || !strings.HasPrefix(u.SeverityReason, "fixes ") || !strings.Contains(u.SeverityReason, " · KEV · CVSS 9.8") {
				t.Errorf("Firefox update: severity %q (vendor %q), reason %q, kev %v, cves %d", u.Severity, u.VendorSeverity, u.SeverityReason, u.KEV, u.CVECount)
			}
			// 5 × 9.8 + 30 × 0.12889 (EPSS of 2025-08-15) + 20 (KEV).
			if u.RiskCVE == nil || *u.RiskCVE != "CVE-2024-9680" || u.RiskScore != 72.9 || u.MaxEPSS == nil || *u.MaxEPSS != 0.12889 ||
				u.RiskReason != "CVE-2024-9680: CVSS 9.8 × 5 = 49 + EPSS 0.12889 × 30 = 3.87 + in KEV 20 = 72.9" {
				t.Errorf("Firefox update risk %v of %v: %q", u.RiskScore, u.RiskCVE, u.RiskReason)
			}
		}
		if u.CVECount == 0 {
			plain++
			if u.Severity != "Unspecified" || u.SeverityReason != "" || u.KEV || u.RiskScore != 0 {
				t.Errorf("%s fixes nothing known: severity %q, reason %q, risk %v", u.Title, u.Severity, u.SeverityReason, u.RiskScore)
			}
		}
	}
	if firefox == 0 || plain == 0 {
		t.Fatalf("%d Firefox 133.0.3 updates fixing CVE-2024-9680, %d application updates fixing nothing known", firefox, plain)
	}
	// The severity filter reads the derived severity.
	page, err := env.Admin.ListUpdates(ctx, client.UpdateQuery{Severity: "Critical", PageQuery: client.PageQuery{Limit: 500}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, u := range page.Items {
		found = found || strings.HasPrefix(u.Title, "Mozilla Firefox (x64 en-US) 133.0.3")
	}
	if !found {
		t.Error("severity=Critical leaves out the Firefox update")
	}
}

// The CVE list sorted by risk (sort=risk, a patchd addition) puts the KEV
// CVEs of high CVSS and EPSS first, each with its score's reason; minEpss
// keeps the CVEs of at least that EPSS; a bad sort is a 400.
func TestVulnerabilitiesByRisk(t *testing.T) {
	env := simWindowsFleet(t, 60)
	ctx := context.Background()
	page, err := env.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{Sort: "risk", PageQuery: client.PageQuery{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i, v := range page.Items {
		ids = append(ids, v.CVEID)
		if i > 0 && v.RiskScore > page.Items[i-1].RiskScore {
			t.Errorf("%s (risk %v) after %s (%v)", v.CVEID, v.RiskScore, page.Items[i-1].CVEID, page.Items[i-1].RiskScore)
		}
	}
	if len(ids) < 3 || ids[0] != "CVE-2024-9680" || page.Items[0].RiskScore != 72.9 || page.Items[0].EPSS == nil || *page.Items[0].EPSSPercentile != 0.93758 ||
		page.Items[0].RiskReason != "CVSS 9.8 × 5 = 49 + EPSS 0.12889 × 30 = 3.87 + in KEV 20 = 72.9" {
		t.Fatalf("by risk: %v, first %+v", ids, page.Items[0])
	}
	page, err = env.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{MinEPSS: "0.1", Sort: "risk"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range page.Items {
		if v.EPSS == nil || *v.EPSS < 0.1 {
			t.Errorf("minEpss 0.1 lists %s (EPSS %v)", v.CVEID, v.EPSS)
		}
	}
	if page.Total == 0 {
		t.Error("minEpss 0.1 lists nothing")
	}
	if _, err := env.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{Sort: "fear"}); !client.IsStatus(err, 400) {
		t.Errorf("sort=fear: %v", err)
	}
}

func hasCVE(list []string, id string) bool {
	for _, c := range list {
		if c == id {
			return true
		}
	}
	return false
}
