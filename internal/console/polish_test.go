package console_test

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// rowOf is the table row of body holding want.
func rowOf(t *testing.T, body, want string) string {
	t.Helper()
	for _, row := range regexp.MustCompile(`(?s)<tr[ >].*?</tr>`).FindAllString(body, -1) {
		if strings.Contains(row, want) {
			return row
		}
	}
	t.Fatalf("no row holds %q", want)
	return ""
}

// TestKBOncePerRow: a Windows update's KB number shows once in its row of
// the updates list and of the endpoint page, even when its title and its
// key carry it too.
func TestKBOncePerRow(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("m1", "win-a", "windows")
	ag.MustInventory(apitest.Sample("win-a", "windows"))
	b := adminBrowser(t, e)
	for _, path := range []string{"/console/updates", "/console/endpoints/" + ag.ID} {
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		row := rowOf(t, body, "Cumulative Update")
		text := regexp.MustCompile(`<[^>]*>`).ReplaceAllString(row, " ")
		if n := strings.Count(text, "KB5048685"); n != 1 {
			t.Errorf("%s: the KB shows %d times in its row: %s", path, n, strings.Join(strings.Fields(text), " "))
		}
	}
}

// TestRunsListShowsFailureReasons: a run's row in the runs list says why
// it failed, on which endpoint, without opening the run.
func TestRunsListShowsFailureReasons(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a1, a2 := e.Enroll("m1", "host-1", "linux"), e.Enroll("m2", "host-2", "linux")
	if _, err := e.Admin.RunAction(context.Background(), apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{a1.ID, a2.ID}, Label: "Weekly reboot"}); err != nil {
		t.Fatal(err)
	}
	for _, ag := range []*apitest.Agent{a1, a2} {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
		for _, c := range resp.Commands {
			if ag == a2 {
				ag.Status(c.ID, "FAILED", "shutdown refused: a maintenance inhibitor holds the system\nsecond line of the log", nil)
			} else {
				ag.Status(c.ID, "SUCCESS", "", nil)
			}
		}
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	code, body := b.get("/console/runs")
	if code != http.StatusOK {
		t.Fatalf("runs: %d", code)
	}
	row := rowOf(t, body, "Weekly reboot")
	if !strings.Contains(row, "<strong>host-2</strong>: shutdown refused: a maintenance inhibitor holds the system</li>") {
		t.Errorf("the run's row does not say why it failed on host-2: %s", row)
	}
	if strings.Contains(row, "host-1") {
		t.Errorf("the row names the endpoint where the run succeeded: %s", row)
	}
}

// TestDurationsInWords: the alert rule's webhook retries, an update
// approval rule's delay and the session lifetimes read as words ("2
// hours"), not as a count of minutes or a Go duration.
func TestDurationsInWords(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	retry, hook := 120, "https://hooks.example.com/patchd"
	rule, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "Critical", Trigger: "CRITICAL_VULN", WebhookURL: &hook, WebhookRetryMinutes: &retry})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	if code, _, _ := b.post("/console/updates/policy", url.Values{"op": {"set"}, "severity": {"Critical"}, "source": {"ANY"}, "delayDays": {"3"}}); code != http.StatusSeeOther {
		t.Fatalf("approval rule: %d", code)
	}
	for path, want := range map[string][]string{
		"/console/alerts/" + rule.Rule.ID: {`<dd id="rule-retry">for 2 hours, with back-off</dd>`, "tried again for 2 hours;"},
		"/console/updates":                {"<td>3 days</td>"},
		"/console/account":                {"A session ends after 2 hours unused, and 12 hours after its sign-in."},
	} {
		code, body := b.get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d", path, code)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
	}
}

// TestTrendSaysItFills: a compliance trend of a few recorded days says it
// fills as days pass; one of a week's days and more does not.
func TestTrendSaysItFills(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	e.Enroll("m1", "win-a", "windows").MustInventory(apitest.Sample("win-a", "windows"))
	b := adminBrowser(t, e)
	for back := 0; back < 8; back++ {
		if _, err := e.Store.RecordCompliance(ctx, time.Now().AddDate(0, 0, -back)); err != nil {
			t.Fatal(err)
		}
		_, page := b.get("/console/")
		note := strings.Contains(page, `id="trend-note"`)
		if want := back+1 < 7; note != want {
			t.Errorf("with %d recorded days the trend note shows: %v", back+1, note)
		}
		if back == 2 && !strings.Contains(page, "3 of the 30 days recorded so far: the trend fills as days pass") {
			t.Errorf("with 3 recorded days the note does not say so: %s", between(page, `id="h-trend"`, "</section>"))
		}
	}
}

// TestSoftwareTitleOffersTheUpdate: a software title's page shows its
// newest version and, when endpoints miss its update, offers it (the
// update's page, where it is deployed) beside Uninstall; a title without
// an update shows its newest installed version.
func TestSoftwareTitleOffersTheUpdate(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.Enroll("m1", "win-a", "windows").MustInventory(apitest.Sample("win-a", "windows"))
	b := adminBrowser(t, e)
	code, body := b.get("/console/updates?source=THIRD_PARTY")
	if code != http.StatusOK || !strings.Contains(body, "Mozilla.Firefox@133.0.3") {
		t.Fatalf("updates: %d, no Firefox update", code)
	}
	code, body = b.get("/console/software/title?name=" + url.QueryEscape("Mozilla Firefox"))
	if code != http.StatusOK {
		t.Fatalf("title: %d", code)
	}
	for _, want := range []string{"Newest version: <strong>133.0.3</strong>", `href="/console/updates/Mozilla.Firefox@133.0.3" id="title-update">Update 1 endpoint(s) to 133.0.3</a>`, `id="uninstall-title"`} {
		if !strings.Contains(body, want) {
			t.Errorf("Firefox's page lacks %q: %s", want, between(body, "<h1>", `id="h-teps"`))
		}
	}
	_, body = b.get("/console/software")
	m := regexp.MustCompile(`title\?name=([^"&]+)"`).FindAllStringSubmatch(body, -1)
	other := ""
	for _, x := range m {
		if n, _ := url.QueryUnescape(x[1]); n != "Mozilla Firefox" {
			other = x[1]
			break
		}
	}
	if other == "" {
		t.Fatalf("no other title on the software page")
	}
	_, body = b.get("/console/software/title?name=" + other)
	if !strings.Contains(body, "Newest version on your endpoints: <strong>") || strings.Contains(body, `id="title-update"`) {
		t.Errorf("%s's page: %s", other, between(body, "<h1>", `id="h-teps"`))
	}
}

// TestBulkBarWorksOnAFreshInstall: with no update approved yet, the
// endpoints list's action menu starts on deploying the missing updates
// unless declined and says why; that action installs them (the approved
// one would install nothing). Once an update is approved, it starts on
// the approved ones again.
func TestBulkBarWorksOnAFreshInstall(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("m1", "win-a", "windows")
	ag.MustInventory(apitest.Sample("win-a", "windows"))
	b := adminBrowser(t, e)
	_, body := b.get("/console/endpoints")
	if !strings.Contains(body, `<option value="DEPLOY_UPDATES/notDeclined" selected>`) || !strings.Contains(body, `id="none-approved"`) {
		t.Fatalf("a fresh install's bulk bar: %s", between(body, `id="bulk"`, "</select>"))
	}
	code, loc, _ := b.post("/console/actions", url.Values{"type": {"DEPLOY_UPDATES/notDeclined"}, "endpointIds": {ag.ID}, "approvalMode": {"approved"},
		"back": {"/console/endpoints"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("the default action: %d %s", code, loc)
	}
	_, page := b.get(loc)
	if flash := between(page, `class="flash`, "</div>"); !strings.Contains(flash, "Action queued on 1 endpoint.") {
		t.Errorf("the default action on a fresh install: %s", flash)
	}
	// The approved updates only: nothing to install, refused.
	_, loc, _ = b.post("/console/actions", url.Values{"type": {"DEPLOY_UPDATES"}, "endpointIds": {ag.ID}, "approvalMode": {"approved"}, "back": {"/console/endpoints"}})
	_, page = b.get(loc)
	if flash := between(page, `class="flash`, "</div>"); !strings.Contains(flash, "no endpoint has an update to install") {
		t.Errorf("deploying the approved updates of a fresh install: %s", flash)
	}
	if code, _, _ := b.post("/console/updates/approvals", url.Values{"key": {"KB5048685"}, "status": {"APPROVED"}, "back": {"?"}}); code != http.StatusSeeOther {
		t.Fatalf("approve: %d", code)
	}
	_, body = b.get("/console/endpoints")
	if strings.Contains(body, `<option value="DEPLOY_UPDATES/notDeclined" selected>`) || strings.Contains(body, `id="none-approved"`) {
		t.Errorf("with an approved update the bulk bar still starts on all updates: %s", between(body, `id="bulk"`, "</select>"))
	}
}
