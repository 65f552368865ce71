package store_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestReportSoftwareSources: the software sources answer the same rows
// whether read whole (on SQLite, software-by-endpoint sorts each
// endpoint's applications in memory) or through the SQL query of a page
// (a limit above the row count), titles differing only in case, empty
// versions, NULL columns, numeric text and characters JSON escapes
// included.
func TestReportSoftwareSources(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	o, err := admin.CreateOrg(ctx, s, "Software", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Truncate(time.Millisecond)
	ids, err := s.BulkEndpointsForTest(ctx, o.ID, 5, now)
	if err != nil {
		t.Fatal(err)
	}
	str := func(v string) *string { return &v }
	titles := []string{"Zoom", "7-Zip", "git", "Git", "GIT", "Ünicode app", "apple", `Quote "and" \backslash`, "tab\tnew\nline <&>"}
	var rows []store.SoftwareTestRow
	for i, ep := range ids[:4] { // the fifth endpoint has no software
		for j, title := range titles {
			if (i+j)%3 == 2 {
				continue
			}
			r := store.SoftwareTestRow{Endpoint: ep, Title: title, Version: fmt.Sprintf("%d.%d", j%2, i)}
			if j%2 == 0 {
				r.Publisher, r.InstallDate, r.InstalledFor, r.InstallType = str("Pub "+title), str("2026-01-0"+fmt.Sprint(i+1)), str("all"), str("12")
				if j == 6 {
					r.Publisher, r.InstalledFor = str("Pub \u2028 \x01 é 😀"), str("")
				}
			}
			rows = append(rows, r)
			if j == 3 { // a second version, and one without a version
				rows = append(rows, store.SoftwareTestRow{Endpoint: ep, Title: title, Version: "10.0"}, store.SoftwareTestRow{Endpoint: ep, Title: title, Version: ""})
			}
		}
	}
	if err := s.SoftwareForTest(ctx, o.ID, rows, now); err != nil {
		t.Fatal(err)
	}
	for _, source := range []string{"software", "software-by-endpoint"} {
		read := func(p store.ReportParams) []string {
			var out []string
			for r, err := range s.ReportRows(ctx, source, p) {
				if err != nil {
					t.Fatal(err)
				}
				if !r.At.Equal(now) {
					t.Errorf("%s: row collected at %v, want %v", source, r.At, now)
				}
				out = append(out, fmt.Sprintf("%#v", r.Values))
			}
			return out
		}
		whole := read(store.ReportParams{OrgID: o.ID, ReuseValues: true})
		query := read(store.ReportParams{OrgID: o.ID, Limit: math.MaxInt32})
		if len(whole) != len(rows) {
			t.Errorf("%s: %d rows, want %d", source, len(whole), len(rows))
		}
		if fmt.Sprint(whole) != fmt.Sprint(query) {
			t.Errorf("%s: whole report\n%v\nquery\n%v", source, whole, query)
		}
		// A reader that stops early (a client gone) ends the read.
		stopped := 0
		for _, err := range s.ReportRows(ctx, source, store.ReportParams{OrgID: o.ID}) {
			if err != nil {
				t.Fatal(err)
			}
			if stopped++; stopped == 3 {
				break
			}
		}
		n, err := s.ReportCount(ctx, source, store.ReportParams{OrgID: o.ID})
		if err != nil || n != len(rows) {
			t.Errorf("%s: count %d, %v; want %d", source, n, err, len(rows))
		}
	}
}
