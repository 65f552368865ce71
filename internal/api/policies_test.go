package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// sortedProblems answers the fields of a 422's details, sorted, or fails.
func sortedProblems(t *testing.T, err error) []string {
	t.Helper()
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || ae.Code != "validation_failed" {
		t.Fatalf("want 422 validation_failed, got %v", err)
	}
	var fields []string
	for _, p := range ae.Details {
		fields = append(fields, p.Field)
	}
	slices.Sort(fields)
	return fields
}

// auditOf answers the organization's Audit Trail entries of an action.
func auditOf(t *testing.T, e *apitest.Env, orgID, action string) []store.AuditEntry {
	t.Helper()
	entries, err := e.Store.ListAudit(context.Background(), orgID, store.AuditFilter{Action: action, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// checkAPIEntry fails unless the entry was written by an API credential
// from the loopback caller.
func checkAPIEntry(t *testing.T, x store.AuditEntry) {
	t.Helper()
	if !strings.HasPrefix(x.Actor, "api:cred-") || (x.Address != "127.0.0.1" && x.Address != "::1") {
		t.Errorf("audit entry %+v: want actor api:<credential> and the loopback address", x)
	}
}

// TestApprovalPolicyAPI: GET /api/v1/approval-policy answers the policy;
// PUT replaces every rule and declineOlder (normalised, audited as
// approval_policy.set by the credential), refuses a bad policy with every
// field problem (422) without changing anything, needs updates.manage
// (updates.view reads), and another organization's policy is its own.
func TestApprovalPolicyAPI(t *testing.T) {
	e, ctx := apitest.NewParallel(t)

	p, err := e.Admin.ApprovalPolicy(ctx)
	if err != nil || p.DeclineOlder || p.Rules == nil || len(p.Rules) != 0 {
		t.Fatalf("no policy yet: %+v %v", p, err)
	}
	want := apiv1.ApprovalPolicy{DeclineOlder: true, Rules: []apiv1.ApprovalPolicyRule{
		{Severity: "ANY", Source: "THIRD_PARTY", DelayDays: 7}, {Severity: "Critical", Source: "OS", DelayDays: 0}}} // by severity, then source
	p, err = e.Admin.SetApprovalPolicy(ctx, apiv1.ApprovalPolicy{DeclineOlder: true, Rules: []apiv1.ApprovalPolicyRule{
		{Severity: "any", Source: "third-party", DelayDays: 7}, {Severity: "critical", Source: "os", DelayDays: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.DeclineOlder != want.DeclineOlder || !slices.Equal(p.Rules, want.Rules) {
		t.Fatalf("set: %+v, want %+v", p, want)
	}
	if got, err := e.Admin.ApprovalPolicy(ctx); err != nil || !slices.Equal(got.Rules, want.Rules) || !got.DeclineOlder {
		t.Fatalf("read back: %+v %v", got, err)
	}
	stored, err := e.Store.GetApprovalPolicy(ctx, e.Org.ID)
	if err != nil || len(stored.Rules) != 2 || !stored.DeclineOlder {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	entries := auditOf(t, e, e.Org.ID, "approval_policy.set")
	if len(entries) != 1 || entries[0].TargetType != "approval_policy" || entries[0].Summary["declineOlder"] != true {
		t.Fatalf("audit: %+v", entries)
	}
	checkAPIEntry(t, entries[0])

	// Bad policies: every problem named, nothing changed.
	for _, c := range []struct {
		name   string
		body   apiv1.ApprovalPolicyBody
		fields []string
	}{
		{"nothing", apiv1.ApprovalPolicyBody{}, []string{"declineOlder", "rules"}},
		{"no rules", apiv1.ApprovalPolicyBody{DeclineOlder: ptr(false)}, []string{"rules"}},
		{"no declineOlder", apiv1.ApprovalPolicyBody{Rules: &[]apiv1.ApprovalPolicyRule{}}, []string{"declineOlder"}},
		{"bad rules", apiv1.ApprovalPolicyBody{DeclineOlder: ptr(false), Rules: &[]apiv1.ApprovalPolicyRule{
			{Severity: "urgent", Source: "OS"}, {Severity: "Low", Source: "apps", DelayDays: 366}, {Severity: "Low", Source: "OS", DelayDays: -1}}},
			[]string{"rules[0].severity", "rules[1].delayDays", "rules[1].source", "rules[2].delayDays"}},
		{"twice", apiv1.ApprovalPolicyBody{DeclineOlder: ptr(false), Rules: &[]apiv1.ApprovalPolicyRule{
			{Severity: "Low", Source: "OS", DelayDays: 1}, {Severity: "low", Source: "os", DelayDays: 2}}}, []string{"rules[1]"}},
	} {
		err := e.Admin.Do(ctx, http.MethodPut, "/api/v1/approval-policy", nil, c.body, nil)
		if got := sortedProblems(t, err); !slices.Equal(got, c.fields) {
			t.Errorf("%s: fields %q, want %q", c.name, got, c.fields)
		}
	}
	if got, _ := e.Admin.ApprovalPolicy(ctx); !slices.Equal(got.Rules, want.Rules) || !got.DeclineOlder {
		t.Fatalf("after bad policies: %+v", got)
	}
	if n := len(auditOf(t, e, e.Org.ID, "approval_policy.set")); n != 1 {
		t.Fatalf("bad policies were audited: %d entries", n)
	}

	// Permissions.
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.UpdatesView))
	if _, err := viewer.ApprovalPolicy(ctx); err != nil {
		t.Fatalf("viewer read: %v", err)
	}
	mustStatus(t, errOf(viewer.SetApprovalPolicy(ctx, apiv1.ApprovalPolicy{})), http.StatusForbidden, "viewer set")
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView)).ApprovalPolicy(ctx)), http.StatusForbidden, "read without updates.view")

	// Another organization: its own, empty policy; its change leaves ours.
	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	if op, err := oc.ApprovalPolicy(ctx); err != nil || op.DeclineOlder || len(op.Rules) != 0 {
		t.Fatalf("other organization: %+v %v", op, err)
	}
	if _, err := oc.SetApprovalPolicy(ctx, apiv1.ApprovalPolicy{Rules: []apiv1.ApprovalPolicyRule{{Severity: "Low", Source: "ANY", DelayDays: 30}}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.Admin.ApprovalPolicy(ctx); !slices.Equal(got.Rules, want.Rules) {
		t.Fatalf("another organization's policy changed ours: %+v", got)
	}

	// An empty list removes every rule.
	if p, err = e.Admin.SetApprovalPolicy(ctx, apiv1.ApprovalPolicy{}); err != nil || len(p.Rules) != 0 || p.DeclineOlder {
		t.Fatalf("cleared: %+v %v", p, err)
	}
}

// TestVulnExceptionsAPI: an administrator's credential accepts a CVE's
// risk or records a compensating control (validDays or expiresAt),
// audited as the credential; the list shows every decision, expired ones
// with active false, and filters by kind; bad decisions are 422 with
// every field and change nothing; revoking answers 404 when there is
// none; a role lacking any permission may read but not decide; another
// organization sees and revokes nothing of ours.
func TestVulnExceptionsAPI(t *testing.T) {
	e, ctx := apitest.NewParallel(t)

	list, err := e.Admin.VulnExceptions(ctx, "")
	if err != nil || list.Total != 0 || len(list.Items) != 0 {
		t.Fatalf("none yet: %+v %v", list, err)
	}
	x, err := e.Admin.AcceptVulnRisk(ctx, "cve-2023-4863", apiv1.VulnExceptionBody{Kind: "accepted", Reason: " kiosk image, no network ", ValidDays: ptr(30)})
	if err != nil {
		t.Fatal(err)
	}
	if x.CVEID != "CVE-2023-4863" || x.Kind != "accepted" || x.Reason != "kiosk image, no network" || !x.Active || x.ID == "" ||
		!strings.HasPrefix(x.CreatedBy, "api:cred-") || x.ExpiresAt == nil || x.ExpiresAt.Sub(x.CreatedAt) != 30*24*time.Hour {
		t.Fatalf("accepted: %+v", x)
	}
	until := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second)
	y, err := e.Admin.AcceptVulnRisk(ctx, "CVE-2024-0001", apiv1.VulnExceptionBody{Kind: "compensating_control", Reason: "WAF rule 942100", ExpiresAt: &until})
	if err != nil {
		t.Fatal(err)
	}
	if y.Kind != "compensating_control" || y.ExpiresAt == nil || !y.ExpiresAt.Equal(until) {
		t.Fatalf("compensating control: %+v", y)
	}
	// A decision with no expiry replaces the first one.
	if x, err = e.Admin.AcceptVulnRisk(ctx, "CVE-2023-4863", apiv1.VulnExceptionBody{Kind: "accepted", Reason: "for good"}); err != nil || x.ExpiresAt != nil || x.Reason != "for good" {
		t.Fatalf("replaced: %+v %v", x, err)
	}
	// One that expired (recorded in the past, through the store).
	past := time.Now().Add(-time.Hour)
	if err := e.Store.SetVulnException(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "vulnerability.accept"},
		&store.VulnException{OrgID: e.Org.ID, CVEID: "CVE-2020-0002", Kind: store.ExceptionAccepted, Reason: "old", CreatedBy: "test",
			CreatedAt: past.Add(-time.Hour), ExpiresAt: &past}); err != nil {
		t.Fatal(err)
	}
	list, err = e.Admin.VulnExceptions(ctx, "")
	if err != nil || list.Total != 3 || len(list.Items) != 3 {
		t.Fatalf("list: %+v %v", list, err)
	}
	active := map[string]bool{}
	for _, it := range list.Items {
		active[it.CVEID] = it.Active
	}
	if !active["CVE-2023-4863"] || !active["CVE-2024-0001"] || active["CVE-2020-0002"] {
		t.Fatalf("active flags: %v", active)
	}
	if cc, err := e.Admin.VulnExceptions(ctx, "compensating_control"); err != nil || cc.Total != 1 || cc.Items[0].CVEID != "CVE-2024-0001" {
		t.Fatalf("kind filter: %+v %v", cc, err)
	}
	mustStatus(t, e.Admin.Do(ctx, http.MethodGet, "/api/v1/vulnerability-exceptions?kind=maybe", nil, nil, nil), http.StatusBadRequest, "bad kind filter")
	for action, n := range map[string]int{"vulnerability.accept": 3, "vulnerability.compensating_control": 1} {
		entries := auditOf(t, e, e.Org.ID, action)
		if len(entries) != n {
			t.Fatalf("%s: %d entries, want %d", action, len(entries), n)
		}
		for _, x := range entries {
			if x.Actor != "test" { // the test's own, through the store
				checkAPIEntry(t, x)
			}
		}
	}

	// Bad decisions: every problem, nothing changed.
	past2 := time.Now().Add(-time.Minute)
	for _, c := range []struct {
		name, cve string
		body      apiv1.VulnExceptionBody
		fields    []string
	}{
		{"empty", "CVE-2023-4863", apiv1.VulnExceptionBody{}, []string{"kind", "reason"}},
		{"bad cve and kind", "4863", apiv1.VulnExceptionBody{Kind: "ignored", Reason: "r"}, []string{"cve", "kind"}},
		{"both expiries", "CVE-2023-4863", apiv1.VulnExceptionBody{Kind: "accepted", Reason: "r", ValidDays: ptr(1), ExpiresAt: &until}, []string{"validDays"}},
		{"expired", "CVE-2023-4863", apiv1.VulnExceptionBody{Kind: "accepted", Reason: "r", ExpiresAt: &past2}, []string{"expiresAt"}},
		{"days", "CVE-2023-4863", apiv1.VulnExceptionBody{Kind: "accepted", Reason: strings.Repeat("r", 2001), ValidDays: ptr(0)}, []string{"reason", "validDays"}},
	} {
		_, err := e.Admin.AcceptVulnRisk(ctx, c.cve, c.body)
		if got := sortedProblems(t, err); !slices.Equal(got, c.fields) {
			t.Errorf("%s: fields %q, want %q", c.name, got, c.fields)
		}
	}
	if after, _ := e.Admin.VulnExceptions(ctx, ""); after.Total != 3 {
		t.Fatalf("after bad decisions: %+v", after)
	}
	if n := len(auditOf(t, e, e.Org.ID, "vulnerability.accept")); n != 3 {
		t.Fatalf("bad decisions were audited: %d", n)
	}

	// Permissions: reading takes vulnerabilities.view; deciding, every
	// permission.
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.VulnerabilitiesView))
	if _, err := viewer.VulnExceptions(ctx, ""); err != nil {
		t.Fatalf("viewer list: %v", err)
	}
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.UpdatesView)).VulnExceptions(ctx, "")), http.StatusForbidden, "list without vulnerabilities.view")
	almost := e.Client(e.Org, perm.All&^perm.Set(perm.ReportsManage))
	mustStatus(t, errOf(almost.AcceptVulnRisk(ctx, "CVE-2024-0002", apiv1.VulnExceptionBody{Kind: "accepted", Reason: "r"})), http.StatusForbidden, "accept without every permission")
	mustStatus(t, almost.RevokeVulnRisk(ctx, "CVE-2023-4863"), http.StatusForbidden, "revoke without every permission")

	// Another organization sees none of ours and cannot revoke them.
	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	if ol, err := oc.VulnExceptions(ctx, ""); err != nil || ol.Total != 0 {
		t.Fatalf("other organization's list: %+v %v", ol, err)
	}
	mustStatus(t, oc.RevokeVulnRisk(ctx, "CVE-2023-4863"), http.StatusNotFound, "other organization's revoke")

	// Revoke: gone from the list, audited; again is 404; a malformed id 422.
	if err := e.Admin.RevokeVulnRisk(ctx, "cve-2023-4863"); err != nil {
		t.Fatal(err)
	}
	if after, _ := e.Admin.VulnExceptions(ctx, ""); after.Total != 2 {
		t.Fatalf("after revoke: %+v", after)
	}
	entries := auditOf(t, e, e.Org.ID, "vulnerability.revoke")
	if len(entries) != 1 || entries[0].TargetID != "CVE-2023-4863" {
		t.Fatalf("revoke audit: %+v", entries)
	}
	checkAPIEntry(t, entries[0])
	mustStatus(t, e.Admin.RevokeVulnRisk(ctx, "CVE-2023-4863"), http.StatusNotFound, "revoke again")
	if got := sortedProblems(t, e.Admin.RevokeVulnRisk(ctx, "4863")); !slices.Equal(got, []string{"cve"}) {
		t.Fatalf("revoke a malformed id: %q", got)
	}
}

// TestRemediationPolicyAPI: GET /api/v1/remediation-policy answers the
// defaults until set; PUT sets the four periods (audited as
// vulnerability.policy by the credential), refuses missing or out of
// range ones with every field (422) without changing anything, and is for
// roles holding every permission (vulnerabilities.view reads); another
// organization keeps its own.
func TestRemediationPolicyAPI(t *testing.T) {
	e, ctx := apitest.NewParallel(t)

	defaults := apiv1.RemediationPolicy{CriticalDays: 15, HighDays: 30, MediumDays: 90, LowDays: 180}
	if p, err := e.Admin.RemediationPolicy(ctx); err != nil || p != defaults {
		t.Fatalf("defaults: %+v %v", p, err)
	}
	want := apiv1.RemediationPolicy{CriticalDays: 7, HighDays: 14, MediumDays: 60, LowDays: 3650}
	if p, err := e.Admin.SetRemediationPolicy(ctx, want); err != nil || p != want {
		t.Fatalf("set: %+v %v", p, err)
	}
	if p, err := e.Admin.RemediationPolicy(ctx); err != nil || p != want {
		t.Fatalf("read back: %+v %v", p, err)
	}
	entries := auditOf(t, e, e.Org.ID, "vulnerability.policy")
	if len(entries) != 1 || entries[0].Summary["criticalDays"] != float64(7) {
		t.Fatalf("audit: %+v", entries)
	}
	checkAPIEntry(t, entries[0])

	for _, c := range []struct {
		body   string
		fields []string
	}{
		{`{}`, []string{"criticalDays", "highDays", "lowDays", "mediumDays"}},
		{`{"criticalDays":0,"highDays":30,"mediumDays":90,"lowDays":3651}`, []string{"criticalDays", "lowDays"}},
		{`{"criticalDays":1,"highDays":-1,"mediumDays":90}`, []string{"highDays", "lowDays"}},
	} {
		err := e.Admin.Do(ctx, http.MethodPut, "/api/v1/remediation-policy", nil, json.RawMessage(c.body), nil)
		if got := sortedProblems(t, err); !slices.Equal(got, c.fields) {
			t.Errorf("%s: fields %q, want %q", c.body, got, c.fields)
		}
	}
	if p, _ := e.Admin.RemediationPolicy(ctx); p != want {
		t.Fatalf("after bad bodies: %+v", p)
	}

	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.VulnerabilitiesView))
	if p, err := viewer.RemediationPolicy(ctx); err != nil || p != want {
		t.Fatalf("viewer read: %+v %v", p, err)
	}
	mustStatus(t, errOf(viewer.SetRemediationPolicy(ctx, defaults)), http.StatusForbidden, "viewer set")
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView)).RemediationPolicy(ctx)), http.StatusForbidden, "read without vulnerabilities.view")
	mustStatus(t, errOf(e.Client(e.Org, perm.All&^perm.Set(perm.AutomationsRun)).SetRemediationPolicy(ctx, defaults)), http.StatusForbidden, "set without every permission")

	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	if p, err := oc.RemediationPolicy(ctx); err != nil || p != defaults {
		t.Fatalf("other organization: %+v %v", p, err)
	}
	if _, err := oc.SetRemediationPolicy(ctx, apiv1.RemediationPolicy{CriticalDays: 1, HighDays: 2, MediumDays: 3, LowDays: 4}); err != nil {
		t.Fatal(err)
	}
	if p, _ := e.Admin.RemediationPolicy(ctx); p != want {
		t.Fatalf("another organization's policy changed ours: %+v", p)
	}
}
