package api_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/vulndb"
	"github.com/patchd/patchd/internal/vulns"
)

var vulnFixtures = []string{"../vulns/testdata/nvd-subset.json", "../vulns/testdata/kev-subset.json", "../vulns/testdata/osv-debian12.json"}

// newVulnEnv starts a server that matches vulnerabilities every 50ms, with
// vulnFixtures imported.
func newVulnEnv(t *testing.T) *apitest.Env {
	t.Helper()
	env := apitest.New(t, func(c *config.Config) { c.VulnMatchInterval = 50 * time.Millisecond })
	if _, err := vulndb.ImportFiles(context.Background(), env.Store, vulnFixtures, vulndb.By{Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	return env
}

func winApp(name, publisher, version string) agentproto.Software {
	return agentproto.Software{Name: name, Publisher: sp(publisher), Version: sp(version), InstallType: sp("msi")}
}

// vulnPage reads one page through the validating client.
func vulnPage(t *testing.T, c *client.Client, q url.Values) (apiv1.Page[apiv1.Vulnerability], error) {
	t.Helper()
	var out apiv1.Page[apiv1.Vulnerability]
	err := c.Do(context.Background(), http.MethodGet, "/api/v1/vulnerabilities", q, nil, &out)
	return out, err
}

func byCVE(items []apiv1.Vulnerability) map[string]apiv1.Vulnerability {
	out := map[string]apiv1.Vulnerability{}
	for _, v := range items {
		out[v.CVEID] = v
	}
	return out
}

func TestVulnerabilitiesList(t *testing.T) {
	ctx := context.Background()
	env := newVulnEnv(t)
	a := env.Enroll("v-1", "pc-a", "windows")
	doc := apitest.Sample("pc-a", "windows")
	doc.Software = []agentproto.Software{
		winApp("Google Chrome", "Google LLC", "116.0.5845.96"),      // CVE-2023-4863 (KEV, 8.8), CVE-2024-4671 (KEV, 9.6), CVE-2024-12053 (8.8), CVE-2025-2783 (KEV, 8.3)
		winApp("VLC media player", "VideoLAN", "3.0.18"),            // CVE-2023-47359 (9.8)
		winApp("Notepad++ (64-bit x64)", "Notepad++ Team", "8.5.6"), // CVE-2023-40031 (7.8)
	}
	a.MustInventory(doc)
	b := env.Enroll("v-2", "pc-b", "windows")
	doc = apitest.Sample("pc-b", "windows")
	doc.Software = []agentproto.Software{winApp("Google Chrome", "Google LLC", "124.0.6367.100")} // not CVE-2023-4863
	b.MustInventory(doc)
	// A second organization with the same software sees only its own fleet.
	other := env.NewOrg("Other")
	otherClient := env.Client(other, perm.All)

	// The list follows the inventory within a few seconds (worker).
	var page apiv1.Page[apiv1.Vulnerability]
	deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
	for {
		var err error
		page, err = vulnPage(t, env.Admin, nil)
		if err != nil {
			t.Fatal(err)
		}
		if (page.Total == 6 && len(byCVE(page.Items)["CVE-2024-4671"].Endpoints) == 2) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := byCVE(page.Items)
	if page.Total != 6 || len(got) != 6 || page.Limit != 100 || page.Offset != 0 {
		t.Fatalf("page = %+v", page)
	}
	// Highest CVSS first, then by CVE id (descending).
	var order []string
	for _, v := range page.Items {
		order = append(order, v.CVEID)
		if v.RiskAccepted != nil {
			t.Errorf("%s: riskAccepted %+v without a decision", v.CVEID, v.RiskAccepted)
		}
	}
	all := []string{"CVE-2023-47359", "CVE-2024-4671", "CVE-2024-12053", "CVE-2023-4863", "CVE-2025-2783", "CVE-2023-40031"}
	if !slices.Equal(order, all) {
		t.Errorf("order = %v", order)
	}
	chrome := got["CVE-2024-4671"]
	if !chrome.CISAKEV || chrome.CVSSScore == nil || *chrome.CVSSScore != 9.6 || *chrome.Severity != "Critical" ||
		*chrome.RemediationStatus != vulns.StatusOverdue || chrome.RemediationDeadline.Format(time.DateOnly) != "2024-06-03" ||
		*chrome.NVDURL != "https://nvd.nist.gov/vuln/detail/CVE-2024-4671" || chrome.Description == nil || chrome.PublishedAt == nil ||
		!slices.Equal(chrome.Software, []string{"Google Chrome"}) || len(chrome.Endpoints) != 2 ||
		chrome.Endpoints[0] != (apiv1.EndpointRef{ID: a.ID, Name: "pc-a"}) || chrome.Endpoints[1].ID != b.ID {
		t.Errorf("CVE-2024-4671 = %+v", chrome)
	}
	vlc := got["CVE-2023-47359"]
	if vlc.CISAKEV || *vlc.RemediationStatus != vulns.StatusDueLater || len(vlc.Endpoints) != 1 ||
		time.Until(*vlc.RemediationDeadline) > 15*24*time.Hour || time.Until(*vlc.RemediationDeadline) < 14*24*time.Hour {
		t.Errorf("CVE-2023-47359 = %+v", vlc)
	}
	// A 3-day Critical period makes it due soon.
	p := vulns.DefaultPolicy()
	p.Critical = 3 * 24 * time.Hour
	if err := env.Store.SetVulnPolicy(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "vulnerability.policy"}, env.Org.ID, p); err != nil {
		t.Fatal(err)
	}
	if page, _ := vulnPage(t, env.Admin, nil); *byCVE(page.Items)["CVE-2023-47359"].RemediationStatus != vulns.StatusDueSoon {
		t.Errorf("with a 3-day policy: %+v", byCVE(page.Items)["CVE-2023-47359"])
	}

	cases := []struct {
		query string
		want  []string
	}{
		{"minCvss=9", []string{"CVE-2023-47359", "CVE-2024-4671"}},
		{"minCvss=9.7", []string{"CVE-2023-47359"}},
		{"minCvss=0", all},
		{"minCvss=8.5", []string{"CVE-2023-47359", "CVE-2024-4671", "CVE-2024-12053", "CVE-2023-4863"}},
		{"kev=1", []string{"CVE-2024-4671", "CVE-2023-4863", "CVE-2025-2783"}},
		{"kev=0", all},
		{"kev=1&minCvss=9", []string{"CVE-2024-4671"}},
		{"limit=2&offset=1", []string{"CVE-2024-4671", "CVE-2024-12053"}},
		{"offset=10", nil},
		// remediation (a patchd addition), under the 3-day Critical policy.
		{"remediation=Overdue", []string{"CVE-2024-4671", "CVE-2023-4863", "CVE-2025-2783"}},
		{"remediation=Due+soon", []string{"CVE-2023-47359"}},
		{"remediation=Due+later", []string{"CVE-2024-12053", "CVE-2023-40031"}},
		{"remediation=Overdue&limit=1&offset=1", []string{"CVE-2023-4863"}},
		{"remediation=Overdue&offset=3", nil},
		{"remediation=Overdue&minCvss=9", []string{"CVE-2024-4671"}},
	}
	for _, c := range cases {
		q, _ := url.ParseQuery(c.query)
		page, err := vulnPage(t, env.Admin, q)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		var ids []string
		for _, v := range page.Items {
			ids = append(ids, v.CVEID)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("%s: %v, want %v", c.query, ids, c.want)
		}
	}

	if page, err := vulnPage(t, env.Admin, url.Values{"remediation": {"Overdue"}, "limit": {"1"}}); err != nil || page.Total != 3 || len(page.Items) != 1 {
		t.Errorf("remediation total: %+v %v", page, err)
	}
	wantStatus(t, errOf(vulnPage(t, env.Admin, url.Values{"remediation": {"late"}})), http.StatusBadRequest, "remediation=late")
	// The compliance the server records counts the same CVEs: critical
	// (CVE-2023-47359, CVE-2024-4671) and overdue.
	if d, err := env.Store.Compliance(ctx, env.Org.ID, time.Now()); err != nil || d.CriticalCVEs != 2 || d.OverdueCVEs != 3 || d.Endpoints != 2 {
		t.Errorf("compliance: %+v %v", d, err)
	}

	// Accepting the risk hides a CVE unless accepted=1.
	exp := time.Now().Add(time.Hour)
	if err := env.Store.SetVulnException(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "vulnerability.accept"},
		&store.VulnException{OrgID: env.Org.ID, CVEID: "CVE-2023-4863", Kind: store.ExceptionCompensatingControl, Reason: "WebP blocked at the proxy",
			ExpiresAt: &exp, CreatedBy: "test", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if page, _ := vulnPage(t, env.Admin, nil); page.Total != 5 || byCVE(page.Items)["CVE-2023-4863"].CVEID != "" {
		t.Errorf("accepted CVE listed: %+v", page)
	}
	// accepted=1 lists it again, marked with the decision (a patchd
	// addition to the Vulnerability shape).
	page, err := vulnPage(t, env.Admin, url.Values{"accepted": {"1"}})
	if err != nil || page.Total != 6 {
		t.Fatalf("accepted=1: total %d, %v", page.Total, err)
	}
	for _, v := range page.Items {
		ra := v.RiskAccepted
		if v.CVEID != "CVE-2023-4863" {
			if ra != nil {
				t.Errorf("%s: riskAccepted %+v without a decision", v.CVEID, ra)
			}
			continue
		}
		if ra == nil || ra.Kind != store.ExceptionCompensatingControl || ra.Reason != "WebP blocked at the proxy" || ra.AcceptedBy != "test" ||
			ra.ExpiresAt == nil || !ra.ExpiresAt.Equal(exp.Truncate(time.Millisecond)) || ra.AcceptedAt.IsZero() {
			t.Errorf("CVE-2023-4863 riskAccepted = %+v", ra)
		}
	}
	// Once expired, the decision no longer hides nor marks the CVE.
	past := time.Now().Add(-time.Minute)
	if err := env.Store.SetVulnException(ctx, &store.AuditEntry{OrgID: env.Org.ID, Actor: "test", Action: "vulnerability.accept"},
		&store.VulnException{OrgID: env.Org.ID, CVEID: "CVE-2023-4863", Kind: store.ExceptionAccepted, Reason: "expired",
			ExpiresAt: &past, CreatedBy: "test", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if page, _ := vulnPage(t, env.Admin, nil); page.Total != 6 || byCVE(page.Items)["CVE-2023-4863"].RiskAccepted != nil {
		t.Errorf("expired decision: %+v", byCVE(page.Items)["CVE-2023-4863"])
	}
	// Isolation: the other organization has no such fleet.
	if page, err := vulnPage(t, otherClient, nil); err != nil || page.Total != 0 || len(page.Items) != 0 {
		t.Errorf("other organization: %+v %v", page, err)
	}

	// Statuses.
	for _, q := range []string{"minCvss=abc", "minCvss=11", "minCvss=-1", "minCvss=NaN", "kev=yes", "kev=true", "accepted=2", "limit=x", "offset=-1"} {
		v, _ := url.ParseQuery(q)
		_, err := vulnPage(t, env.Admin, v)
		var ce *client.Error
		if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || ce.Code != "invalid_request" {
			t.Errorf("%s: %v, want 400 invalid_request", q, err)
		}
	}
	noPerm := env.Client(env.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	var ce *client.Error
	if _, err := vulnPage(t, noPerm, nil); !errors.As(err, &ce) || ce.Status != http.StatusForbidden {
		t.Errorf("without vulnerabilities.view: %v", err)
	}
	env.Call(http.MethodGet, "/api/v1/vulnerabilities", "", nil, false).Want(t, http.StatusUnauthorized, "without a token")
}
