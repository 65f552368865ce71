package reports

import (
	"slices"
	"testing"

	"github.com/patchd/patchd/internal/alerts"
)

// TestAlertReportKeysAreTheCatalog holds the keys REPORT_ROWS accepts to the
// report catalog.
func TestAlertReportKeysAreTheCatalog(t *testing.T) {
	var keys []string
	for _, d := range Catalog() {
		keys = append(keys, d.Key)
	}
	want := slices.Clone(alerts.ReportKeys)
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("REPORT_ROWS keys and the catalog differ:\ncatalog %v\nalerts  %v", keys, want)
	}
}
