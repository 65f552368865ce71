package console_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
)

// dashNumber is one number of the dashboard: the list it opens and what it
// counts, as the card labels it.
type dashNumber struct {
	Href  string `json:"href"`
	N     string `json:"n"`
	Label string `json:"label"`
}

// TestBrowserDashboardNumbersEqualTheirLists opens, in Chromium, every
// number on the dashboard and counts the rows of the list it lands on:
// each is exactly that many, including the updates by severity when the
// same update is missing on several endpoints (counted once, as the
// updates list shows it), and each says what it counts.
func TestBrowserDashboardNumbersEqualTheirLists(t *testing.T) {
	tb := newTab(t)
	ctx := context.Background()
	e := withFeeds(t)
	// Two Windows endpoints missing the same updates, a Linux one, a clean one.
	a, b, deb, clean := e.Enroll("m1", "win-a", "windows"), e.Enroll("m2", "win-b", "windows"), e.Enroll("m3", "deb-c", "linux"), e.Enroll("m4", "win-clean", "windows")
	doc := apitest.Sample("win-a", "windows")
	doc.Software = append(doc.Software, agentproto.Software{Name: "VLC media player", Publisher: ptr("VideoLAN"), Version: ptr("3.0.18"), InstallType: ptr("msi")})
	a.MustInventory(doc)
	b.MustInventory(apitest.Sample("win-b", "windows"))
	deb.MustInventory(apitest.Sample("deb-c", "linux"))
	doc = apitest.Sample("win-clean", "windows")
	doc.Updates = nil
	clean.MustInventory(doc)
	for _, ag := range []*apitest.Agent{a, b, deb, clean} {
		ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.4.0"})
	}
	if err := e.Server.Presence().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CVE matching", func() bool {
		l, err := e.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{})
		return err == nil && l.Total > 0
	})

	tb.signInWithPassword(e.URL, "alice@example.com", "/console/", "#h-compliance")
	tb.accessible("dashboard")
	var numbers []dashNumber
	tb.do("read the dashboard's numbers", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[[]dashNumber](`(function () {
			var out = [];
			document.querySelectorAll("main .cards a").forEach(function (a) {
				var n = a.textContent.trim();
				if (!/^\d+$/.test(n)) { return; }
				var row = a.closest("tr"), dd = a.closest("dd"), label = "";
				if (dd && dd.previousElementSibling) { label = dd.previousElementSibling.textContent; }
				else if (row) {
					var th = a.closest("table").querySelectorAll("thead th")[a.closest("td").cellIndex];
					label = (row.querySelector("th") ? row.querySelector("th").textContent + " · " : "") + (th ? th.textContent : "");
				} else { label = a.closest("section").textContent; }
				label = a.closest("section").querySelector("h2").textContent + " · " + label;
				out.push({href: a.getAttribute("href"), n: n, label: label.replace(/\s+/g, " ").trim()});
			});
			return out;
		})()`)(ctx, tg)
		numbers = v
		return chromedp.Void{}, err
	})
	if len(numbers) < 15 {
		t.Fatalf("only %d numbers on the dashboard: %+v", len(numbers), numbers)
	}
	sawShared := false
	for _, num := range numbers {
		if !strings.Contains(num.Label, "ndpoint") && !strings.Contains(num.Label, "pdate") && !strings.Contains(num.Label, "CVE") &&
			!strings.Contains(num.Label, "run") && !strings.Contains(num.Label, "Compliant") && !strings.Contains(num.Label, "compliance") {
			t.Errorf("%s (%s) does not say what it counts: %q", num.Href, num.N, num.Label)
		}
		tb.do("open "+num.Href, chromedp.Navigate(e.URL+num.Href), chromedp.WaitVisible(chromedp.CSS("main table.list")))
		var rows int
		tb.do("count the rows of "+num.Href, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			v, err := chromedp.Evaluate[int](`(function () {
				var n = 0;
				document.querySelector("main table.list").querySelectorAll("tbody tr").forEach(function (tr) {
					if (!tr.querySelector("td[colspan]")) { n++; }
				});
				return n;
			})()`)(ctx, tg)
			rows = v
			return chromedp.Void{}, err
		})
		if strconv.Itoa(rows) != num.N {
			tb.screenshot("number-" + num.N)
			t.Errorf("the dashboard's %s (%q) opens %s with %d rows", num.N, num.Label, num.Href, rows)
		}
		if strings.HasPrefix(num.Href, "/console/updates?severity=") && num.N != "0" {
			sawShared = true
		}
	}
	if !sawShared {
		t.Errorf("no severity has updates: %+v", numbers)
	}
}
