package console_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/sim"
)

// chromium finds the browser; without one the test skips, unless CI is set
// (.ci/run installs Debian's chromium), where it fails.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium binary found, and CI is set: .ci/run installs it (apt-get install chromium)")
	}
	t.Skip("browser tests skipped: no chromium binary found (apt-get install chromium); under CI they run")
	return ""
}

// tab is a headless Chromium tab on the console that fails the test on any
// JavaScript exception and on any 4xx/5xx answer to the page's requests.
type tab struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	shot int

	axe string // axe-core's source, run on every page visited

	mu       sync.Mutex
	problems []string
	expect   map[int]bool // statuses a step expects (a refused form)
}

func newTab(t *testing.T) *tab {
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(path), chromedp.UserDataDir(t.TempDir()), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-background-networking", true), chromedp.Flag("no-first-run", true),
		chromedp.WindowSize(1440, 900)}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:], opts...)...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelT(); cancelC(); cancelA() })
	dir := os.Getenv("PATCHD_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tb := &tab{t: t, ctx: ctx, dir: dir, axe: axeSource(t)}
	if err := chromedp.Listen(ctx, func(ev any) {
		tb.mu.Lock()
		defer tb.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			tb.problems = append(tb.problems, fmt.Sprintf("JavaScript exception: %s %s:%d", ev.ExceptionDetails.Text, ev.ExceptionDetails.URL, ev.ExceptionDetails.LineNumber))
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				tb.problems = append(tb.problems, "console error: "+strings.Join(args, " "))
			}
		case *network.EventRequestWillBeSent:
			// A read never carries the CSRF token in its address (logs,
			// proxies and Referer headers keep addresses).
			if u, err := url.Parse(ev.Request.URL); err == nil && ev.Request.Method == http.MethodGet && u.Query().Has("csrf") {
				tb.problems = append(tb.problems, "CSRF token in the query string of GET "+ev.Request.URL)
			}
		case *network.EventResponseReceived:
			if st := int(ev.Response.Status); st >= 400 && !tb.expect[st] {
				tb.problems = append(tb.problems, fmt.Sprintf("%d answer to %s", st, ev.Response.URL))
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return tb
}

// do runs steps and then checks that the page had no problem.
func (tb *tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, steps...); err != nil {
		tb.screenshot("failed-" + what)
		tb.t.Fatalf("%s: %v", what, err)
	}
	tb.check(what)
}

func (tb *tab) check(what string) {
	tb.t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.problems) > 0 {
		tb.t.Fatalf("%s: %s", what, strings.Join(tb.problems, "; "))
	}
}

// path is the address of the page shown, from its path on.
func (tb *tab) path() string {
	tb.t.Helper()
	loc, err := chromedp.Run(tb.ctx, chromedp.Location())
	if err != nil {
		tb.t.Fatalf("location: %v", err)
	}
	u, err := url.Parse(loc)
	if err != nil {
		tb.t.Fatalf("location %q: %v", loc, err)
	}
	return u.RequestURI()
}

func (tb *tab) text(sel string) string {
	tb.t.Helper()
	s, err := chromedp.Run(tb.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		tb.t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func (tb *tab) screenshot(name string) {
	tb.t.Helper()
	buf, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.t.Logf("screenshot %s: %v", name, err)
		return
	}
	tb.shot++
	if err := os.WriteFile(filepath.Join(tb.dir, fmt.Sprintf("%02d-%s.png", tb.shot, name)), buf, 0o644); err != nil {
		tb.t.Fatal(err)
	}
}

// visit opens a console page, waits for it, checks it, runs axe-core on it
// and screenshots it.
func (tb *tab) visit(base, path, name string) {
	tb.t.Helper()
	tb.do("open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("main")), acceptConfirms())
	tb.accessible(path)
	tb.screenshot(name)
}

// axeSource reads axe-core as .ci/run installs it (npm ci in
// testdata/axe). Without it the pages are not scanned, unless CI is set,
// where the test fails.
func axeSource(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("axe-core is missing and CI is set (.ci/run installs it with npm ci in internal/console/testdata/axe): %v", err)
		}
		t.Logf("pages are not scanned for accessibility: %v (npm ci in internal/console/testdata/axe)", err)
	}
	return string(b)
}

// axeViolation is what the test keeps of one axe-core finding.
type axeViolation struct {
	ID     string   `json:"id"`
	Impact string   `json:"impact"`
	Help   string   `json:"help"`
	Nodes  []string `json:"nodes"`
}

// accessible runs axe-core (WCAG 2.x A and AA rules and its best
// practices) on the page shown and fails the test on any violation.
func (tb *tab) accessible(what string) {
	tb.t.Helper()
	if tb.axe == "" {
		return
	}
	const run = `(function () {
		return axe.run(document, {resultTypes: ["violations"]}).then(function (r) {
			return r.violations.map(function (v) {
				return {id: v.id, impact: v.impact || "", help: v.help,
					nodes: v.nodes.slice(0, 3).map(function (n) { return n.target.join(" "); })};
			});
		});
	})()`
	var found []axeViolation
	err := chromedp.Do(tb.ctx, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[bool]("(function () { if (!window.axe) { "+tb.axe+"\n } return true; })()")(ctx, t); err != nil {
			return chromedp.Void{}, fmt.Errorf("loading axe-core: %w", err)
		}
		v, err := chromedp.Evaluate[[]axeViolation](run, chromedp.EvalAwaitPromise)(ctx, t)
		found = v
		return chromedp.Void{}, err
	})
	if err != nil {
		tb.t.Fatalf("axe-core on %s: %v", what, err)
	}
	for _, v := range found {
		tb.t.Errorf("accessibility (axe-core) on %s: %s [%s, %s] at %s", what, v.Help, v.ID, v.Impact, strings.Join(v.Nodes, "; "))
	}
}

// onPhone shows the console as a 390×844 phone does (the next pages
// visited are laid out, scanned and screenshot at that size).
func (tb *tab) onPhone() {
	tb.t.Helper()
	tb.do("phone viewport", chromedp.EmulateViewport(390, 844))
}

// fitsWidth fails the test when the page is wider than the window (a
// table or header running off a phone screen scrolls the whole page).
func (tb *tab) fitsWidth(what string) {
	tb.t.Helper()
	var over struct {
		By    int      `json:"by"`
		Where []string `json:"where"`
	}
	// The culprits are the outermost elements reaching past the window.
	const measure = `(function () {
		var w = window.innerWidth, where = [];
		document.querySelectorAll("body *").forEach(function (el) {
			if (where.length < 5 && el.getBoundingClientRect().right > w + 1 && el.parentElement.getBoundingClientRect().right <= w + 1) {
				where.push(el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).split(" ").join(".") : ""));
			}
		});
		return {by: document.documentElement.scrollWidth - w, where: where};
	})()`
	tb.do("width of "+what, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[struct {
			By    int      `json:"by"`
			Where []string `json:"where"`
		}](measure)(ctx, t)
		over = v
		return chromedp.Void{}, err
	})
	if over.By > 0 {
		tb.screenshot("too-wide")
		tb.t.Errorf("%s is %d px wider than the window (at %s)", what, over.By, strings.Join(over.Where, ", "))
	}
}

// burst fires three change events on a form at once, as fast typing in a
// live-preview form does.
func burst(form string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`(function () { var f = document.querySelector("`+form+`");
			for (var i = 0; i < 3; i++) { f.dispatchEvent(new Event("change", {bubbles: true})); } return true; })()`)(ctx, t)
		return chromedp.Void{}, err
	}
}

// acceptConfirms answers yes to the console's confirmation dialogs.
func acceptConfirms() chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`window.confirm = function () { return true; }; true`)(ctx, t)
		return chromedp.Void{}, err
	}
}

func TestBrowserJourneys(t *testing.T) {
	tb := newTab(t)
	// A webhook receiver the alert rule delivers to (TLS, trusted by the server).
	var hooks atomic.Int32
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hooks.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	roots := x509.NewCertPool()
	roots.AddCert(hook.Certificate())
	e := apitest.New(t, func(c *config.Config) {
		c.VulnMatchInterval = 100 * time.Millisecond
		c.WebhookTLS = &tls.Config{RootCAs: roots}
	})
	ctx := context.Background()
	boot, err := admin.CreateCredential(ctx, e.Store, store.FirstStartActor, e.Org.ID, "bootstrap-admin", store.RoleAdministrator)
	if err != nil {
		t.Fatal(err)
	}

	// A simulated fleet reports its inventory and answers commands.
	fleet, err := sim.New(sim.Config{Server: e.URL, EnrollToken: e.EnrollToken, Endpoints: 24, Speed: 1000, Seed: 9, Wait: -1})
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan struct{})
	go func() { fleet.Run(simCtx); close(simDone) }()
	t.Cleanup(func() { stopSim(); <-simDone })
	waitFor(t, "the fleet's missing updates", func() bool {
		keys, _, err := e.Store.ListUpdateKeys(ctx, store.UpdateKeyQuery{OrgID: e.Org.ID, Limit: 1})
		return err == nil && len(keys) > 0
	})

	// First sign-in: the first-run page, proven with the bootstrap credential.
	tb.visit(e.URL, "/console/setup", "setup")
	tb.do("first-run form",
		chromedp.SendKeys(chromedp.CSS("#client_id"), boot.ClientID),
		chromedp.SendKeys(chromedp.CSS("#client_secret"), boot.ClientSecret),
		chromedp.SendKeys(chromedp.CSS("#email"), "alice@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.SendKeys(chromedp.CSS("#password2"), password),
		chromedp.Submit(chromedp.CSS("#password2")),
		chromedp.WaitVisible(chromedp.CSS("#h-runs")))
	tb.screenshot("dashboard")

	// Create an API credential and use its secret against the API.
	tb.visit(e.URL, "/console/users", "users")
	tb.do("create a credential",
		chromedp.SendKeys(chromedp.CSS("#cname"), "reporting-script"),
		chromedp.Submit(chromedp.CSS("#cname")),
		chromedp.WaitVisible(chromedp.CSS("#new-client-secret")))
	tb.screenshot("credential-created")
	id, secret := tb.text("#new-client-id"), tb.text("#new-client-secret")
	var page struct {
		Total int `json:"total"`
	}
	if err := client.New(e.URL, id, secret).Do(ctx, http.MethodGet, "/api/v1/endpoints", nil, nil, &page); err != nil || page.Total != 24 {
		t.Fatalf("the new credential against the API: total %d, %v", page.Total, err)
	}

	// Approve an update.
	tb.visit(e.URL, "/console/updates", "updates")
	tb.do("approve the first update",
		chromedp.Click(chromedp.CSS(`input[name="key"]`)),
		chromedp.Click(chromedp.CSS(`button[value="APPROVED"]`)),
		chromedp.WaitVisible(chromedp.CSS(".flash.ok")))
	tb.screenshot("update-approved")
	approved, _, err := e.Store.ListUpdateKeys(ctx, store.UpdateKeyQuery{OrgID: e.Org.ID, Approval: "APPROVED", Limit: 10})
	if err != nil || len(approved) != 1 {
		t.Fatalf("approved keys after the click: %v %v", approved, err)
	}
	entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Actor: "user:alice@example.com", Action: "update.approve"})
	if len(entries) != 1 {
		t.Errorf("the approval is not in the Audit Trail as user:alice@example.com: %+v", entries)
	}

	// A dynamic group and its members.
	tb.visit(e.URL, "/console/groups/new", "group-new")
	tb.do("dynamic group rules",
		chromedp.SendKeys(chromedp.CSS("#gname"), "Linux servers"),
		chromedp.SetValue(chromedp.CSS("#r0field"), "platform"),
		chromedp.SetValue(chromedp.CSS("#r0op"), "equals"),
		chromedp.SendKeys(chromedp.CSS("#r0value"), "linux"),
		chromedp.WaitVisible(chromedp.CSS("#preview-count")))
	// The preview follows the typing: wait until it settles.
	var preview string
	waitFor(t, "the member preview to settle", func() bool {
		before := tb.text("#preview-count")
		time.Sleep(700 * time.Millisecond)
		preview = tb.text("#preview-count")
		return preview == before && preview != "0"
	})
	// A burst of changes: the preview requests follow one another instead
	// of cancelling each other (a cancelled request is an htmx error in the
	// console and a client gone on the server).
	tb.do("a burst of preview requests", burst("#group-form"), chromedp.Sleep(time.Second))
	tb.screenshot("group-preview")
	tb.do("create the group", chromedp.Submit(chromedp.CSS("#gname")), chromedp.WaitVisible(chromedp.CSS("#h-members")))
	tb.screenshot("group")
	if members := tb.text("#preview strong"); members != preview || members == "0" {
		t.Errorf("the group has %s members, the preview said %s", members, preview)
	}

	// A Patch Tuesday automation and its next runs.
	tb.visit(e.URL, "/console/automations/new", "automation-new")
	tb.do("Patch Tuesday automation",
		chromedp.SendKeys(chromedp.CSS("#aname"), "Patch Tuesday + 1"),
		chromedp.SetValue(chromedp.CSS("#aoff"), "1"),
		chromedp.WaitVisible(chromedp.CSS("#nextruns li")))
	tb.do("a burst of schedule previews", burst("#auto-form"), chromedp.Sleep(time.Second))
	tb.screenshot("automation-preview")
	tb.do("create the automation", chromedp.Submit(chromedp.CSS("#aname")), chromedp.WaitVisible(chromedp.CSS("#next-runs li")), acceptConfirms())
	tb.screenshot("automation")
	if next := tb.text("#next-runs li"); !strings.Contains(next, "Wed") {
		t.Errorf("Patch Tuesday + 1 should run on a Wednesday, the page says %q", next)
	}
	// Edit it: two days after Patch Tuesday, on Thursdays.
	tb.do("edit the automation", chromedp.Click(chromedp.CSS("#edit-automation")), chromedp.WaitVisible(chromedp.CSS("#aoff")),
		chromedp.SetValue(chromedp.CSS("#aoff"), "2"), chromedp.Submit(chromedp.CSS("#aname")), chromedp.WaitVisible(chromedp.CSS("#next-runs li")))
	tb.screenshot("automation-edited")
	if next := tb.text("#next-runs li"); !strings.Contains(next, "Thu") {
		t.Errorf("after the edit Patch Tuesday + 2 should run on a Thursday, the page says %q", next)
	}

	// Run an action and watch it complete.
	tb.visit(e.URL, "/console/endpoints", "endpoints")
	tb.do("reboot every endpoint of the page",
		chromedp.Click(chromedp.CSS(`input[data-check-all]`)),
		chromedp.SetValue(chromedp.CSS("#bulk-type"), "REBOOT"),
		chromedp.Click(chromedp.CSS(`#bulk button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS("#run-progress")))
	tb.screenshot("run-started")
	tb.do("the run completes", chromedp.WaitVisible(chromedp.CSS(`#run-status[data-status="COMPLETED"]`)))
	tb.screenshot("run-completed")

	// Vulnerability feeds: upload the fixture feeds; the fleet is matched.
	tb.visit(e.URL, "/console/feeds", "feeds")
	var abs []string
	for _, f := range feedFixtures {
		p, err := filepath.Abs(f)
		if err != nil {
			t.Fatal(err)
		}
		abs = append(abs, p)
	}
	tb.do("upload the feeds",
		chromedp.SetUploadFiles(chromedp.CSS("#ffile"), abs),
		chromedp.Submit(chromedp.CSS("#ffile")),
		chromedp.WaitVisible(chromedp.CSS("#import-result")))
	tb.screenshot("feeds-imported")
	if kev := tb.text("#result-kev"); kev == "0" {
		t.Errorf("the upload imported no KEV entry")
	}
	waitFor(t, "the fleet matched against the new feeds", func() bool {
		fv, err1 := e.Store.VulnState(ctx, store.StateFeedVersion)
		mv, err2 := e.Store.VulnState(ctx, store.StateMatchedVersion)
		return err1 == nil && err2 == nil && mv >= fv
	})
	tb.visit(e.URL, "/console/vulnerabilities?accepted=1", "vulnerabilities")

	// Reports: the catalog, a page of one, and its CSV download.
	tb.visit(e.URL, "/console/reports", "reports")
	tb.visit(e.URL, "/console/reports/endpoints?limit=10", "report-endpoints")
	rows := tb.download("#download-csv")
	if len(rows) < 2 || rows[0][0] != "Endpoint" || rows[0][1] != "Endpoint ID" || len(rows[1]) != len(rows[0]) || rows[1][0] == "" {
		t.Errorf("the downloaded CSV has %d rows, starting %q", len(rows), rows[:min(len(rows), 2)])
	}
	if len(rows) != 25 {
		t.Errorf("the endpoints CSV has %d data rows, want 24", len(rows)-1)
	}

	// An alert rule: created in the console, then listed.
	tb.visit(e.URL, "/console/alerts", "alerts-empty")
	tb.do("create an alert rule",
		chromedp.SendKeys(chromedp.CSS("#aname"), "Critical vulnerabilities"),
		chromedp.SetValue(chromedp.CSS("#atrigger"), "CRITICAL_VULN"),
		chromedp.SendKeys(chromedp.CSS("#athreshold"), "9"),
		chromedp.SendKeys(chromedp.CSS("#ahook"), hook.URL+"/patchd"),
		chromedp.Submit(chromedp.CSS("#aname")),
		chromedp.WaitVisible(chromedp.CSS("#rule-state")))
	tb.screenshot("alert-created")
	tb.do("send a test event", chromedp.Click(chromedp.CSS("#send-test")), chromedp.WaitVisible(chromedp.CSS("#events tbody code")))
	if ev := tb.text("#events tbody code"); ev != "TEST" {
		t.Errorf("the rule's newest event is %q, want TEST", ev)
	}
	// The events table follows the delivery until the receiver answered.
	tb.do("the test event is delivered", chromedp.WaitVisible(chromedp.CSS("#events tbody .badge.on")))
	if got := tb.text("#events tbody .badge.on"); got != "HTTP 204" || hooks.Load() != 1 {
		t.Errorf("the delivery result shown is %q after %d webhook call(s), want HTTP 204 after 1", got, hooks.Load())
	}
	tb.screenshot("alert-tested")
	tb.visit(e.URL, "/console/alerts", "alerts")
	if list := tb.text("#alert-rules tbody"); !strings.Contains(list, "Critical vulnerabilities") || !strings.Contains(list, "CRITICAL_VULN") {
		t.Errorf("the alert rules list does not show the new rule: %q", list)
	}

	// The drill-downs, each ending in its action: a CVE's page; an
	// update's page and its deployment to the endpoints missing it; a
	// software title's versions and endpoints; a dashboard number leads
	// to a list of exactly that many.
	tb.visit(e.URL, "/console/vulnerabilities", "vulnerabilities-list")
	var cvePage, titlePage string
	tb.do("open a CVE", chromedp.Click(chromedp.CSS(`#vulns tbody td > a[href^="/console/vulnerabilities/"]`)), chromedp.WaitVisible(chromedp.CSS("#vuln-facts")))
	cvePage = tb.path()
	tb.accessible("a CVE's page")
	tb.screenshot("vulnerability")
	if got := tb.text("#main h1"); !strings.HasPrefix(got, "CVE-") {
		t.Errorf("the CVE page's heading is %q", got)
	}
	tb.visit(e.URL, "/console/updates?severity=Critical", "updates-critical")
	tb.do("open an update", chromedp.Click(chromedp.CSS(`table.list tbody td a[href^="/console/updates/"]`)), chromedp.WaitVisible(chromedp.CSS("#update-facts")), acceptConfirms())
	tb.accessible("an update's page")
	tb.screenshot("update")
	tb.do("deploy it", chromedp.Click(chromedp.CSS("#deploy-update button")), chromedp.WaitVisible(chromedp.CSS("#run-progress")))
	tb.screenshot("update-deployed")
	if got := tb.text("#main h1"); !strings.HasPrefix(got, "Deploy ") {
		t.Errorf("deploying from the update's page opened %q", got)
	}
	tb.visit(e.URL, "/console/software", "software")
	tb.do("open a title", chromedp.Click(chromedp.CSS(`#software-titles tbody td a[href^="/console/software/title"]`)), chromedp.WaitVisible(chromedp.CSS("#title-versions")))
	titlePage = tb.path()
	tb.accessible("a software title's page")
	tb.screenshot("software-title")
	// The endpoints list: a filter, a sort, the CSV of exactly what is
	// filtered, and an action on all N matching.
	tb.visit(e.URL, "/console/endpoints", "endpoints-all")
	tb.do("filter the Windows endpoints", chromedp.SetValue(chromedp.CSS("#f-platform"), "windows"), chromedp.Submit(chromedp.CSS("#endpoint-filters")),
		chromedp.WaitReady(chromedp.CSS(`#f-platform option[value="windows"][selected]`)))
	windows := tb.text("#endpoint-total strong")
	tb.do("sort them by last seen", chromedp.Click(chromedp.CSS(`#endpoints thead a[href*="sort=lastSeen"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#endpoints th[aria-sort] a[href*="sort=lastSeen"]`)), acceptConfirms())
	tb.accessible("the filtered, sorted endpoints list")
	tb.screenshot("endpoints-windows")
	if rows := tb.download("#endpoints-csv"); strconv.Itoa(len(rows)-1) != windows || windows == "0" {
		t.Errorf("the CSV of the %s Windows endpoints has %d rows", windows, len(rows)-1)
	}
	tb.do("reboot all matching", chromedp.Click(chromedp.CSS("#select-all-matching")), chromedp.SetValue(chromedp.CSS("#bulk-type"), "REBOOT"),
		chromedp.Click(chromedp.CSS(`#bulk button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#run-progress")))
	if runs, err := e.Admin.ListRuns(ctx, client.RunQuery{Limit: 1}); err != nil || len(runs.Items) != 1 || strconv.Itoa(runs.Items[0].Total) != windows {
		t.Errorf("rebooting all %s matching started %+v %v", windows, runs.Items, err)
	}
	tb.visit(e.URL, "/console/", "dashboard-compliance")
	want := tb.text("#compliance dd a")
	tb.do("follow a dashboard number", chromedp.Click(chromedp.CSS("#compliance dd a")), chromedp.WaitVisible(chromedp.CSS("#endpoint-total")))
	if got := tb.text("#endpoint-total strong"); got != want {
		t.Errorf("the dashboard says %s fully patched, the list it links to holds %s", want, got)
	}

	for _, p := range []struct{ path, name string }{{"/console/", "dashboard-after"}, {"/console/runs", "runs"}, {"/console/groups", "groups"},
		{"/console/automations", "automations"}, {"/console/scripts", "scripts"}, {"/console/enrollment", "enrollment"}, {"/console/audit", "audit"}} {
		tb.visit(e.URL, p.path, p.name)
	}
	ids := fleet.EndpointIDs()
	tb.visit(e.URL, "/console/endpoints/"+ids[0], "endpoint")

	// The same pages on a phone: nothing runs off the screen, the menu
	// folds behind its button and opens with it.
	tb.onPhone()
	for _, p := range []struct{ path, name string }{{"/console/", "phone-dashboard"}, {"/console/endpoints", "phone-endpoints"},
		{"/console/endpoints/" + ids[0], "phone-endpoint"}, {"/console/updates", "phone-updates"}, {"/console/software", "phone-software"},
		{"/console/vulnerabilities", "phone-vulnerabilities"}, {"/console/runs", "phone-runs"}, {"/console/runs?failed=1", "phone-runs-failed"}, {"/console/automations", "phone-automations"},
		{"/console/groups", "phone-groups"}, {"/console/reports", "phone-reports"}, {"/console/alerts", "phone-alerts"},
		{"/console/users", "phone-users"}, {"/console/audit", "phone-audit"},
		{cvePage, "phone-vulnerability"}, {titlePage, "phone-software-title"}} {
		tb.visit(e.URL, p.path, p.name)
		tb.fitsWidth(p.path)
	}
	// An update's page (one still missing: the one deployed above is not).
	tb.visit(e.URL, "/console/updates", "phone-updates-again")
	tb.do("open an update on a phone", chromedp.Click(chromedp.CSS(`table.list tbody td a[href^="/console/updates/"]`)),
		chromedp.WaitVisible(chromedp.CSS("#update-facts")))
	tb.accessible("an update's page on a phone")
	tb.screenshot("phone-update")
	tb.fitsWidth(tb.path())
	if tb.visible("nav.side") {
		t.Error("on a phone the menu is open before its button is pressed")
	}
	tb.do("open the phone menu", chromedp.Click(chromedp.CSS(".menu-toggle")), chromedp.WaitVisible(chromedp.CSS("nav.side")))
	if got := tb.attr(".menu-toggle", "aria-expanded"); got != "true" {
		t.Errorf("the open menu's button says aria-expanded=%q", got)
	}
	tb.screenshot("phone-menu")
	tb.do("follow the menu", chromedp.Click(chromedp.CSS(`nav.side a[href="/console/endpoints"]`)), chromedp.WaitVisible(chromedp.CSS("#main h1")))
	if got := tb.text("nav.crumbs"); !strings.Contains(got, "Fleet") || !strings.Contains(got, "Endpoints") {
		t.Errorf("the endpoints page's breadcrumbs say %q", got)
	}
}

// visible tells whether an element is laid out on the page.
func (tb *tab) visible(sel string) bool {
	tb.t.Helper()
	var shown bool
	tb.do("is "+sel+" visible", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[bool](`(function () { var el = document.querySelector("`+sel+`"); return !!el && el.getClientRects().length > 0; })()`)(ctx, t)
		shown = v
		return chromedp.Void{}, err
	})
	return shown
}

// attr is an attribute of the first element sel finds.
func (tb *tab) attr(sel, name string) string {
	tb.t.Helper()
	var val string
	tb.do("attribute "+name+" of "+sel, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[string](`(document.querySelector("`+sel+`") || {getAttribute: function () { return ""; }}).getAttribute("`+name+`") || ""`)(ctx, t)
		val = v
		return chromedp.Void{}, err
	})
	return val
}

// download clicks a download link, waits for the browser to finish the
// download and answers the file read as CSV.
func (tb *tab) download(sel string) [][]string {
	tb.t.Helper()
	dir := tb.t.TempDir()
	dctx, cancel := context.WithTimeout(tb.ctx, 90*time.Second)
	defer cancel()
	progress := chromedp.Events(dctx, cdpbrowser.DownloadProgress)
	tb.do("download "+sel,
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			yes := true
			_, err := chromedp.Call(ctx, cdpbrowser.SetDownloadBehavior, cdpbrowser.SetDownloadBehaviorParams{
				Behavior: cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: dir, EventsEnabled: &yes})
			return err
		}),
		chromedp.Click(chromedp.CSS(sel)))
	for ev, err := range progress {
		if err != nil {
			tb.t.Fatalf("download %s: %v", sel, err)
		}
		switch ev.State {
		case cdpbrowser.DownloadProgressStateCanceled:
			tb.t.Fatalf("download %s was cancelled", sel)
		case cdpbrowser.DownloadProgressStateCompleted:
			f, err := os.Open(filepath.Join(dir, ev.GUID))
			if err != nil {
				tb.t.Fatal(err)
			}
			defer f.Close()
			rows, err := csv.NewReader(f).ReadAll()
			if err != nil {
				tb.t.Fatalf("download %s: %v", sel, err)
			}
			tb.check("download " + sel)
			return rows
		}
	}
	tb.t.Fatalf("download %s did not complete", sel)
	return nil
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
