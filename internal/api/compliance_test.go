package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestComplianceHistory: GET /api/v1/compliance/history (a patchd
// addition) answers the recorded days of the last `days`, oldest first,
// for the caller's organization only; the report compliance-history has
// the same days; a bad days is 400; endpoints.view is needed.
func TestComplianceHistory(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	e.Enroll("m1", "host-1", "linux")
	now := time.Now()
	for _, at := range []time.Time{now.AddDate(0, 0, -40), now.AddDate(0, 0, -1), now} {
		if _, err := e.Store.RecordCompliance(ctx, at); err != nil {
			t.Fatal(err)
		}
	}
	admin := e.Client(e.Org, perm.All)
	h, err := admin.ComplianceHistory(ctx, 0)
	if err != nil || h.Total != 2 || len(h.Items) != 2 || h.Items[1].Date != now.UTC().Format(time.DateOnly) || h.Items[1].Endpoints != 1 ||
		h.Items[1].FullyPatched != 1 || h.Items[0].Date != now.AddDate(0, 0, -1).UTC().Format(time.DateOnly) {
		t.Fatalf("30 days: %+v %v", h, err)
	}
	if h, err := admin.ComplianceHistory(ctx, 1); err != nil || h.Total != 1 {
		t.Errorf("1 day: %+v %v", h, err)
	}
	if h, err := admin.ComplianceHistory(ctx, 90); err != nil || h.Total != 3 {
		t.Errorf("90 days: %+v %v", h, err)
	}
	rep, err := admin.Report(ctx, "compliance-history")
	if err != nil || rep.Total != 3 || rep.Rows[2][0] != now.UTC().Format(time.DateOnly) || rep.Rows[2][3] != float64(100) {
		t.Errorf("report: %+v %v", rep, err)
	}
	for _, days := range []int{-1, 401} {
		if _, err := admin.ComplianceHistory(ctx, days); !client.IsStatus(err, http.StatusBadRequest) {
			t.Errorf("days=%d: %v", days, err)
		}
	}
	tok := tokenOf(t, admin)
	if a := rawCall(t, e, http.MethodGet, "/api/v1/compliance/history?days=week", tok, nil); a.status != http.StatusBadRequest || a.code != "invalid_request" {
		t.Errorf("days=week: %d %s", a.status, a.body)
	}
	// An organization created after the recordings has none of them. The
	// server's own recorder (at its start, then every 10 minutes) may
	// record it today meanwhile, with its own (empty) state: on a busy
	// machine its first pass can come after this organization.
	other := e.Client(e.NewOrg("Other"), perm.All)
	h, err = other.ComplianceHistory(ctx, 90)
	if err != nil || h.Total > 1 {
		t.Errorf("other organization: %+v %v", h, err)
	}
	for _, d := range h.Items {
		if d.Date != now.UTC().Format(time.DateOnly) || d.Endpoints != 0 {
			t.Errorf("other organization has another's day: %+v", d)
		}
	}
	wantStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.ReportsView)).ComplianceHistory(ctx, 30)), http.StatusForbidden, "without endpoints.view")
}
