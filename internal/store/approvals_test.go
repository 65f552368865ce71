package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

func str(s string) *string { return &s }

func enroll(t *testing.T, s *store.Store, orgID, uid string, at time.Time) string {
	t.Helper()
	id, _, err := s.EnrollEndpoint(context.Background(), store.Enrollment{OrgID: orgID, MachineUID: uid, Hostname: uid, Platform: "windows",
		SecretHash: "h-" + orgID + uid}, at)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func ingest(t *testing.T, s *store.Store, orgID, endpointID string, now time.Time, ups ...agentproto.Update) {
	t.Helper()
	doc := &agentproto.Inventory{CollectedAt: now, System: agentproto.System{Hostname: "h-" + endpointID, Type: "workstation"}, Updates: ups}
	n, err := inventory.Check(doc, "windows", "", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceInventory(context.Background(), orgID, endpointID, n, "x", now); err != nil {
		t.Fatal(err)
	}
}

func app(id, latest string) agentproto.Update {
	return agentproto.Update{Title: id, WingetID: str(id), LatestVersion: str(latest), Source: updates.SourceApps, Severity: str("Important")}
}

func kb(kb, severity string) agentproto.Update {
	return agentproto.Update{Title: kb, KB: str(kb), Source: updates.SourceOSMandatory, Severity: str(severity)}
}

func decisions(t *testing.T, s *store.Store, orgID string) map[string]string {
	t.Helper()
	rows, _, err := s.ListUpdates(context.Background(), store.UpdateQuery{OrgID: orgID, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.Key] = r.Approval
	}
	return out
}

// testAudit is a fresh audit entry of the organization for a test's write.
func testAudit(orgID string) *store.AuditEntry {
	return &store.AuditEntry{OrgID: orgID, Actor: "test", Action: "test", TargetType: "test"}
}

func TestApprovalPolicyAtIngestion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	now := time.Now()
	ep := enroll(t, s, o.ID, "m1", now)
	ingest(t, s, o.ID, ep, now, kb("KB5000001", "Critical")) // seen before any policy: stays NEW

	for _, r := range []updates.PolicyRule{{Severity: "Critical", Source: "OS"}, {Severity: "Important", Source: "THIRD_PARTY", DelayDays: 2}} {
		if _, err := s.SetApprovalPolicy(ctx, testAudit(o.ID), o.ID, store.PolicyChange{Rule: &r}); err != nil {
			t.Fatal(err)
		}
	}
	ingest(t, s, o.ID, ep, now, kb("KB5000001", "Critical"), kb("KB5000002", "Critical"), kb("KB5000003", "Low"), app("Contoso.App", "2.0"), app("Contoso.Other", "1.0"))
	got := decisions(t, s, o.ID)
	if got["KB5000001"] != "NEW" || got["KB5000002"] != "APPROVED" || got["KB5000003"] != "NEW" || got["Contoso.App@2.0"] != "NEW" {
		t.Fatalf("after ingestion: %v", got)
	}
	// A decision taken before the delay ends is kept.
	if _, err := s.SetApprovals(ctx, testAudit(o.ID), o.ID, updates.StatusDeclined, []store.ApprovalInput{{Key: "Contoso.Other@1.0"}}, now); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ApplyDueApprovals(ctx, now.AddDate(0, 0, 1)); err != nil || n != 0 {
		t.Fatalf("due after one day: %d %v", n, err)
	}
	if n, err := s.ApplyDueApprovals(ctx, now.AddDate(0, 0, 2).Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("due after two days: %d %v", n, err)
	}
	got = decisions(t, s, o.ID)
	if got["Contoso.App@2.0"] != "APPROVED" || got["Contoso.Other@1.0"] != "DECLINED" {
		t.Fatalf("after delay: %v", got)
	}
	// Reset to NEW, the key is not approved again by the policy.
	if _, err := s.SetApprovals(ctx, testAudit(o.ID), o.ID, updates.StatusNew, []store.ApprovalInput{{Key: "Contoso.App@2.0"}}, now); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.ApplyDueApprovals(ctx, now.AddDate(0, 0, 30)); n != 0 {
		t.Fatalf("re-approved %d keys", n)
	}
	entries, err := s.ListAudit(ctx, o.ID, store.AuditFilter{Actor: store.ActorPolicy})
	if err != nil || len(entries) != 2 {
		t.Fatalf("policy audit: %+v %v", entries, err)
	}
}

func TestDeclineOlder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	now := time.Now()
	a, b, c := enroll(t, s, o.ID, "a", now), enroll(t, s, o.ID, "b", now), enroll(t, s, o.ID, "c", now)
	ingest(t, s, o.ID, a, now, app("Mozilla.Firefox", "133.0.3"))
	ingest(t, s, o.ID, b, now, app("Mozilla.Firefox", "134.0"), app("Mozilla.FirefoxESR", "115.0"))

	// Without the setting, approving 134.0 leaves 133.0.3 alone.
	if _, err := s.SetApprovals(ctx, testAudit(o.ID), o.ID, updates.StatusApproved, []store.ApprovalInput{{Key: "Mozilla.Firefox@134.0"}}, now); err != nil {
		t.Fatal(err)
	}
	if got := decisions(t, s, o.ID); got["Mozilla.Firefox@133.0.3"] != "NEW" {
		t.Fatalf("declined without the setting: %v", got)
	}
	on := true
	if _, err := s.SetApprovalPolicy(ctx, testAudit(o.ID), o.ID, store.PolicyChange{DeclineOlder: &on}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetApprovals(ctx, testAudit(o.ID), o.ID, updates.StatusApproved, []store.ApprovalInput{{Key: "Mozilla.Firefox@133.0.3"}}, now); err != nil {
		t.Fatal(err)
	}
	out, err := s.SetApprovals(ctx, testAudit(o.ID), o.ID, updates.StatusApproved, []store.ApprovalInput{{Key: "mozilla.firefox@134.0"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if out.Changed != 0 || len(out.DeclinedOlder) != 1 || out.DeclinedOlder[0] != "Mozilla.Firefox@133.0.3" {
		t.Fatalf("outcome: %+v", out)
	}
	got := decisions(t, s, o.ID)
	if got["Mozilla.Firefox@133.0.3"] != "DECLINED" || got["Mozilla.Firefox@134.0"] != "APPROVED" || got["Mozilla.FirefoxESR@115.0"] != "NEW" {
		t.Fatalf("after approving 134.0: %v", got)
	}
	// An older version reported later is declined when it appears.
	ingest(t, s, o.ID, c, now, app("Mozilla.Firefox", "132.0"), app("Mozilla.Firefox", "135.0"))
	got = decisions(t, s, o.ID)
	if got["Mozilla.Firefox@132.0"] != "DECLINED" || got["Mozilla.Firefox@135.0"] != "NEW" {
		t.Fatalf("after a later inventory: %v", got)
	}
}

func TestBuiltinGroupsStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	now := time.Now()
	old := enroll(t, s, o.ID, "old", now.AddDate(0, 0, -8))
	fresh := enroll(t, s, o.ID, "fresh", now.Add(-time.Hour))
	newID, err := s.BuiltinGroupID(ctx, o.ID, "new")
	if err != nil {
		t.Fatal(err)
	}
	allID, _ := s.BuiltinGroupID(ctx, o.ID, "all")
	if ids, err := s.GroupMemberIDs(ctx, o.ID, newID); err != nil || len(ids) != 1 || ids[0] != fresh {
		t.Fatalf("new endpoints: %v %v", ids, err)
	}
	if ids, err := s.GroupMemberIDs(ctx, o.ID, allID); err != nil || len(ids) != 2 {
		t.Fatalf("all endpoints: %v %v (old %s)", ids, err, old)
	}
	list, err := s.ListGroups(ctx, o.ID, now)
	if err != nil || len(list) != 2 || list[0].Members != 2 || list[1].Members != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if _, err := s.BuiltinGroupID(ctx, o.ID, "other"); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("unknown built-in: %v", err)
	}
	other := newOrg(t, s, "Other")
	if _, err := s.GroupMemberIDs(ctx, other.ID, allID); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("another organization's group: %v", err)
	}
}
