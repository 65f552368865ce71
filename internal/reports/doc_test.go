package reports_test

import (
	"os"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/reports"
)

// TestReportsDocumented: docs/reports.md lists every report with its
// columns, as the catalog defines them.
func TestReportsDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/reports.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, d := range reports.Catalog() {
		line := "| `" + d.Key + "` | " + d.Title + " | " + d.Category + " | " + strings.Join(d.Columns, ", ") + " |"
		if !strings.Contains(doc, line) {
			t.Errorf("docs/reports.md lacks the line %s", line)
		}
	}
}
