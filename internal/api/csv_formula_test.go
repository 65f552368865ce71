package api_test

import (
	"encoding/csv"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
)

// Values an agent reports that a spreadsheet would run as formulas.
const (
	formulaName      = `=HYPERLINK("https://evil.example/","Click to update")`
	formulaVersion   = `+cmd|' /C calc'!A0`
	formulaPublisher = `@SUM(1+1)*cmd|' /C calc'!A0`
	formulaTitle     = `-2+3+cmd|' /C calc'!A0`
)

func formulaInventory() agentproto.Inventory {
	doc := apitest.Sample("ws-formula", "windows")
	v, p := formulaVersion, formulaPublisher
	doc.Software = append(doc.Software, agentproto.Software{Name: formulaName, Version: &v, Publisher: &p})
	doc.Updates = append(doc.Updates, agentproto.Update{Title: formulaTitle, Source: "Applications", Severity: ptr("Critical"),
		InstalledVersion: ptr("1.0"), LatestVersion: ptr("2.0")})
	return doc
}

// TestReportCSVNeutralisesFormulas: agent-reported text that starts with
// =, +, - or @ reaches the CSV download with a single quote in front, and
// the JSON report unchanged.
func TestReportCSVNeutralisesFormulas(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	e.Enroll("csv-1", "ws-formula", "windows").MustInventory(formulaInventory())

	for key, want := range map[string][]string{
		"installed-software": {"'" + formulaName, "'" + formulaVersion, "'" + formulaPublisher},
		"missing-updates":    {"'" + formulaTitle},
	} {
		resp, err := e.Admin.ReportCSV(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		records, err := csv.NewReader(resp.Body).ReadAll()
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		cells := map[string]bool{}
		for _, rec := range records {
			for _, c := range rec {
				cells[c] = true
			}
		}
		for _, w := range want {
			if !cells[w] {
				t.Errorf("%s CSV lacks the cell %q: %q", key, w, records)
			}
		}
		for _, raw := range []string{formulaName, formulaVersion, formulaPublisher, formulaTitle} {
			if cells[raw] {
				t.Errorf("%s CSV has the formula %q as it was reported", key, raw)
			}
		}
		rep, err := e.Admin.Report(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, row := range rep.Rows {
			for _, v := range row {
				found = found || v == formulaName || v == formulaTitle
			}
		}
		if !found {
			t.Errorf("%s JSON does not carry the value as reported", key)
		}
	}
}
