package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// TestEmptySerialSignedIn404AndNoFeed: no "· serial" without a serial number,
// a signed-in 404 keeps the navigation and does not offer to sign in, and the
// dashboard gives no green "0 overdue" before any vulnerability feed was
// loaded.
func TestEmptySerialSignedIn404AndNoFeed(t *testing.T) {
	e := apitest.New(t)
	ag := e.Enroll("m-1", "one", "linux")
	b := adminBrowser(t, e)

	code, body := b.get("/console/endpoints/" + ag.ID)
	if code != http.StatusOK || strings.Contains(body, "serial") {
		t.Errorf("endpoint without a serial number: %d, the page says %q", code, between(body, "<dt>Hardware</dt>", "</dd>"))
	}
	code, body = b.get("/console/no-such-page")
	if code != http.StatusNotFound || !strings.Contains(body, `aria-label="Main"`) || strings.Contains(body, `href="/console/login"`) {
		t.Errorf("a signed-in 404 (%d) has navigation %v and offers to sign in %v", code, strings.Contains(body, `aria-label="Main"`), strings.Contains(body, `href="/console/login"`))
	}
	code, body = b.get("/console/")
	if code != http.StatusOK || strings.Contains(body, `id="overdue"`) || !strings.Contains(body, `id="no-feed"`) {
		t.Errorf("the dashboard before any feed (%d): %q", code, between(body, `id="h-vulns"`, "</section>"))
	}
	// Signed out, the 404 page still offers to sign in.
	code, body = newBrowser(t, e.URL).get("/console/no-such-page")
	if code != http.StatusNotFound || !strings.Contains(body, `href="/console/login"`) {
		t.Errorf("a signed-out 404 (%d) does not offer to sign in", code)
	}
}

// between is the text of s from after start to end (for messages).
func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j]
	}
	return s
}

// TestSchedulePreviewRefusesPastDates: the schedule preview never lists a
// past date as a next run; it says the date is past, as the server will.
func TestSchedulePreviewRefusesPastDates(t *testing.T) {
	e := apitest.New(t)
	b := adminBrowser(t, e)
	code, body := b.get("/console/automations/preview?kind=SCHEDULED&scheduleKind=ONCE&runAt=2020-01-01T10:00&atTime=22:00")
	if code != http.StatusOK || strings.Contains(body, "<li>") || !strings.Contains(body, "in the past") {
		t.Errorf("preview of a past date: %d %s", code, body)
	}
	next := time.Now().AddDate(0, 0, 3).UTC().Format("2006-01-02T15:04")
	code, body = b.get("/console/automations/preview?kind=SCHEDULED&scheduleKind=ONCE&runAt=" + next + "&atTime=22:00")
	if code != http.StatusOK || strings.Count(body, "<li>") != 1 {
		t.Errorf("preview of a future date: %d %s", code, body)
	}
}

// inventoryWithout is an agent's inventory with no missing update.
func inventoryWithout(host string) agentproto.Inventory {
	doc := apitest.Sample(host, "windows")
	doc.Updates = nil
	return doc
}

// commandsOf maps a run's commands by endpoint id.
func commandsOf(t *testing.T, e *apitest.Env, runID string) map[string]string {
	t.Helper()
	cmds, _, err := e.Store.ListRunCommands(context.Background(), store.RunQuery{OrgID: e.Org.ID, Limit: 100}, runID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, c := range cmds {
		out[c.MachineID] = c.ID
	}
	return out
}

// TestRunOutcomeNothingToInstallAndPartialFailure: nothing to install is its
// own outcome (not CANCELLED, not "unfinished" grey), a run with some
// failures says "completed with failures", and the message counts what really
// started.
func TestRunOutcomeNothingToInstallAndPartialFailure(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	var ags []*apitest.Agent
	for i := range 4 {
		ag := e.Enroll(fmt.Sprintf("m-%d", i), fmt.Sprintf("win-%d", i), "windows")
		if i < 3 {
			ag.MustInventory(apitest.Sample(fmt.Sprintf("win-%d", i), "windows"))
		} else {
			ag.MustInventory(inventoryWithout("win-3"))
		}
		ags = append(ags, ag)
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	b.get("/console/endpoints")
	form := url.Values{"type": {"DEPLOY_UPDATES"}, "approvalMode": {"notDeclined"}, "back": {"/console/endpoints"}}
	for _, ag := range ags {
		form.Add("endpointIds", ag.ID)
	}
	code, loc, body := b.post("/console/actions", form)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("deploy: %d %s %s", code, loc, body)
	}
	_, page := b.get(loc)
	if flash := between(page, `class="flash ok"`, "</div></div>"); !strings.Contains(flash, "queued on 3 endpoints; 1 endpoint has nothing to install") {
		t.Errorf("the message after starting: %q", flash)
	}
	runID := strings.TrimPrefix(loc, "/console/runs/")
	cmds := commandsOf(t, e, runID)
	for i, st := range []string{"SUCCESS", "SUCCESS", "FAILED"} {
		if ans := ags[i].Status(cmds[ags[i].ID], st, "done", nil); ans.Status != http.StatusOK && ans.Status != http.StatusNoContent {
			t.Fatalf("status %s: %d %s", st, ans.Status, ans.Body)
		}
	}
	_, page = b.get(loc)
	if got := between(page, `id="run-outcome">`, "</span></span>"); !strings.Contains(got, "Completed with failures") {
		t.Errorf("the run's outcome reads %q", got)
	}
	if got := between(page, `id="run-counts">`, "</span>"); !strings.Contains(got, "<strong>1</strong> had nothing to install") || strings.Contains(got, "still to finish") {
		t.Errorf("the run's counts read %q", got)
	}
	if !strings.Contains(page, `width="25" height="6" class="p-none"`) || !strings.Contains(page, `badge st-nothing">Nothing to install`) || strings.Contains(page, ">CANCELLED<") {
		t.Errorf("the run page does not show nothing-to-install as its own outcome:\n%s", between(page, `<svg class="progress"`, "</table>"))
	}
	_, list := b.get("/console/runs")
	if !strings.Contains(list, "Completed with failures") || !strings.Contains(list, "1 nothing to install") {
		t.Errorf("the runs list: %s", between(list, "<tbody>", "</tbody>"))
	}
}

// TestStoppedRunRefreshesUntilCommandsFinish: after "Stop run" the page keeps
// refreshing while commands already started still run, and stops when they
// finished.
func TestStoppedRunRefreshesUntilCommandsFinish(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a1, a2 := e.Enroll("m-1", "one", "linux"), e.Enroll("m-2", "two", "linux")
	run := e.Queue(e.Org, "REBOOT", map[string]any{}, a1, a2)
	cmds := commandsOf(t, e, run.RunID)
	if ans := a1.Status(cmds[a1.ID], "RUNNING", "", nil); ans.Status >= 300 {
		t.Fatalf("running: %d %s", ans.Status, ans.Body)
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	b.get("/console/runs/" + run.RunID)
	if code, _, body := b.post("/console/runs/"+run.RunID+"/stop", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("stop: %d %s", code, body)
	}
	_, page := b.get("/console/runs/" + run.RunID)
	if !strings.Contains(page, `hx-trigger="every 2s"`) || !strings.Contains(between(page, `id="run-outcome">`, "</span></span>"), "Stopping") {
		t.Errorf("a stopped run with a command still running does not refresh: %s", between(page, `<div id="run-progress"`, "</p>"))
	}
	if ans := a1.Status(cmds[a1.ID], "SUCCESS", "rebooted", nil); ans.Status >= 300 {
		t.Fatalf("success: %d %s", ans.Status, ans.Body)
	}
	_, page = b.get("/console/runs/" + run.RunID + "/progress")
	if strings.Contains(page, `hx-trigger`) || !strings.Contains(page, "Stopped") {
		t.Errorf("a stopped run whose commands finished still refreshes: %s", between(page, `<div id="run-progress"`, "</p>"))
	}
}

// TestRefusedAutomationFormKeepsInput: a refused automation form comes back
// with what was typed, and the problems in the form's labels, not the API's
// field names.
func TestRefusedAutomationFormKeepsInput(t *testing.T) {
	e := apitest.New(t)
	b := adminBrowser(t, e)
	b.get("/console/automations/new")
	form := url.Values{"name": {"Nightly reboot of the lab"}, "description": {"typed with care"}, "actionType": {"REBOOT"},
		"message": {"Going down for patches"}, "timeoutSeconds": {"120"}, "kind": {"SCHEDULED"}, "targetMode": {"endpoints"},
		"endpointIds": {"no-such-endpoint"}, "scheduleKind": {"RECURRING"}, "freq": {"WEEKLY"}, "weekday": {"3"}, "atTime": {"25:99"}}
	code, loc, body := b.post("/console/automations", form)
	if code != http.StatusUnprocessableEntity || loc != "" {
		t.Fatalf("a refused automation: %d %s, want the form again with 422", code, loc)
	}
	for _, want := range []string{`value="Nightly reboot of the lab"`, `value="typed with care"`, `value="Going down for patches"`, `value="120"`,
		`>no-such-endpoint</textarea>`, `value="3" selected`, `value="25:99"`, `value="REBOOT" selected`, `value="endpoints" selected`, `value="WEEKLY" selected`} {
		if !strings.Contains(body, want) {
			t.Errorf("the form shown again lost %s", want)
		}
	}
	problems := between(body, `id="form-problems">`, "</div>")
	if !strings.Contains(problems, "Time of day") || strings.Contains(problems, "atTime") {
		t.Errorf("the problems are not in the form's words: %q", problems)
	}
	if list, _ := e.Store.ListAutomations(context.Background(), e.Org.ID); len(list) != 0 {
		t.Errorf("a refused form created %d automation(s)", len(list))
	}
}

// TestEditAutomation: an automation is edited in the console, through the
// API's own replace (validated and audited alike).
func TestEditAutomation(t *testing.T) {
	e := apitest.New(t)
	b := adminBrowser(t, e)
	b.get("/console/automations/new")
	form := newAutomationForm("Patch Tuesday deploy")
	code, loc, body := b.post("/console/automations", form)
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/automations/") {
		t.Fatalf("create: %d %s %.2000s", code, loc, body)
	}
	id := strings.TrimPrefix(loc, "/console/automations/")
	before, err := e.Store.GetAutomation(context.Background(), e.Org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	_, page := b.get(loc)
	if !strings.Contains(page, `href="/console/automations/`+id+`/edit"`) {
		t.Errorf("the automation page offers no edit")
	}
	// The list says the schedule as people say it, in the organization's zone.
	if _, list := b.get("/console/automations"); !strings.Contains(html.UnescapeString(list), "Patch Tuesday + 1 day, 22:00 <small>UTC</small>") {
		t.Errorf("the automations list does not say the schedule: %s", between(list, "<tbody>", "</tbody>"))
	}
	code, page = b.get(loc + "/edit")
	if code != http.StatusOK || !strings.Contains(page, `value="Patch Tuesday deploy"`) || !strings.Contains(page, `id="aoff" name="offsetDays" type="number" min="0" value="1"`) ||
		!strings.Contains(page, `value="Critical" checked`) {
		t.Fatalf("the edit form (%d) does not show the automation", code)
	}
	// Save it as the page would post it, with two changes.
	edit := newAutomationForm("Patch Tuesday + 2 deploy")
	edit.Set("offsetDays", "2")
	edit.Set("atTime", "23:00")
	edit.Set("enabledShown", "1")
	edit.Set("enabled", "true")
	code, loc2, body := b.post(loc, edit)
	if code != http.StatusSeeOther || loc2 != loc {
		t.Fatalf("save: %d %s %.2000s", code, loc2, body)
	}
	after, err := e.Store.GetAutomation(context.Background(), e.Org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Name != "Patch Tuesday + 2 deploy" || after.OffsetDays != 2 || after.AtTime != "23:00" || !after.Enabled || string(after.Payload) != string(before.Payload) {
		t.Errorf("after the edit: %+v (payload %s, was %s)", after, after.Payload, before.Payload)
	}
	entries, _ := e.Store.ListAudit(context.Background(), e.Org.ID, store.AuditFilter{Actor: "user:alice@example.com", Action: "automation.replace"})
	if len(entries) != 1 {
		t.Errorf("the edit is not in the Audit Trail as user:alice@example.com: %+v", entries)
	}
	// Unticking Enabled disables it; a refused edit keeps what was typed.
	edit.Del("enabled")
	if code, _, _ := b.post(loc, edit); code != http.StatusSeeOther {
		t.Fatalf("disable by edit: %d", code)
	}
	if a, _ := e.Store.GetAutomation(context.Background(), e.Org.ID, id); a.Enabled {
		t.Errorf("unticking Enabled left the automation enabled")
	}
	edit.Set("atTime", "7 pm")
	code, _, body = b.post(loc, edit)
	if body = html.UnescapeString(body); code != http.StatusUnprocessableEntity || !strings.Contains(body, `value="7 pm"`) ||
		!strings.Contains(body, `value="Patch Tuesday + 2 deploy"`) {
		t.Errorf("a refused edit: %d", code)
	}
}

// TestAutomationPageInPlainWords: an automation's page says its action,
// kind, what it does and its window in words, not DEPLOY_UPDATES, SIMPLE,
// a payload or a number of minutes.
func TestAutomationPageInPlainWords(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	b := adminBrowser(t, e)
	b.get("/console/automations/new")
	form := newAutomationForm("KEV within a day")
	form.Set("kev", "true")
	form.Set("windowMinutes", "150")
	code, loc, body := b.post("/console/automations", form)
	if code != http.StatusSeeOther {
		t.Fatalf("create: %d %.2000s", code, body)
	}
	_, page := b.get(loc)
	plainPage := html.UnescapeString(page)
	for _, want := range []string{`<dd id="automation-action">Deploy updates</dd>`, `<dd id="automation-kind">Scheduled</dd>`,
		`<dd id="automation-does">Deploys the missing updates that are approved of severity Critical, that fix a CVE in CISA's KEV catalog.</dd>`,
		`<dd id="automation-window">2 hours 30 minutes</dd>`} {
		if !strings.Contains(plainPage, want) {
			t.Errorf("the automation page lacks %s:\n%s", want, between(plainPage, `<dl class="kv">`, "</dl>"))
		}
	}
}

func newAutomationForm(name string) url.Values {
	return url.Values{"name": {name}, "actionType": {"DEPLOY_UPDATES"}, "approvalMode": {"approved"}, "severities": {"Critical"},
		"kind": {"SCHEDULED"}, "targetMode": {"all"}, "scheduleKind": {"RECURRING"}, "freq": {"PATCH_TUESDAY"}, "offsetDays": {"1"}, "atTime": {"22:00"}}
}

// TestRefusedAlertAndScriptFormsKeepInput: refused alert rule and script
// forms come back as typed, the problems in the forms' labels.
func TestRefusedAlertAndScriptFormsKeepInput(t *testing.T) {
	e := apitest.New(t)
	b := adminBrowser(t, e)
	b.get("/console/alerts")
	code, loc, body := b.post("/console/alerts", url.Values{"name": {"Critical CVEs to the SOC"}, "trigger": {"CRITICAL_VULN"}, "threshold": {"9"},
		"emailTo": {"soc@example.com"}, "webhookUrl": {"http://hooks.example.com/x"}, "webhookSecret": {"s3cret-value"}})
	if code < 400 || code >= 500 || loc != "" {
		t.Fatalf("a refused alert rule: %d %s", code, loc)
	}
	for _, want := range []string{`value="Critical CVEs to the SOC"`, `value="CRITICAL_VULN" selected`, `value="9"`, `value="soc@example.com"`, `value="http://hooks.example.com/x"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the alert form shown again lost %s", want)
		}
	}
	if strings.Contains(body, "s3cret-value") {
		t.Errorf("the webhook secret was written back into the page")
	}
	if p := between(body, `id="form-problems">`, "</div>"); !strings.Contains(p, "Webhook URL") || strings.Contains(p, "webhookUrl") {
		t.Errorf("the alert form's problems: %q", p)
	}

	// The edit form of a rule, refused, keeps what was typed too.
	b.get("/console/alerts")
	code, loc, body = b.post("/console/alerts", url.Values{"name": {"Offline"}, "trigger": {"ENDPOINT_OFFLINE"}, "threshold": {"3"}, "emailTo": {"ops@example.com"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create a rule: %d %s", code, between(body, `id="form-problems">`, "</div>"))
	}
	b.get(loc)
	code, _, body = b.post(loc, url.Values{"name": {"Offline for long"}, "trigger": {"ENDPOINT_OFFLINE"}, "threshold": {"3"}, "webhookUrl": {"ftp://nope"}})
	if code < 400 || code >= 500 || !strings.Contains(body, `value="Offline for long"`) || !strings.Contains(body, `value="ftp://nope"`) ||
		!strings.Contains(between(body, `id="form-problems">`, "</div>"), "Webhook URL") {
		t.Errorf("a refused rule edit (%d): %s", code, between(body, `id="edit-alert"`, "</form>"))
	}

	// Scripts: a refused script keeps its name and code.
	b.get("/console/scripts")
	code, _, body = b.post("/console/scripts", url.Values{"name": {"Clear temp"}, "language": {"bash"}, "code": {"   "}, "rebootExitCodes": {"3010"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `value="Clear temp"`) || !strings.Contains(body, `<option selected>bash</option>`) ||
		!strings.Contains(body, `value="3010"`) || !strings.Contains(body, "Code: is required") {
		t.Errorf("a refused script (%d): %s", code, between(body, `<h2>Add a script</h2>`, "</form>"))
	}
	b.post("/console/scripts", url.Values{"name": {"Clear temp"}, "language": {"bash"}, "code": {"rm -rf /tmp/x"}})
	b.get("/console/scripts")
	code, _, body = b.post("/console/scripts", url.Values{"name": {"Clear temp"}, "language": {"sh"}, "code": {"echo second"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `>echo second</textarea>`) || !strings.Contains(body, "Name: is taken") {
		t.Errorf("a script with a taken name (%d): %s", code, between(body, `<h2>Add a script</h2>`, "</form>"))
	}
}

// TestEnrollmentWarnsOfLoopbackAddress: the Enrollment page warns when the
// address it gives agents is this computer's loopback address.
func TestEnrollmentWarnsOfLoopbackAddress(t *testing.T) {
	for _, tc := range []struct {
		base string
		warn bool
	}{{"", true}, {"http://localhost:8080", true}, {"https://patch.example.com", false}, {"http://10.0.0.5:8080", false}} {
		e := apitest.New(t, func(c *config.Config) { c.BaseURL = tc.base })
		b := adminBrowser(t, e)
		code, body := b.get("/console/enrollment")
		if code != http.StatusOK || strings.Contains(body, `id="loopback-warning"`) != tc.warn {
			t.Errorf("base URL %q (the test server is on 127.0.0.1): %d, warning shown %v, want %v", tc.base, code, !tc.warn, tc.warn)
		}
	}
}
