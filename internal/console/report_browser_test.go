package console_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestBrowserUpdateHistoryFits1440: the Windows Update History report,
// with Windows Update's long titles, fits a 1440 px window without a
// sideways scroll (the titles wrap), and axe finds nothing on it.
func TestBrowserUpdateHistoryFits1440(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	doc := apitest.Sample("win-accounting-desktop-0042", "windows")
	doc.Datasets = map[string][]map[string]any{}
	for i := range 6 {
		doc.Datasets["installed-updates"] = append(doc.Datasets["installed-updates"], map[string]any{
			"kb":          fmt.Sprintf("KB50%05d", 34123+i),
			"title":       fmt.Sprintf("2026-%02d Cumulative Update Preview for Windows 11 Version 24H2 for x64-based Systems (KB50%05d)", i+1, 34123+i),
			"type":        "Security Update",
			"installedAt": fmt.Sprintf("2026-%02d-14T03:12:00Z", i+1),
			"installedBy": "NT AUTHORITY\\SYSTEM (Windows Update)",
		})
	}
	e.Enroll("m1", "win-accounting-desktop-0042", "windows").MustInventory(doc)
	tb.signInWithPassword(e.URL, "alice@example.com", "/console/reports/windows-update-history", "#report-table")
	tb.accessible("the Windows Update History report")
	tb.screenshot("windows-update-history")
	var m struct {
		Scroll, Client, Page, Window, Rows int
	}
	tb.do("measure the report", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[struct {
			Scroll, Client, Page, Window, Rows int
		}](`(function () { var s = document.querySelector("#report-table").closest(".scroll");
			return {Scroll: s.scrollWidth, Client: s.clientWidth, Page: document.scrollingElement.scrollWidth, Window: window.innerWidth,
				Rows: document.querySelectorAll("#report-table tbody tr").length}; })()`)(ctx, tg)
		m = v
		return chromedp.Void{}, err
	})
	if m.Rows != 6 {
		t.Fatalf("the report shows %d rows, want 6", m.Rows)
	}
	if m.Scroll > m.Client || m.Page > m.Window {
		t.Errorf("at 1440 px the report's table is %d px wide in %d (the page %d in %d): it scrolls sideways", m.Scroll, m.Client, m.Page, m.Window)
	}
}
