package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestComplianceHistory: the compliance counts each endpoint once by the
// worst it misses; a recording replaces the day's entry, keeps the other
// days, forgets those past ComplianceKeepDays, and one organization never
// sees another's.
func TestComplianceHistory(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	o := newOrg(t, s, "Acme")
	other := newOrg(t, s, "Other")
	day1 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	add := func(orgID, name string, ups ...agentproto.Update) string {
		t.Helper()
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: orgID, MachineUID: name, Hostname: name, Platform: "windows",
			SecretHash: "h-" + orgID + name}, day1)
		if err != nil {
			t.Fatal(err)
		}
		inv(t, s, orgID, id, name, day1, ups...)
		return id
	}
	add(o.ID, "clean")
	crit := add(o.ID, "crit", kb("KB5066835", "Critical"), kb("KB5001234", "Important"))
	add(o.ID, "low", kb("KB5002345", "Moderate"), app("Mozilla.Firefox", "140.0"))
	add(other.ID, "elsewhere", kb("KB5066835", "Critical"))

	d, err := s.Compliance(ctx, o.ID, day1)
	if err != nil || d.Date != "2026-11-20" || d.Endpoints != 3 || d.FullyPatched != 1 || d.MissingCritical != 1 || d.MissingOther != 1 ||
		d.CriticalCVEs != 0 || d.OverdueCVEs != 0 {
		t.Fatalf("compliance: %+v %v", d, err)
	}
	if n, err := s.RecordCompliance(ctx, day1); err != nil || n != 2 {
		t.Fatalf("record: %d %v", n, err)
	}
	// Later that day the critical endpoint is patched: the day's entry is
	// replaced, not added to.
	inv(t, s, o.ID, crit, "crit", day1.Add(time.Hour))
	if _, err := s.RecordCompliance(ctx, day1.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	day2 := day1.AddDate(0, 0, 1)
	if _, err := s.RecordCompliance(ctx, day2); err != nil {
		t.Fatal(err)
	}
	h, err := s.ComplianceHistory(ctx, o.ID, day1.AddDate(0, 0, -29), day2)
	if err != nil || len(h) != 2 {
		t.Fatalf("history: %+v %v", h, err)
	}
	if h[0].Date != "2026-11-20" || h[0].FullyPatched != 2 || h[0].MissingCritical != 0 || !h[0].RecordedAt.Equal(day1.Add(2*time.Hour)) ||
		h[1].Date != "2026-11-21" || h[1].Endpoints != 3 {
		t.Errorf("history: %+v", h)
	}
	// A recording that arrives late (an older time from a slow replica)
	// does not overwrite a newer one.
	if _, err := s.RecordCompliance(ctx, day1.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.ComplianceHistory(ctx, o.ID, day1, day1); len(h) != 1 || !h[0].RecordedAt.Equal(day1.Add(2*time.Hour)) {
		t.Errorf("an older recording replaced a newer one: %+v", h)
	}
	if h, _ := s.ComplianceHistory(ctx, o.ID, day2, day2); len(h) != 1 || h[0].Date != "2026-11-21" {
		t.Errorf("one day: %+v", h)
	}
	if h, _ := s.ComplianceHistory(ctx, other.ID, day1, day2); len(h) != 2 || h[0].Endpoints != 1 || h[0].MissingCritical != 1 {
		t.Errorf("other organization: %+v", h)
	}
	// Past ComplianceKeepDays the old days are forgotten.
	if _, err := s.RecordCompliance(ctx, day1.AddDate(0, 0, store.ComplianceKeepDays)); err != nil {
		t.Fatal(err)
	}
	h, _ = s.ComplianceHistory(ctx, o.ID, day1.AddDate(-2, 0, 0), day1.AddDate(2, 0, 0))
	if len(h) != 2 || h[0].Date != "2026-11-21" {
		t.Errorf("after %d days: %+v", store.ComplianceKeepDays, h)
	}
}

// inv replaces an endpoint's inventory with these missing updates.
func inv(t *testing.T, s *store.Store, orgID, id, name string, at time.Time, ups ...agentproto.Update) {
	t.Helper()
	doc := &agentproto.Inventory{CollectedAt: at, System: agentproto.System{Hostname: name, Type: "workstation", OS: str("Windows 11 Pro")}, Updates: ups}
	n, err := inventory.Check(doc, "windows", "", at)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceInventory(context.Background(), orgID, id, n, "x", at); err != nil {
		t.Fatal(err)
	}
}
