package api_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// The catalog walk on a simulated fleet is internal/reports' test; these are
// the statuses of operation 24.
func TestReportStatuses(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	e.EnrollSample("r-1", "ws-report", "windows")

	// 404 for a key that is not in the catalog, in JSON and in CSV.
	mustStatus(t, errOf(e.Admin.Report(ctx, "no-such-report")), http.StatusNotFound, "unknown key")
	mustStatus(t, errOf(e.Admin.ReportCSV(ctx, "no-such-report")), http.StatusNotFound, "unknown key as CSV")

	// 403 without reports.view (even with every other permission), and
	// without api.access; reports.view alone is enough.
	for _, perms := range []perm.Set{perm.All &^ perm.Set(perm.ReportsView), perm.All &^ perm.Set(perm.APIAccess)} {
		c := e.Client(e.Org, perms)
		if _, err := c.ReportCatalog(ctx); !client.IsStatus(err, http.StatusForbidden) {
			t.Fatalf("catalog with %v: %v", perms, err)
		}
		if _, err := c.Report(ctx, "endpoints"); !client.IsStatus(err, http.StatusForbidden) {
			t.Fatalf("report with %v: %v", perms, err)
		}
	}
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.ReportsView))
	rep, err := viewer.Report(ctx, "disk-drives")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != 1 || rep.Rows[0][2] != "C:" || rep.CollectedAt == nil {
		t.Fatalf("disk-drives: %+v", rep)
	}

	// 401 without a token or with a bad one.
	for _, h := range []string{"", "Bearer not-a-token"} {
		req, _ := http.NewRequest(http.MethodGet, e.URL+"/api/v1/reports/endpoints?format=csv", nil)
		if h != "" {
			req.Header.Set("Authorization", h)
		}
		resp, err := e.HTTPClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("Authorization %q: %d", h, resp.StatusCode)
		}
	}

	// RFC 4180 quoting: a value with a comma, a quote and a line break
	// reads back unchanged.
	name := "Tricky, \"quoted\"\nname"
	if err := e.Admin.PatchEndpoint(ctx, mustFirstEndpoint(t, e), apiv1.EndpointPatch{Name: &name}); err != nil {
		t.Fatal(err)
	}
	resp, err := viewer.ReportCSV(ctx, "endpoints")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	records, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 2 || records[1][0] != name {
		t.Fatalf("csv records: %q", records)
	}
}

func mustFirstEndpoint(t *testing.T, e *apitest.Env) string {
	t.Helper()
	page, err := e.Admin.ListEndpoints(context.Background(), client.EndpointQuery{})
	if err != nil || len(page.Items) == 0 {
		t.Fatalf("endpoints: %v", err)
	}
	return page.Items[0].ID
}
