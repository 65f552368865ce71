package api_test

import (
	"context"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/vulns"
)

// TestVulnDecisionsThroughTheAPIChangeTheList: what the new operations set
// is what GET /api/v1/vulnerabilities reads: a CVE accepted through the
// API leaves the list and counts its endpoint in the exceptions list,
// revoking brings it back, and remediation periods set through the API
// change its remediation status.
func TestVulnDecisionsThroughTheAPIChangeTheList(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newVulnEnv(t)
	a := env.Enroll("vd-1", "pc-vd", "windows")
	doc := apitest.Sample("pc-vd", "windows")
	doc.Software = []agentproto.Software{winApp("VLC media player", "VideoLAN", "3.0.18")} // CVE-2023-47359 (9.8, not KEV)
	a.MustInventory(doc)
	const cve = "CVE-2023-47359"
	listed := func() *apiv1.Vulnerability {
		t.Helper()
		page, err := vulnPage(t, env.Admin, nil)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := byCVE(page.Items)[cve]; ok {
			return &v
		}
		return nil
	}
	// The matcher runs in the background: wait for the CVE (generous bound).
	for deadline := time.Now().Add(time.Minute); listed() == nil && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	v := listed()
	if v == nil || *v.RemediationStatus != vulns.StatusDueLater {
		t.Fatalf("before any decision: %+v", v)
	}

	// A 1-day Critical period: first seen today, so due soon.
	if _, err := env.Admin.SetRemediationPolicy(ctx, apiv1.RemediationPolicy{CriticalDays: 1, HighDays: 30, MediumDays: 90, LowDays: 180}); err != nil {
		t.Fatal(err)
	}
	if v := listed(); v == nil || *v.RemediationStatus != vulns.StatusDueSoon {
		t.Fatalf("under a 1-day Critical period: %+v", v)
	}

	if _, err := env.Admin.AcceptVulnRisk(ctx, cve, apiv1.VulnExceptionBody{Kind: "accepted", Reason: "VLC is removed next week", ValidDays: ptr(7)}); err != nil {
		t.Fatal(err)
	}
	if v := listed(); v != nil {
		t.Fatalf("accepted CVE still listed: %+v", v)
	}
	list, err := env.Admin.VulnExceptions(ctx, "")
	if err != nil || list.Total != 1 || list.Items[0].Endpoints != 1 || !list.Items[0].Active {
		t.Fatalf("exceptions: %+v %v", list, err)
	}
	if err := env.Admin.RevokeVulnRisk(ctx, cve); err != nil {
		t.Fatal(err)
	}
	if v := listed(); v == nil {
		t.Fatal("revoked CVE not listed again")
	}
}

// TestApprovalPolicyThroughTheAPIApprovesAtIngestion: a rule set with PUT
// /api/v1/approval-policy approves the matching updates an inventory
// brings (Critical OS at once), and leaves the others NEW.
func TestApprovalPolicyThroughTheAPIApprovesAtIngestion(t *testing.T) {
	env, ctx := apitest.NewParallel(t)
	if _, err := env.Admin.SetApprovalPolicy(ctx, apiv1.ApprovalPolicy{Rules: []apiv1.ApprovalPolicyRule{{Severity: "Critical", Source: "OS", DelayDays: 0}}}); err != nil {
		t.Fatal(err)
	}
	a := env.EnrollSample("ap-1", "pc-ap", "windows")
	page, err := env.Admin.ListUpdates(ctx, client.UpdateQuery{EndpointID: a.ID})
	if err != nil || len(page.Items) < 2 {
		t.Fatalf("updates: %+v %v", page, err)
	}
	for _, u := range page.Items {
		want := "NEW"
		if u.Severity == "Critical" && (u.Source == "OS - Mandatory" || u.Source == "OS - Optional") {
			want = "APPROVED"
		}
		if u.Approval != want {
			t.Errorf("%s (%s, %s): %s, want %s", u.Title, u.Severity, u.Source, u.Approval, want)
		}
	}
}
