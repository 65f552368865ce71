package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
)

// listPage is a list of the console and the header cells of its key
// columns: what a row is and its severity and counts, which a phone shows
// without scrolling sideways.
type listPage struct {
	path, table string
	key         []string
}

var listPages = []listPage{
	{"/console/endpoints", "#endpoints", []string{"Name", "Missing critical", "Missing updates", "Overdue"}},
	{"/console/updates", "#updates", []string{"Update", "Severity", "Endpoints"}},
	{"/console/vulnerabilities", "#vulns", []string{"CVE", "CVSS", "Affected endpoints"}},
	{"/console/software", "#software-titles", []string{"Name", "Endpoints"}},
	{"/console/runs", "#runs", []string{"Run", "Status", "Progress"}},
	{"/console/automations", "#automations", []string{"Name", "Enabled", "Next run"}},
	{"/console/reports", "table.reports", []string{"Report", "What it lists", "Download"}},
	{"/console/audit", "#audit", []string{"When", "Actor", "Action"}},
}

// layout is what the test measures of a list page.
type layout struct {
	ScrollWidth int      `json:"scrollWidth"`
	InnerWidth  int      `json:"innerWidth"`
	Tables      int      `json:"tables"`
	Missing     []string `json:"missing"`   // key headers not found
	Outside     []string `json:"outside"`   // key headers outside the window
	Filters     int      `json:"filters"`   // filter forms on the page
	Shown       int      `json:"shown"`     // of them, laid out
	Summaries   int      `json:"summaries"` // visible "Filters" buttons
	Opt         int      `json:"opt"`       // secondary header cells laid out
	HeaderLines []int    `json:"headerLines"`
	SameLine    bool     `json:"sameLine"`
}

const measureList = `(function (sel, keys) {
	var w = window.innerWidth, out = {scrollWidth: document.scrollingElement.scrollWidth, innerWidth: w, missing: [], outside: [],
		tables: document.querySelectorAll(sel).length, filters: 0, shown: 0, summaries: 0, opt: 0, headerLines: [], sameLine: false};
	var ths = [];
	document.querySelectorAll(sel).forEach(function (t) { t.querySelectorAll("thead th").forEach(function (th) { ths.push(th); }); });
	keys.forEach(function (k) {
		var th = ths.find(function (th) { return th.textContent.replace(/\s+/g, " ").trim().replace(/ by risk$/, "") === k; });
		if (!th) { out.missing.push(k); return; }
		var r = th.getBoundingClientRect();
		if (r.width === 0 || r.left < -1 || r.right > w + 1) { out.outside.push(k + " at " + Math.round(r.left) + "–" + Math.round(r.right)); }
	});
	document.querySelectorAll("main form.filters").forEach(function (f) {
		out.filters++;
		if (f.checkVisibility()) { out.shown++; }
	});
	document.querySelectorAll("main details.fold > summary").forEach(function (s) { if (s.checkVisibility()) { out.summaries++; } });
	ths.forEach(function (th) { if (th.classList.contains("opt") && th.checkVisibility()) { out.opt++; } });
	// The header's e-mail and Sign out: one line box each, side by side.
	var mail = document.querySelector("form.who a"), out2 = document.querySelector("form.who button");
	[mail, out2].forEach(function (el) {
		var rg = document.createRange(); rg.selectNodeContents(el);
		var tops = {}; Array.prototype.forEach.call(rg.getClientRects(), function (r) { if (r.width > 0) { tops[Math.round(r.top)] = true; } });
		out.headerLines.push(Object.keys(tops).length);
	});
	var a = mail.parentElement.getBoundingClientRect(), b = out2.getBoundingClientRect();
	out.sameLine = a.top < b.bottom && b.top < a.bottom && a.right <= b.left + 1 && b.right <= w + 1;
	return out;
})`

// labelsBeside answers the filter labels whose field is not on their line,
// right of them.
const labelsBeside = `(function () {
	var bad = [];
	document.querySelectorAll("main form.filters label[for]").forEach(function (l) {
		var f = document.getElementById(l.htmlFor);
		if (!f || !f.checkVisibility()) { bad.push(l.textContent.trim() + ": no field shown"); return; }
		var a = l.getBoundingClientRect(), b = f.getBoundingClientRect();
		var mid = (a.top + a.bottom) / 2;
		if (!(mid > b.top && mid < b.bottom && a.right <= b.left + 1)) {
			bad.push(l.textContent.trim() + " at " + Math.round(a.left) + "," + Math.round(a.top) + ", its field at " + Math.round(b.left) + "," + Math.round(b.top));
		}
	});
	return bad;
})()`

func (tb *tab) measure(p listPage) layout {
	tb.t.Helper()
	keys, _ := json.Marshal(p.key)
	var l layout
	tb.do("measure "+p.path, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[layout](measureList+`("`+p.table+`", `+string(keys)+`)`)(ctx, t)
		l = v
		return chromedp.Void{}, err
	})
	return l
}

// phoneFleet is an organization with something in every list: endpoints
// missing updates with CVEs, a run with a failure, an automation.
func phoneFleet(t *testing.T) *apitest.Env {
	t.Helper()
	ctx := context.Background()
	e := withFeeds(t)
	a, deb := e.Enroll("m1", "win-a-with-a-rather-long-name", "windows"), e.Enroll("m2", "deb-c", "linux")
	a.MustInventory(apitest.Sample("win-a-with-a-rather-long-name", "windows"))
	deb.MustInventory(apitest.Sample("deb-c", "linux"))
	started, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{a.ID, deb.ID}})
	if err != nil {
		t.Fatal(err)
	}
	_ = started
	for _, ag := range []*apitest.Agent{a, deb} {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.4.0"})
		for _, c := range resp.Commands {
			status, result := "SUCCESS", ""
			if ag == deb {
				status, result = "FAILED", "shutdown: the system is locked by a maintenance inhibitor"
			}
			ag.Status(c.ID, status, result, nil)
		}
	}
	str := func(s string) *string { return &s }
	win := 120
	if _, err := e.Admin.CreateAutomation(ctx, apiv1.AutomationBody{Name: "Nightly reboot of every endpoint", ActionType: "REBOOT", TargetMode: str("all"),
		ScheduleKind: str("RECURRING"), Freq: str("DAILY"), AtTime: str("03:00"), WindowMinutes: &win}); err != nil {
		t.Fatal(err)
	}
	if err := e.Server.Presence().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the CVE matching", func() bool {
		l, err := e.Admin.ListVulnerabilities(ctx, client.VulnerabilityQuery{})
		return err == nil && l.Total > 0
	})
	return e
}

// TestBrowserListsOnAPhone opens every list of the console in Chromium at
// 1440 px and at a phone's 390 px. On the phone each list shows its key
// columns without scrolling sideways (the page is no wider than the window
// and their header cells are inside it), its filters are folded behind one
// "Filters" button and, unfolded, each label sits beside its field; the
// header's e-mail and Sign out share one line. At 1440 px the filters are
// open and every column shows.
func TestBrowserListsOnAPhone(t *testing.T) {
	tb := newTab(t)
	e := phoneFleet(t)
	tb.signInWithPassword(e.URL, "alice@example.com", "/console/endpoints", "#endpoints")

	for _, p := range listPages {
		tb.visit(e.URL, p.path, "wide"+strings.ReplaceAll(p.path, "/", "-"))
		l := tb.measure(p)
		if l.ScrollWidth > l.InnerWidth || len(l.Missing) > 0 || len(l.Outside) > 0 || l.Tables == 0 {
			t.Errorf("%s at 1440 px: page %d px wide in a %d px window, key columns missing %q, outside %q", p.path, l.ScrollWidth, l.InnerWidth, l.Missing, l.Outside)
		}
		if l.Shown != l.Filters || l.Summaries != 0 {
			t.Errorf("%s at 1440 px: %d of %d filter forms shown, %d Filters buttons shown (want all shown, no button)", p.path, l.Shown, l.Filters, l.Summaries)
		}
	}
	optWide := map[string]int{}
	for _, p := range listPages {
		tb.visit(e.URL, p.path, "wide-again")
		optWide[p.path] = tb.measure(p).Opt
	}

	tb.onPhone()
	for _, p := range listPages {
		tb.visit(e.URL, p.path, "phone"+strings.ReplaceAll(p.path, "/", "-"))
		l := tb.measure(p)
		if l.ScrollWidth > l.InnerWidth {
			t.Errorf("%s on a phone: the page is %d px wide in a %d px window", p.path, l.ScrollWidth, l.InnerWidth)
		}
		if len(l.Missing) > 0 || len(l.Outside) > 0 {
			t.Errorf("%s on a phone: key columns missing %q, outside the window %q", p.path, l.Missing, l.Outside)
		}
		if optWide[p.path] > 0 && l.Opt != 0 {
			t.Errorf("%s on a phone: %d secondary columns still shown", p.path, l.Opt)
		}
		if len(l.HeaderLines) != 2 || l.HeaderLines[0] != 1 || l.HeaderLines[1] != 1 || !l.SameLine {
			t.Errorf("%s on a phone: the header's e-mail and Sign out take %v lines, side by side %v", p.path, l.HeaderLines, l.SameLine)
		}
		if l.Filters == 0 {
			continue
		}
		if l.Shown != 0 || l.Summaries != 1 {
			t.Errorf("%s on a phone: %d of %d filter forms unfolded, %d Filters buttons (want folded behind one)", p.path, l.Shown, l.Filters, l.Summaries)
			continue
		}
		tb.do("unfold the filters of "+p.path, chromedp.Click(chromedp.CSS("main details.fold > summary")), chromedp.WaitVisible(chromedp.CSS("main form.filters")))
		tb.accessible(p.path + " with its filters unfolded")
		tb.screenshot("phone-filters" + strings.ReplaceAll(p.path, "/", "-"))
		var bad []string
		tb.do("labels of "+p.path, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			v, err := chromedp.Evaluate[[]string](labelsBeside)(ctx, tg)
			bad = v
			return chromedp.Void{}, err
		})
		if len(bad) > 0 {
			t.Errorf("%s on a phone: labels not beside their fields: %s", p.path, strings.Join(bad, "; "))
		}
		if l := tb.measure(p); l.ScrollWidth > l.InnerWidth {
			t.Errorf("%s on a phone with its filters unfolded: the page is %d px wide in a %d px window", p.path, l.ScrollWidth, l.InnerWidth)
		}
	}
}
