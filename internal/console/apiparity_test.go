package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestScriptFormsCallTheAPI: the Scripts page writes through the REST API's
// operations in the process, so it has their validation (every field
// problem), their fields (parameters, time limit) and their Audit Trail.
func TestScriptFormsCallTheAPI(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	b := adminBrowser(t, e)
	b.get("/console/scripts")

	code, loc, _ := b.post("/console/scripts", url.Values{"name": {"cleanup"}, "language": {"bash"}, "code": {"rm -rf \"$DIR\""},
		"parameters": {"DIR=/tmp/x\nKEY!="}, "rebootExitCodes": {"3010, 1641"}, "timeoutSeconds": {"120"}})
	if code != http.StatusSeeOther || loc != "/console/scripts" {
		t.Fatalf("create: %d %s", code, loc)
	}
	list, err := e.Admin.ListScripts(ctx)
	if err != nil || list.Total != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	sc := list.Items[0]
	if sc.Name != "cleanup" || len(sc.Parameters) != 2 || sc.Parameters[0].Default != "/tmp/x" || !sc.Parameters[1].Required ||
		len(sc.RebootExitCodes) != 2 || sc.TimeoutSeconds != 120 {
		t.Fatalf("stored script: %+v", sc)
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "script.create"})
	if err != nil || len(entries) != 1 || entries[0].TargetID != sc.ID || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	_, page := b.get("/console/scripts")
	if !strings.Contains(page, "cleanup") || !strings.Contains(page, "DIR=/tmp/x") {
		t.Fatalf("the page does not list the script:\n%.2000s", page)
	}

	// The API's refusal is shown, field by field, and nothing is stored.
	// The form comes back as typed, its problems in the form's labels.
	code, _, page = b.post("/console/scripts", url.Values{"name": {"cleanup"}, "language": {"cobol"}, "code": {"x"}, "timeoutSeconds": {"-5"}})
	for _, want := range []string{"Language: must be", "Time limit in seconds: must be", `name="timeoutSeconds" inputmode="numeric" value="-5"`} {
		if code != http.StatusUnprocessableEntity || !strings.Contains(page, want) {
			t.Errorf("refused form: %d, the page does not say %q", code, want)
		}
	}
	if _, _, page = b.post("/console/scripts", url.Values{"name": {"cleanup"}, "language": {"sh"}, "code": {"true"}}); !strings.Contains(page, "Name: is taken") {
		t.Error("the page does not say the name is taken")
	}
	if l, _ := e.Admin.ListScripts(ctx); l.Total != 1 {
		t.Fatalf("a refused form stored a script: %+v", l)
	}

	code, _, _ = b.post("/console/scripts/"+sc.ID+"/delete", url.Values{})
	if l, _ := e.Admin.ListScripts(ctx); code != http.StatusSeeOther || l.Total != 0 {
		t.Fatalf("delete: %d %+v", code, l)
	}
}

// TestEnrollmentPageCallsTheAPI: the Enrollment page creates, lists and
// revokes tokens through the REST API's operations.
func TestEnrollmentPageCallsTheAPI(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	b := adminBrowser(t, e)
	b.get("/console/enrollment")
	code, _, page := b.post("/console/enrollment", url.Values{"expires": {"1d"}})
	if code != http.StatusOK || !strings.Contains(page, `id="enroll-token">pde_`) {
		t.Fatalf("create: %d\n%.2000s", code, page)
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "enroll_token.create", Limit: 1})
	if err != nil || len(entries) != 1 || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	id := entries[0].TargetID
	list, err := e.Admin.ListEnrollTokens(ctx)
	if err != nil || list.Total != 2 {
		t.Fatalf("list: %+v %v", list, err)
	}
	if code, _, _ := b.post("/console/enrollment/"+id+"/revoke", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", code)
	}
	list, _ = e.Admin.ListEnrollTokens(ctx)
	for _, tok := range list.Items {
		if tok.ID == id && !tok.Revoked {
			t.Fatalf("not revoked: %+v", tok)
		}
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "enroll_token.revoke"}); len(entries) != 1 || entries[0].TargetID != id {
		t.Fatalf("revoke audit: %+v", entries)
	}
	if _, page := b.get("/console/enrollment"); !strings.Contains(page, "revoked") {
		t.Fatal("the page does not show the revoked token")
	}
}

// TestAuditPageCallsTheAPI: the Audit Trail page reads GET /api/v1/audit,
// with its filters and its pages.
func TestAuditPageCallsTheAPI(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	for i := range 205 {
		en := &store.AuditEntry{OrgID: e.Org.ID, Actor: "api:bot", Action: "group.create", TargetType: "group", TargetID: fmt.Sprintf("g%03d", i)}
		if err := e.Store.Audited(ctx, en, func(*store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	code, page := b.get("/console/audit?actor=api:bot")
	if code != http.StatusOK || !strings.Contains(page, "205 matching entries") || !strings.Contains(page, `rel="next"`) || !strings.Contains(page, `href="/console/audit?actor=api%3Abot&amp;offset=200"`) {
		t.Fatalf("first page: %d\n%s", code, page[strings.Index(page, "class=\"hint\""):])
	}
	_, page = b.get("/console/audit?actor=api%3Abot&offset=200")
	if strings.Count(page, "<code>group.create</code>") != 5 || strings.Contains(page, `rel="next"`) {
		t.Fatalf("second page:\n%.3000s", page)
	}
	if code, _ := b.get("/console/audit?since=someday"); code != http.StatusBadRequest {
		t.Fatalf("bad since: %d", code)
	}
}

// TestRunPageCallsTheAPI: the run page reads the run through the API and
// stops it and retries its failed endpoints through the API's operations.
func TestRunPageCallsTheAPI(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a1, a2 := e.Enroll("m1", "host-1", "linux"), e.Enroll("m2", "host-2", "linux")
	started, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{a1.ID, a2.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, ag := range []*apitest.Agent{a1, a2} {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
		if len(resp.Commands) != 1 {
			t.Fatalf("commands of %s: %+v", ag.ID, resp.Commands)
		}
		status := "FAILED"
		if ag == a1 {
			status = "SUCCESS"
		}
		ag.Status(resp.Commands[0].ID, status, "", nil)
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	code, page := b.get("/console/runs/" + started.RunID)
	if code != http.StatusOK || !strings.Contains(page, "Retry failed endpoints") || !strings.Contains(page, "host-2") {
		t.Fatalf("run page: %d\n%.3000s", code, page)
	}
	code, loc, _ := b.post("/console/runs/"+started.RunID+"/retry", url.Values{})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") || loc == "/console/runs/"+started.RunID {
		t.Fatalf("retry: %d %s", code, loc)
	}
	retryID := strings.TrimPrefix(loc, "/console/runs/")
	retry, err := e.Admin.GetRun(ctx, retryID)
	if err != nil || retry.Total != 1 || retry.Status != "RUNNING" {
		t.Fatalf("retry run: %+v %v", retry, err)
	}
	if code, _, _ := b.post("/console/runs/"+retryID+"/stop", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("stop: %d", code)
	}
	if r, _ := e.Admin.GetRun(ctx, retryID); r.Status != "STOPPED" {
		t.Fatalf("after stop: %+v", r)
	}
	entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "run.stop"})
	if len(entries) != 1 || entries[0].TargetID != retryID || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Fatalf("stop audit: %+v", entries)
	}
	// Stopping it again is refused with the API's words.
	b.post("/console/runs/"+retryID+"/stop", url.Values{})
	if _, page := b.get("/console/runs/" + retryID); !strings.Contains(page, "only a RUNNING run can be stopped") {
		t.Fatal("the refusal is not shown")
	}
	if code, _ := b.get("/console/runs/nope"); code != http.StatusNotFound {
		t.Fatalf("unknown run: %d", code)
	}
}

// TestRunListsFilter: the runs list keeps the runs with failures when asked
// and links to their failures; a run's page shows the results of one status
// or those whose endpoint or log contains a text, and the poll keeps them.
func TestRunListsFilter(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	a1, a2 := e.Enroll("m1", "web-1", "linux"), e.Enroll("m2", "db-1", "linux")
	mixed, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{a1.ID, a2.ID}, Label: "Mixed",
		Payload: json.RawMessage(`{"script":"x","language":"bash"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for ag, res := range map[*apitest.Agent]string{a1: "SUCCESS", a2: "FAILED"} {
		resp, _ := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
		ag.Status(resp.Commands[0].ID, res, "log of "+res+" here", nil)
	}
	if _, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{a1.ID}, Label: "Clean"}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	_, page := b.get("/console/runs")
	if !strings.Contains(page, ">Mixed<") || !strings.Contains(page, ">Clean<") || !strings.Contains(page, "2 run(s)") {
		t.Fatalf("runs:\n%.3000s", page)
	}
	_, page = b.get("/console/runs?failed=1")
	if !strings.Contains(page, ">Mixed<") || strings.Contains(page, ">Clean<") || !strings.Contains(page, "1 run(s) with failures") ||
		!strings.Contains(page, `href="/console/runs/`+mixed.RunID+`?status=FAILED"`) {
		t.Fatalf("failed runs:\n%.3000s", page)
	}
	_, page = b.get("/console/runs/" + mixed.RunID + "?status=FAILED")
	if !strings.Contains(page, ">db-1<") || strings.Contains(page, ">web-1<") || !strings.Contains(page, `<option value="FAILED" selected>`) {
		t.Fatalf("failed results:\n%.5000s", page)
	}
	_, page = b.get("/console/runs/" + mixed.RunID + "?search=SUCCESS+here")
	if strings.Contains(page, ">db-1<") || !strings.Contains(page, ">web-1<") || !strings.Contains(page, "<details open>") {
		t.Fatalf("searched results:\n%.5000s", page)
	}
	_, page = b.get("/console/runs/" + mixed.RunID + "?status=CANCELLED")
	if !strings.Contains(page, "No result matches the filter.") {
		t.Fatalf("no result:\n%.5000s", page)
	}
	if code, _ := b.get("/console/runs/" + mixed.RunID + "?status=DONE"); code != http.StatusBadRequest {
		t.Fatalf("unknown status: %d", code)
	}
}

// TestPolicyFormsCallTheAPI: the remediation periods, the approval policy
// and the decisions on CVEs are set from the console through the API's
// operations (their validation, their Audit Trail); a Read-only user sees
// the periods but cannot set them.
func TestPolicyFormsCallTheAPI(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	b.get("/console/vulnerabilities")
	code, loc, _ := b.post("/console/vulnerabilities/policy", url.Values{"criticalDays": {"3"}, "highDays": {"20"}, "mediumDays": {"60"}, "lowDays": {"120"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/vulnerabilities") {
		t.Fatalf("set the periods: %d %s", code, loc)
	}
	var p apiv1.RemediationPolicy
	if err := e.Admin.Do(ctx, http.MethodGet, "/api/v1/remediation-policy", nil, nil, &p); err != nil || p != (apiv1.RemediationPolicy{CriticalDays: 3, HighDays: 20, MediumDays: 60, LowDays: 120}) {
		t.Fatalf("periods: %+v %v", p, err)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "vulnerability.policy"}); len(entries) != 1 || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Errorf("periods audit: %+v", entries)
	}
	// The API's refusal is shown and nothing changes.
	b.post("/console/vulnerabilities/policy", url.Values{"criticalDays": {"0"}, "highDays": {"20"}, "mediumDays": {"60"}, "lowDays": {"120"}})
	if _, page := b.get("/console/vulnerabilities"); !strings.Contains(page, "criticalDays: ") || !strings.Contains(page, `name="criticalDays" type="number" min="1" max="3650" value="3"`) {
		t.Errorf("refused periods:\n%s", between(page, `id="h-policy"`, "</section>"))
	}
	// The approval policy: add a rule, turn declineOlder on, remove the rule.
	for _, f := range []url.Values{{"op": {"set"}, "severity": {"Critical"}, "source": {"OS"}, "delayDays": {"2"}}, {"op": {"decline-older"}, "on": {"true"}}} {
		if code, _, _ := b.post("/console/updates/policy", f); code != http.StatusSeeOther {
			t.Fatalf("policy %v: %d", f, code)
		}
	}
	var ap apiv1.ApprovalPolicy
	if err := e.Admin.Do(ctx, http.MethodGet, "/api/v1/approval-policy", nil, nil, &ap); err != nil || !ap.DeclineOlder || len(ap.Rules) != 1 || ap.Rules[0].DelayDays != 2 {
		t.Fatalf("approval policy: %+v %v", ap, err)
	}
	b.post("/console/updates/policy", url.Values{"op": {"delete"}, "severity": {"Critical"}, "source": {"OS"}})
	if err := e.Admin.Do(ctx, http.MethodGet, "/api/v1/approval-policy", nil, nil, &ap); err != nil || len(ap.Rules) != 0 || !ap.DeclineOlder {
		t.Fatalf("after removing the rule: %+v %v", ap, err)
	}
	// A Read-only user reads the periods, without the form.
	rd := newBrowser(t, e.URL)
	rd.signIn("reader@example.com")
	if _, page := rd.get("/console/vulnerabilities"); strings.Contains(page, `id="remediation-policy"`) || !strings.Contains(page, "Critical 3 days") {
		t.Errorf("read-only periods:\n%s", between(page, `id="h-policy"`, "</section>"))
	}
	if code, _, _ := rd.post("/console/vulnerabilities/policy", url.Values{"criticalDays": {"1"}, "highDays": {"1"}, "mediumDays": {"1"}, "lowDays": {"1"}}); code != http.StatusForbidden {
		t.Errorf("read-only set: %d", code)
	}
}
