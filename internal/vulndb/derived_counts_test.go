package vulndb_test

import (
	"context"
	"encoding/csv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/reports"
	"github.com/patchd/patchd/internal/updates"
)

// missingRows reads every missing update of the fleet by endpoint.
func missingRows(t *testing.T, c *client.Client) map[string][]apiv1.Update {
	t.Helper()
	out := map[string][]apiv1.Update{}
	for u, err := range c.Updates(context.Background(), client.UpdateQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		out[u.EndpointID] = append(out[u.EndpointID], u)
	}
	return out
}

// The Firefox update that fixes KEV CVE-2024-9680, which the agent reports
// without a severity, counts as Critical wherever an endpoint's missing
// updates are counted: the endpoints' counters (dashboard, endpoints list
// and its missing=critical filter), the endpoint's missing updates, and the
// compliance deadlines.
func TestDerivedSeverityCountsEverywhere(t *testing.T) {
	env := simWindowsFleet(t, 60)
	ctx := context.Background()
	rows := missingRows(t, env.Admin)
	var firefox, ids []string
	for id, us := range rows {
		ids = append(ids, id)
		for _, u := range us {
			if strings.HasPrefix(u.Title, "Mozilla Firefox (x64 en-US) 133.0.3") && u.KEV {
				firefox = append(firefox, id)
			}
		}
	}
	if len(firefox) == 0 {
		t.Fatal("no endpoint misses the Firefox update fixing CVE-2024-9680")
	}
	states, err := env.Store.PatchStates(ctx, env.Org.ID, ids, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for id, us := range rows {
		critical := 0
		for _, u := range us {
			if u.Severity == "Critical" {
				critical++
			}
		}
		if st := states[id]; st.MissingCritical != critical || st.MissingTotal != len(us) {
			t.Errorf("endpoint %s: counters %d critical of %d, its updates %d of %d", id, st.MissingCritical, st.MissingTotal, critical, len(us))
		}
	}
	listed := map[string]bool{}
	for e, err := range env.Admin.Endpoints(ctx, client.EndpointQuery{Missing: "critical"}) {
		if err != nil {
			t.Fatal(err)
		}
		listed[e.ID] = true
	}
	for _, id := range firefox {
		if !listed[id] {
			t.Errorf("missing=critical leaves out %s, which misses the Firefox update", id)
		}
		d, err := env.Admin.GetEndpoint(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range d.MissingUpdates {
			if strings.HasPrefix(u.Title, "Mozilla Firefox (x64 en-US) 133.0.3") && (u.Severity == nil || *u.Severity != "Critical") {
				t.Errorf("endpoint %s shows the Firefox update as %v", id, deref(u.Severity))
			}
		}
	}
}

// An update that fixes a KEV CVE is overdue after the policy's KEV
// deadline even when its severity's period is longer: 20 days on, with 30
// days for Critical and 14 for KEV, exactly the endpoints missing a KEV
// update are out of compliance; with a KEV deadline of 60 days, none is.
func TestKEVDeadline(t *testing.T) {
	env := simWindowsFleet(t, 60)
	ctx := context.Background()
	rows := missingRows(t, env.Admin)
	var kev []string
	for id, us := range rows {
		if slices.ContainsFunc(us, func(u apiv1.Update) bool { return u.KEV }) {
			kev = append(kev, id)
		}
	}
	if len(kev) == 0 || len(kev) == len(rows) {
		t.Fatalf("%d of %d endpoints miss a KEV update", len(kev), len(rows))
	}
	later := time.Now().AddDate(0, 0, 20)
	for _, c := range []struct {
		kevDays, overdue int
	}{{14, len(kev)}, {60, 0}} {
		p, err := env.Admin.SetCompliancePolicy(ctx, apiv1.CompliancePolicy{CriticalDays: 30, ImportantDays: 3650, ModerateDays: 3650, LowDays: 3650,
			UnspecifiedDays: 3650, KEVDays: c.kevDays})
		if err != nil {
			t.Fatal(err)
		}
		if p.KEVDays != c.kevDays || !strings.Contains(p.Description, "KEV") {
			t.Errorf("policy answered %+v", p)
		}
		d, err := env.Store.Compliance(ctx, env.Org.ID, later)
		if err != nil {
			t.Fatal(err)
		}
		if d.Compliant == nil || d.Endpoints-*d.Compliant != c.overdue {
			t.Errorf("KEV %d days: %d endpoints, %v compliant, want %d overdue", c.kevDays, d.Endpoints, d.Compliant, c.overdue)
		}
	}
	// Left out of a PUT, the KEV deadline is the default; 0 is refused.
	p, err := env.Admin.SetCompliancePolicy(ctx, apiv1.CompliancePolicy{CriticalDays: 15, ImportantDays: 30, ModerateDays: 60, LowDays: 90, UnspecifiedDays: 90})
	if err != nil || p.KEVDays != updates.DefaultKEVDays {
		t.Errorf("without kevDays: %+v, %v", p, err)
	}
	var bad apiv1.CompliancePolicy
	err = env.Admin.Do(ctx, "PUT", "/api/v1/compliance-policy", nil, map[string]int{"criticalDays": 15, "importantDays": 30, "moderateDays": 60,
		"lowDays": 90, "unspecifiedDays": 90, "kevDays": 0}, &bad)
	if !client.IsStatus(err, 422) {
		t.Errorf("kevDays 0: %v", err)
	}
}

// The endpoints carry their risk (the highest of their CVEs', as the
// console's endpoint page says it) and both lists sort by risk: the
// endpoints with KEV CVE-2024-9680 on Firefox first at 72.9.
func TestEndpointAndUpdateRiskInAPI(t *testing.T) {
	env := simWindowsFleet(t, 60)
	ctx := context.Background()
	page, err := env.Admin.ListEndpoints(ctx, client.EndpointQuery{Sort: "risk", Desc: true, PageQuery: client.PageQuery{Limit: 500}})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Items) < 2 {
		t.Fatalf("%d endpoints", len(page.Items))
	}
	first := page.Items[0]
	if first.RiskScore != 72.9 || first.RiskCVE == nil || *first.RiskCVE != "CVE-2024-9680" ||
		first.RiskReason != "CVE-2024-9680: CVSS 9.8 × 5 = 49 + EPSS 0.12889 × 30 = 3.87 + in KEV 20 = 72.9" {
		t.Errorf("riskiest endpoint %s: %v %v %q", first.Name, first.RiskScore, deref(first.RiskCVE), first.RiskReason)
	}
	for i, e := range page.Items {
		if i > 0 && e.RiskScore > page.Items[i-1].RiskScore {
			t.Errorf("%s (risk %v) after %s (%v)", e.Name, e.RiskScore, page.Items[i-1].Name, page.Items[i-1].RiskScore)
		}
		if i%10 != 0 {
			continue
		}
		// What the console's endpoint page shows.
		risk, reason, err := env.Store.EndpointRisk(ctx, env.Org.ID, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		d, err := env.Admin.GetEndpoint(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if e.RiskScore != risk || e.RiskReason != reason || d.RiskScore != risk || d.RiskReason != reason {
			t.Errorf("%s: list %v %q, detail %v %q, console %v %q", e.Name, e.RiskScore, e.RiskReason, d.RiskScore, d.RiskReason, risk, reason)
		}
	}
	ups, err := env.Admin.ListUpdates(ctx, client.UpdateQuery{Sort: "risk", PageQuery: client.PageQuery{Limit: 500}})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Items) == 0 || ups.Items[0].RiskScore != 72.9 {
		t.Fatalf("updates by risk: first %+v", ups.Items[0])
	}
	for i, u := range ups.Items {
		if i > 0 && u.RiskScore > ups.Items[i-1].RiskScore {
			t.Errorf("%s (risk %v) after %s (%v)", u.Title, u.RiskScore, ups.Items[i-1].Title, ups.Items[i-1].RiskScore)
		}
	}
	// Paging by risk neither skips nor repeats a row.
	seen := map[string]bool{}
	n := 0
	for u, err := range env.Admin.Updates(ctx, client.UpdateQuery{Sort: "risk", PageQuery: client.PageQuery{Limit: 37}}) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[u.ID] {
			t.Fatalf("%s listed twice", u.ID)
		}
		seen[u.ID] = true
		n++
	}
	if n != ups.Total {
		t.Errorf("paged %d of %d", n, ups.Total)
	}
	if _, err := env.Admin.ListUpdates(ctx, client.UpdateQuery{Sort: "fear"}); !client.IsStatus(err, 400) {
		t.Errorf("updates sort=fear: %v", err)
	}
	if _, err := env.Admin.ListEndpoints(ctx, client.EndpointQuery{Sort: "fear"}); !client.IsStatus(err, 400) {
		t.Errorf("endpoints sort=fear: %v", err)
	}
}

// The compliance-by-group report counts each group's endpoints compliant
// under the policy, with the KEV deadline and the derived severity: 20
// days on (Critical 30 days, KEV 14), the group of every endpoint has
// exactly the endpoints missing a KEV update overdue, and as many missing
// a critical update as miss an update whose derived severity is Critical.
// Through the API now, every endpoint is compliant; its CSV has the
// report's columns.
func TestComplianceByGroupReport(t *testing.T) {
	env := simWindowsFleet(t, 60)
	ctx := context.Background()
	rows := missingRows(t, env.Admin)
	kev, critical := 0, 0
	for _, us := range rows {
		if slices.ContainsFunc(us, func(u apiv1.Update) bool { return u.KEV }) {
			kev++
		}
		if slices.ContainsFunc(us, func(u apiv1.Update) bool { return u.Severity == "Critical" }) {
			critical++
		}
	}
	if _, err := env.Admin.SetCompliancePolicy(ctx, apiv1.CompliancePolicy{CriticalDays: 30, ImportantDays: 3650, ModerateDays: 3650, LowDays: 3650,
		UnspecifiedDays: 3650, KEVDays: 14}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().AddDate(0, 0, 20)
	fleet, err := env.Store.Compliance(ctx, env.Org.ID, later)
	if err != nil {
		t.Fatal(err)
	}
	def, ok := reports.Lookup("compliance-by-group")
	if !ok {
		t.Fatal("no compliance-by-group report")
	}
	if !strings.Contains(def.Description, "KEV") || !strings.Contains(def.Description, "derived") {
		t.Errorf("the report does not say what compliant means: %q", def.Description)
	}
	run := def.Open(reports.Env{Store: env.Store, OrgID: env.Org.ID, Now: later, ConnectedSince: later.Add(-time.Hour)})
	var all []any
	n := 0
	for row, err := range run.Rows(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if len(row) != len(def.Columns) {
			t.Fatalf("row %v for columns %v", row, def.Columns)
		}
		if row[2] == fleet.Endpoints {
			all = row
		}
	}
	if n == 0 || all == nil {
		t.Fatalf("%d rows, none of the fleet's %d endpoints", n, fleet.Endpoints)
	}
	if all[3] != fleet.Endpoints-kev || all[5] != kev || all[6] != critical {
		t.Errorf("group %v: %v endpoints, %v compliant, %v overdue, %v missing critical; want %d overdue, %d missing critical",
			all[0], all[2], all[3], all[5], all[6], kev, critical)
	}
	rep, err := env.Admin.Report(ctx, "compliance-by-group")
	if err != nil {
		t.Fatal(err)
	}
	// (Now the group of new endpoints holds them too.)
	if !slices.Equal(rep.Columns, def.Columns) || len(rep.Rows) < n {
		t.Fatalf("API report %v, %d rows", rep.Columns, len(rep.Rows))
	}
	for _, row := range rep.Rows {
		if row[2] != row[3] || row[5] != float64(0) {
			t.Errorf("now, group %v: %v endpoints, %v compliant, %v overdue", row[0], row[2], row[3], row[5])
		}
	}
	res, err := env.Admin.ReportCSV(ctx, "compliance-by-group")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	head, err := csv.NewReader(res.Body).Read()
	if err != nil || !slices.Equal(head, def.Columns) {
		t.Errorf("CSV header %v, %v", head, err)
	}
}
