package console_test

import (
	"encoding/csv"
	"net/http"
	"slices"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
)

// TestReportDownloadNeutralisesFormulas: the console's CSV download writes
// agent-reported text that starts with = or + with a single quote in front.
func TestReportDownloadNeutralisesFormulas(t *testing.T) {
	e := apitest.New(t)
	const name, version = `=HYPERLINK("https://evil.example/","Click")`, `+cmd|' /C calc'!A0`
	doc := apitest.Sample("ws-formula", "windows")
	v := version
	doc.Software = append(doc.Software, agentproto.Software{Name: name, Version: &v})
	e.Enroll("console-csv", "ws-formula", "windows").MustInventory(doc)
	b := adminBrowser(t, e)

	resp, err := b.c.Get(e.URL + "/console/reports/installed-software.csv")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	found := false
	for _, r := range rows {
		if slices.Contains(r, name) || slices.Contains(r, version) {
			t.Errorf("a formula as reported: %q", r)
		}
		found = found || slices.Contains(r, "'"+name) && slices.Contains(r, "'"+version)
	}
	if !found {
		t.Errorf("no row with the neutralised cells: %q", rows)
	}
}
