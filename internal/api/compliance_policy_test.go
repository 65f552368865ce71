package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestCompliancePolicyAPI: GET /api/v1/compliance-policy answers the
// defaults (CISA BOD 19-02's 15 and 30 days first) with the sentence that
// says them; PUT sets the five periods (audited as compliance_policy.set),
// refuses missing or out of range ones with every field (422) without
// changing anything, and is for roles holding every permission
// (endpoints.view reads); another organization keeps its own. The report
// by group and the endpoint filter use it.
func TestCompliancePolicyAPI(t *testing.T) {
	e, ctx := apitest.NewParallel(t)

	defaults := apiv1.CompliancePolicy{CriticalDays: 15, ImportantDays: 30, ModerateDays: 60, LowDays: 90, UnspecifiedDays: 90, KEVDays: 14}
	p, err := e.Admin.CompliancePolicy(ctx)
	if err != nil || p.Description == "" {
		t.Fatalf("defaults: %+v %v", p, err)
	}
	p.Description = ""
	if p != defaults {
		t.Fatalf("defaults: %+v", p)
	}
	want := apiv1.CompliancePolicy{CriticalDays: 7, ImportantDays: 14, ModerateDays: 30, LowDays: 3650, UnspecifiedDays: 1, KEVDays: 3}
	got, err := e.Admin.SetCompliancePolicy(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != "An endpoint is compliant when no update has been missing longer than its severity allows: Critical 7 days, Important 14, Moderate 30, Low 3650, Unspecified 1, and 3 days for an update that fixes a CVE in CISA's KEV catalog (severity derived from the CVEs an update fixes; counted from when the endpoint first reported it missing; declined updates do not count)." {
		t.Errorf("description %q", got.Description)
	}
	read := func(c *client.Client) apiv1.CompliancePolicy {
		t.Helper()
		p, err := c.CompliancePolicy(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.Description = ""
		return p
	}
	if p := read(e.Admin); p != want {
		t.Fatalf("read back: %+v", p)
	}
	entries := auditOf(t, e, e.Org.ID, "compliance_policy.set")
	if len(entries) != 1 || entries[0].Summary["criticalDays"] != float64(7) || entries[0].Summary["unspecifiedDays"] != float64(1) ||
		entries[0].Summary["kevDays"] != float64(3) {
		t.Fatalf("audit: %+v", entries)
	}
	checkAPIEntry(t, entries[0])

	for _, c := range []struct {
		body   string
		fields []string
	}{
		{`{}`, []string{"criticalDays", "importantDays", "lowDays", "moderateDays", "unspecifiedDays"}},
		{`{"criticalDays":0,"importantDays":30,"moderateDays":90,"lowDays":3651,"unspecifiedDays":5}`, []string{"criticalDays", "lowDays"}},
		{`{"criticalDays":15,"importantDays":30,"moderateDays":90,"lowDays":90,"unspecifiedDays":5,"kevDays":0}`, []string{"kevDays"}},
	} {
		err := e.Admin.Do(ctx, http.MethodPut, "/api/v1/compliance-policy", nil, json.RawMessage(c.body), nil)
		if got := sortedProblems(t, err); !slices.Equal(got, c.fields) {
			t.Errorf("%s: fields %q, want %q", c.body, got, c.fields)
		}
	}
	if p := read(e.Admin); p != want {
		t.Fatalf("after bad bodies: %+v", p)
	}

	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	if p := read(viewer); p != want {
		t.Fatalf("viewer read: %+v", p)
	}
	mustStatus(t, errOf(viewer.SetCompliancePolicy(ctx, defaults)), http.StatusForbidden, "viewer set")
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.UpdatesView)).CompliancePolicy(ctx)), http.StatusForbidden, "read without endpoints.view")
	mustStatus(t, errOf(e.Client(e.Org, perm.All&^perm.Set(perm.AutomationsRun)).SetCompliancePolicy(ctx, defaults)), http.StatusForbidden, "set without every permission")

	other := e.NewOrg("Other")
	if p := read(e.Client(other, perm.All)); p != defaults {
		t.Fatalf("other organization: %+v", p)
	}

	byGroup, err := viewer.ComplianceByGroup(ctx)
	if err != nil || byGroup.Policy.CriticalDays != 7 || byGroup.Total != len(byGroup.Items) || byGroup.Total < 2 || byGroup.Items[0].Name != "All endpoints" {
		t.Fatalf("by group: %+v %v", byGroup, err)
	}
	wantStatus(t, viewer.Do(ctx, http.MethodGet, "/api/v1/endpoints?compliance=late", nil, nil, nil), http.StatusBadRequest, "compliance=late")
	for _, q := range []string{"compliance=overdue", "compliance=compliant&sort=overdue&order=desc", "sort=missingTotal"} {
		if err := viewer.Do(ctx, http.MethodGet, "/api/v1/endpoints?"+q, nil, nil, nil); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
}
