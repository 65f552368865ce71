package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/updates"
)

// TestCompliancePolicy: an endpoint is out of compliance once an update has
// stayed missing longer than its severity's period, counted from the first
// report of it (a later report does not restart the clock); declined
// updates do not count; the organization's own periods replace the
// defaults; the dashboard count, the endpoint filter and sort, the
// per-endpoint counts, the history and the report by group agree.
func TestCompliancePolicy(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	o := newOrg(t, s, "Acme")
	other := newOrg(t, s, "Other")
	day0 := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	ids := map[string]string{}
	add := func(orgID, name string, ups ...string) {
		t.Helper()
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: orgID, MachineUID: name, Hostname: name, Platform: "windows",
			SecretHash: "h-" + orgID + name}, day0)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
		var list []agentproto.Update
		for i := 0; i < len(ups); i += 2 {
			list = append(list, kb(ups[i], ups[i+1]))
		}
		inv(t, s, orgID, id, name, day0, list...)
	}
	add(o.ID, "clean")
	add(o.ID, "crit", "KB5066835", "Critical")
	add(o.ID, "low", "KB5002345", "Low")
	add(o.ID, "declined", "KB5009999", "Critical")
	add(other.ID, "elsewhere", "KB5066835", "Critical")
	audit := func() *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "update.decline"}
	}
	if _, err := s.SetApprovals(ctx, audit(), o.ID, updates.StatusDeclined, []store.ApprovalInput{{Key: "KB5009999"}}, day0); err != nil {
		t.Fatal(err)
	}
	compliant := func(at time.Time) int {
		t.Helper()
		d, err := s.Compliance(ctx, o.ID, at)
		if err != nil || d.Compliant == nil {
			t.Fatalf("compliance: %+v %v", d, err)
		}
		return *d.Compliant
	}
	if n := compliant(day0.AddDate(0, 0, 15)); n != 4 {
		t.Errorf("at 15 days %d compliant, want 4", n)
	}
	// The critical update is reported again on day 16: its clock still
	// started on day 0.
	day16 := day0.AddDate(0, 0, 16)
	inv(t, s, o.ID, ids["crit"], "crit", day16, kb("KB5066835", "Critical"))
	if n := compliant(day16); n != 3 {
		t.Errorf("at 16 days %d compliant, want 3 (crit overdue, the declined one not counted)", n)
	}
	names := func(q store.EndpointQuery) []string {
		t.Helper()
		q.OrgID, q.Now = o.ID, day16
		eps, total, err := s.FindEndpoints(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range eps {
			out = append(out, e.Name)
		}
		if total != len(out) {
			t.Errorf("total %d for %d rows", total, len(out))
		}
		return out
	}
	if got := names(store.EndpointQuery{Compliance: "overdue"}); len(got) != 1 || got[0] != "crit" {
		t.Errorf("overdue: %v", got)
	}
	if got := names(store.EndpointQuery{Compliance: "compliant"}); len(got) != 3 {
		t.Errorf("compliant: %v", got)
	}
	if got := names(store.EndpointQuery{Sort: "overdue", Desc: true}); len(got) != 4 || got[0] != "crit" {
		t.Errorf("by overdue: %v", got)
	}
	if got := names(store.EndpointQuery{Sort: "missingTotal", Desc: true}); len(got) != 4 || got[3] != "clean" {
		t.Errorf("by missing total: %v", got)
	}
	counts, err := s.OverdueCounts(ctx, o.ID, []string{ids["crit"], ids["low"], ids["elsewhere"]}, updates.DefaultCompliancePolicy(), day16)
	if err != nil || len(counts) != 1 || counts[ids["crit"]] != 1 {
		t.Errorf("overdue counts %v %v", counts, err)
	}

	// The organization's own periods: Critical 20 days, Low 10.
	p := updates.CompliancePolicy{Critical: 20, Important: 30, Moderate: 60, Low: 10, Unspecified: 90}
	if err := s.SetCompliancePolicy(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "compliance.policy"}, o.ID, p); err != nil {
		t.Fatal(err)
	}
	if got, err := s.CompliancePolicy(ctx, o.ID); err != nil || got != p {
		t.Fatalf("policy %+v %v", got, err)
	}
	if got, err := s.CompliancePolicy(ctx, other.ID); err != nil || got != updates.DefaultCompliancePolicy() {
		t.Errorf("the other organization's policy changed: %+v %v", got, err)
	}
	if got := names(store.EndpointQuery{Compliance: "overdue"}); len(got) != 1 || got[0] != "low" {
		t.Errorf("overdue under the new policy: %v", got)
	}
	if _, err := s.RecordCompliance(ctx, day16); err != nil {
		t.Fatal(err)
	}
	h, err := s.ComplianceHistory(ctx, o.ID, day16, day16)
	if err != nil || len(h) != 1 || h[0].Compliant == nil || *h[0].Compliant != 3 {
		t.Errorf("history %+v %v", h, err)
	}
	if h, _ := s.ComplianceHistory(ctx, other.ID, day16, day16); len(h) != 1 || h[0].Compliant == nil || *h[0].Compliant != 0 {
		t.Errorf("other history %+v", h)
	}

	gname := "Servers"
	members := []string{ids["low"], ids["clean"]}
	if _, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.create", TargetType: "group"}, o.ID,
		store.GroupChange{Name: &gname, MachineIDs: &members}, day16); err != nil {
		t.Fatal(err)
	}
	empty := "Empty"
	none := []string{}
	if _, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.create", TargetType: "group"}, o.ID,
		store.GroupChange{Name: &empty, MachineIDs: &none}, day16); err != nil {
		t.Fatal(err)
	}
	gs, gp, err := s.ComplianceByGroup(ctx, o.ID, day16)
	if err != nil || gp != p || len(gs) != 4 {
		t.Fatalf("by group %+v %+v %v", gs, gp, err)
	}
	if g := gs[0]; g.Name != "All endpoints" || g.Endpoints != 4 || g.Compliant != 3 || g.MissingCritical != 2 {
		t.Errorf("all endpoints %+v", g)
	}
	if g := gs[1]; g.Name != "New endpoints" || g.Endpoints != 0 {
		t.Errorf("new endpoints (enrolled 16 days ago) %+v", g)
	}
	if g := gs[2]; g.Name != "Empty" || g.Endpoints != 0 || g.Compliant != 0 {
		t.Errorf("empty group %+v", g)
	}
	if g := gs[3]; g.Name != "Servers" || g.Endpoints != 2 || g.Compliant != 1 || g.MissingCritical != 0 {
		t.Errorf("servers %+v", g)
	}
}
