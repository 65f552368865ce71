package api_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// commandOf checks an agent in and answers its one pending command.
func commandOf(t *testing.T, ag *apitest.Agent) agentproto.Command {
	t.Helper()
	resp, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0"})
	if ans.Status != 200 || len(resp.Commands) != 1 {
		t.Fatalf("checkin of %s: %d %s", ag.ID, ans.Status, ans.Body)
	}
	return resp.Commands[0]
}

func runOf(t *testing.T, c *client.Client, runID string) (apiv1.Run, map[string]apiv1.RunCommand) {
	t.Helper()
	ctx := context.Background()
	runs, err := c.ListRuns(ctx, client.RunQuery{Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var run apiv1.Run
	for _, r := range runs.Items {
		if r.ID == runID {
			run = r
		}
	}
	if run.ID == "" {
		t.Fatalf("run %s not listed", runID)
	}
	cmds, err := c.RunCommands(ctx, runID, client.RunQuery{})
	if err != nil {
		t.Fatal(err)
	}
	byEndpoint := map[string]apiv1.RunCommand{}
	for _, c := range cmds.Items {
		byEndpoint[c.MachineID] = c
	}
	if cmds.Total != run.Total {
		t.Fatalf("run total %d but %d commands", run.Total, cmds.Total)
	}
	return run, byEndpoint
}

func problemFields(err error) string {
	var apiErr *client.Error
	if !asErr(err, &apiErr) {
		return ""
	}
	var f []string
	for _, p := range apiErr.Details {
		f = append(f, p.Field)
	}
	return apiErr.Code + ":" + strings.Join(f, ",")
}

func intp(n int) *int { return &n }

func TestActionRunScriptStatuses(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	w1 := e.Enroll("w1", "win-01", "windows")
	l1 := e.Enroll("l1", "lin-01", "linux")
	other := e.NewOrg("Other")
	otherAdmin := e.Client(other, perm.All)

	// Ids outside the organization are ignored; one run, one command per endpoint.
	started, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{w1.ID, l1.ID, "nope", w1.ID},
		Payload: json.RawMessage(`{"script":"echo hi","language":"bash"}`)})
	if err != nil || !started.OK || started.Queued != 2 || started.RunID == "" {
		t.Fatalf("action: %+v %v", started, err)
	}
	run, cmds := runOf(t, e.Admin, started.RunID)
	if run.Status != "RUNNING" || run.Total != 2 || run.Name != "Run script" || run.ActionType != "RUN_SCRIPT" || *run.CreatedBy == "" ||
		cmds[w1.ID].Status != "PENDING" || cmds[l1.ID].Endpoint != "lin-01" {
		t.Fatalf("run: %+v %+v", run, cmds)
	}
	c := commandOf(t, w1)
	var p agentproto.RunScriptPayload
	json.Unmarshal(c.Payload, &p)
	if c.Type != "RUN_SCRIPT" || c.RunID != run.ID || p.Script != "echo hi" || p.Language != "bash" || c.NotAfter != nil {
		t.Fatalf("command: %+v %s", c, c.Payload)
	}
	if ans := w1.Status(c.ID, "RUNNING", "started\n", nil); ans.Status != 200 {
		t.Fatal(ans.Status)
	}
	if ans := w1.Status(c.ID, "SUCCESS", "hi\n", intp(0)); ans.Status != 200 {
		t.Fatal(ans.Status)
	}
	run, _ = runOf(t, e.Admin, started.RunID)
	if run.Status != "RUNNING" || run.Succeeded != 1 || run.Failed != 0 {
		t.Fatalf("one done: %+v", run)
	}
	lc := commandOf(t, l1)
	l1.Status(lc.ID, "FAILED", "boom", intp(1))
	run, cmds = runOf(t, e.Admin, started.RunID)
	if run.Status != "FAILED" || run.Succeeded != 1 || run.Failed != 1 || run.FinishedAt == nil || cmds[w1.ID].Status != "SUCCESS" ||
		*cmds[w1.ID].Result != "started\nhi\n" || cmds[l1.ID].Status != "FAILED" {
		t.Fatalf("failed run: %+v %+v", run, cmds)
	}

	// Another run where every command succeeds is COMPLETED.
	started, err = e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", Label: "Monthly reboot", EndpointIDs: []string{w1.ID},
		Payload: json.RawMessage(`{"message":"Rebooting for updates","timeoutSeconds":120}`)})
	if err != nil {
		t.Fatal(err)
	}
	c = commandOf(t, w1)
	var rp agentproto.RebootPayload
	json.Unmarshal(c.Payload, &rp)
	if rp.Message != "Rebooting for updates" || rp.TimeoutSeconds != 120 {
		t.Fatalf("reboot payload %s", c.Payload)
	}
	w1.Status(c.ID, "SUCCESS", "", intp(0))
	run, _ = runOf(t, e.Admin, started.RunID)
	if run.Status != "COMPLETED" || run.Name != "Monthly reboot" || run.Succeeded != 1 {
		t.Fatalf("completed: %+v", run)
	}

	// Software actions hand the agent the validated payload.
	for _, c := range []struct{ typ, payload, want string }{
		{"DEPLOY_SOFTWARE", `{"wingetId":"7zip.7zip"}`, `{"wingetId":"7zip.7zip"}`},
		{"DEPLOY_SOFTWARE", `{"url":"https://example.com/x.msi","args":"/qn"}`, `{"url":"https://example.com/x.msi","args":"/qn"}`},
		{"UNINSTALL_SOFTWARE", `{"name":"7-Zip 24.08 (x64)"}`, `{"name":"7-Zip 24.08 (x64)"}`},
	} {
		if _, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: c.typ, EndpointIDs: []string{w1.ID}, Payload: json.RawMessage(c.payload)}); err != nil {
			t.Fatal(err)
		}
		cmd := commandOf(t, w1)
		if cmd.Type != c.typ || string(cmd.Payload) != c.want {
			t.Fatalf("%s: %s", c.typ, cmd.Payload)
		}
		w1.Status(cmd.ID, "SUCCESS", "", intp(0))
	}

	// Statuses: 404 with no valid endpoint (another organization's too), 422 with details, 403, 400.
	mustStatus(t, errOf(e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{"nope"}})), 404, "no valid endpoints")
	mustStatus(t, errOf(otherAdmin.RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{w1.ID}})), 404, "other org")
	_, err = e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{w1.ID}, Payload: json.RawMessage(`{"script":"x","language":"cobol"}`)})
	if got := problemFields(err); got != "validation_failed:payload.language" {
		t.Fatalf("bad language: %v", err)
	}
	// DEPLOY_SOFTWARE: the installer's url is https only; sha256 is 64 hex digits.
	for payload, want := range map[string]string{
		`{"url":"http://downloads.example.com/a.msi"}`:                                             "validation_failed:payload.url",
		`{"url":"https://downloads.example.com/a.msi","sha256":"abc"}`:                             "validation_failed:payload.sha256",
		`{"url":"https://downloads.example.com/a.msi","sha256":"` + strings.Repeat("g", 64) + `"}`: "validation_failed:payload.sha256",
	} {
		_, err = e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_SOFTWARE", EndpointIDs: []string{w1.ID}, Payload: json.RawMessage(payload)})
		if got := problemFields(err); got != want {
			t.Fatalf("%s: %v %s", payload, err, got)
		}
	}
	_, err = e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "TELEPORT"})
	if got := problemFields(err); got != "validation_failed:endpointIds,type" {
		t.Fatalf("bad type: %v %s", err, got)
	}
	_, err = e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: []string{w1.ID}, Payload: json.RawMessage(`{"mode":"filters","filters":{"severities":["Urgent"]}}`)})
	if got := problemFields(err); got != "validation_failed:payload.filters.severities[0]" {
		t.Fatalf("bad severity: %v", err)
	}
	mustStatus(t, errOf(e.Client(e.Org, perm.ReadOnly).RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{w1.ID}})), 403, "read-only")
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.AutomationsManage)).RunAction(ctx, apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{w1.ID}})), 403, "automations.manage is not automations.run")
	tok := tokenOf(t, e.Admin)
	if ans := e.Call("POST", "/api/v1/actions", tok, []byte(`{"type":`), false); ans.Status != 400 || ans.Error() != "invalid_json" {
		t.Fatalf("malformed JSON: %d %s", ans.Status, ans.Body)
	}

	// GET /api/v1/runs: filters, limit, unknown and foreign runs.
	list, err := e.Admin.ListRuns(ctx, client.RunQuery{EndpointID: l1.ID})
	if err != nil || list.Total != 1 || list.Items[0].ActionType != "RUN_SCRIPT" {
		t.Fatalf("runs of l1: %+v %v", list, err)
	}
	list, err = e.Admin.ListRuns(ctx, client.RunQuery{Limit: 2})
	if err != nil || len(list.Items) != 2 || list.Total != 5 || list.Items[0].ActionType != "UNINSTALL_SOFTWARE" {
		t.Fatalf("limited runs: %+v %v", list, err)
	}
	mustStatus(t, errOf(e.Admin.RunCommands(ctx, "nope", client.RunQuery{})), 404, "unknown run")
	mustStatus(t, errOf(otherAdmin.RunCommands(ctx, started.RunID, client.RunQuery{})), 404, "foreign run")
	if l, err := otherAdmin.ListRuns(ctx, client.RunQuery{}); err != nil || l.Total != 0 {
		t.Fatalf("other org runs: %+v %v", l, err)
	}
}

func TestActionStoredScriptAndStop(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	w1 := e.Enroll("w1", "win-01", "windows")
	w2 := e.Enroll("w2", "win-02", "windows")
	admin := &store.AuditEntry{OrgID: e.Org.ID, Actor: "test", Action: "script.create", TargetType: "script"}
	sc, err := e.Store.CreateScript(ctx, admin, store.Script{OrgID: e.Org.ID, Name: "Clean temp", Language: "powershell", Code: "Remove-Item $env:TEMP\\* -Recurse",
		Parameters: []actions.ScriptParam{{Name: "Days", Default: "7"}, {Name: "Path", Required: true}}, RebootExitCodes: []int{3010}, TimeoutSeconds: 900}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	started, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{w1.ID, w2.ID},
		Payload: json.RawMessage(`{"scriptId":"` + sc.ID + `","parameters":{"Path":"C:\\Temp"}}`)})
	if err != nil || started.Queued != 2 {
		t.Fatalf("%+v %v", started, err)
	}
	c := commandOf(t, w1)
	var p agentproto.RunScriptPayload
	json.Unmarshal(c.Payload, &p)
	if p.Script != sc.Code || p.Language != "powershell" || p.Parameters["Days"] != "7" || p.Parameters["Path"] != `C:\Temp` ||
		len(p.RebootExitCodes) != 1 || p.RebootExitCodes[0] != 3010 || p.TimeoutSeconds != 900 {
		t.Fatalf("resolved script: %s", c.Payload)
	}
	for body, want := range map[string]string{
		`{"scriptId":"` + sc.ID + `"}`:                                   "validation_failed:payload.parameters.Path",
		`{"scriptId":"` + sc.ID + `","parameters":{"Path":"x","Y":"1"}}`: "validation_failed:payload.parameters.Y",
		`{"scriptId":"missing"}`:                                         "validation_failed:payload.scriptId",
	} {
		_, err := e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{w1.ID}, Payload: json.RawMessage(body)})
		if got := problemFields(err); got != want {
			t.Fatalf("%s: %v (%s)", body, err, got)
		}
	}

	// Stop: w1 runs already, w2 is pending and is cancelled; w1's result still counts.
	w1.Status(c.ID, "RUNNING", "", nil)
	stop := &store.AuditEntry{OrgID: e.Org.ID, Actor: "admin:cli", Action: "run.stop", TargetType: "run"}
	run, err := e.Store.StopRun(ctx, stop, e.Org.ID, started.RunID, time.Now())
	if err != nil || run.Status != "STOPPED" || run.FinishedAt == nil {
		t.Fatalf("stop: %+v %v", run, err)
	}
	if _, err := e.Store.StopRun(ctx, stop, e.Org.ID, started.RunID, time.Now()); err == nil {
		t.Fatal("stopping a stopped run")
	}
	if _, err := e.Store.StopRun(ctx, stop, "other-org", started.RunID, time.Now()); !isNotFoundErr(err) {
		t.Fatalf("stop in another org: %v", err)
	}
	if resp, _ := w2.Checkin(0, agentproto.CheckinRequest{}); len(resp.Commands) != 0 {
		t.Fatalf("cancelled command handed out: %+v", resp.Commands)
	}
	w1.Status(c.ID, "SUCCESS", "done", intp(0))
	run, cmds := runOf(t, e.Admin, started.RunID)
	if run.Status != "STOPPED" || run.Succeeded != 1 || run.Failed != 0 || cmds[w2.ID].Status != "CANCELLED" ||
		!strings.Contains(*cmds[w2.ID].Result, "stopped by admin:cli") || cmds[w1.ID].Status != "SUCCESS" {
		t.Fatalf("stopped run: %+v %+v", run, cmds)
	}
}

func isNotFoundErr(err error) bool { return err != nil && strings.Contains(err.Error(), "not found") }

func TestActionDeployUpdates(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	w1 := e.EnrollSample("w1", "win-01", "windows")
	l1 := e.EnrollSample("l1", "lin-01", "linux")
	w2 := e.Enroll("w2", "win-02", "windows")
	clean := apitest.Sample("win-02", "windows")
	clean.Updates = nil
	w2.MustInventory(clean)

	keysOf := func(c agentproto.Command) string {
		var p agentproto.DeployUpdatesPayload
		if err := json.Unmarshal(c.Payload, &p); err != nil {
			t.Fatal(err)
		}
		var k []string
		for _, u := range p.Updates {
			k = append(k, u.Key)
		}
		return strings.Join(k, " ")
	}
	deploy := func(payload string, eps ...*apitest.Agent) (apiv1.RunStarted, error) {
		var ids []string
		for _, a := range eps {
			ids = append(ids, a.ID)
		}
		return e.Admin.RunAction(ctx, apiv1.ActionBody{Type: "DEPLOY_UPDATES", EndpointIDs: ids, Payload: json.RawMessage(payload)})
	}
	finish := func(ag *apitest.Agent) string {
		c := commandOf(t, ag)
		ag.Status(c.ID, "SUCCESS", "", intp(0))
		return keysOf(c)
	}

	// mode all: each endpoint gets its own explicit list; one with nothing is CANCELLED.
	started, err := deploy(`{"mode":"all"}`, w1, l1, w2)
	if err != nil || started.Queued != 2 {
		t.Fatalf("deploy all: %+v %v", started, err)
	}
	run, cmds := runOf(t, e.Admin, started.RunID)
	if cmds[w2.ID].Status != "CANCELLED" || !strings.HasPrefix(*cmds[w2.ID].Result, "Nothing to install") || run.Total != 3 {
		t.Fatalf("nothing-to-install command: %+v", cmds[w2.ID])
	}
	if got := finish(w1); got != "KB5048685 Mozilla.Firefox@133.0.3" {
		t.Fatalf("w1 updates: %q", got)
	}
	if got := finish(l1); got != "debian:openssl@3.0.15-1~deb12u1" {
		t.Fatalf("l1 updates: %q", got)
	}
	run, _ = runOf(t, e.Admin, started.RunID)
	if run.Status != "COMPLETED" || run.Succeeded != 2 || run.Failed != 0 || run.Total != 3 {
		t.Fatalf("deploy run: %+v", run)
	}

	// Nothing installs anywhere: 422 nothing_to_install, and no run.
	var apiErr *client.Error
	if _, err := deploy(`{"mode":"all"}`, w2); !asErr(err, &apiErr) || apiErr.Status != 422 || apiErr.Code != "nothing_to_install" {
		t.Fatalf("nothing anywhere: %v", err)
	}
	mustStatus(t, errOf(deploy(`{"mode":"selected","keys":["KB0000001"]}`, w1, w2)), 422, "unknown key")
	// Filters with both label sets.
	mustStatus(t, errOf(deploy(`{"mode":"filters","filters":{"types":["Regular Updates"],"sources":["Applications"]}}`, w1)), 422, "v1 labels: apps are not Regular Updates")
	if _, err := deploy(`{"mode":"filters","filterVersion":2,"filters":{"types":["Regular Updates"],"sources":["THIRD_PARTY"]}}`, w1); err != nil {
		t.Fatalf("v2 labels: %v", err)
	}
	if got := finish(w1); got != "Mozilla.Firefox@133.0.3" {
		t.Fatalf("v2 regular: %q", got)
	}
	if _, err := deploy(`{"mode":"filters","filters":{"severities":["Critical"]}}`, w1, l1); err != nil {
		t.Fatal(err)
	}
	if got := finish(w1); got != "KB5048685" {
		t.Fatalf("critical: %q", got)
	}
	// Approvals: approvalMode approved sends only APPROVED keys; all but DECLINED is the default.
	if _, err := e.Admin.SetApproval(ctx, apiv1.ApprovalBody{Status: "APPROVED", Keys: []apiv1.ApprovalKey{{Key: "KB5048685"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Admin.SetApproval(ctx, apiv1.ApprovalBody{Status: "DECLINED", Keys: []apiv1.ApprovalKey{{Key: "debian:openssl@3.0.15-1~deb12u1"}}}); err != nil {
		t.Fatal(err)
	}
	started, err = deploy(`{"mode":"all","approvalMode":"APPROVED_ONLY"}`, w1, l1)
	if err != nil || started.Queued != 1 {
		t.Fatalf("approved only: %+v %v", started, err)
	}
	if got := finish(w1); got != "KB5048685" {
		t.Fatalf("approved only: %q", got)
	}
	mustStatus(t, errOf(deploy(`{"mode":"all"}`, l1)), 422, "declined is not deployed")
	// An update without a package source does not count as installable.
	nosrc := apitest.Sample("win-02", "windows")
	str := func(s string) *string { return &s }
	nosrc.Updates = []agentproto.Update{{Title: "Acme Tool", Source: "Applications", LatestVersion: str("2.0"), InstalledVersion: str("1.0")}}
	w2.MustInventory(nosrc)
	if _, err := deploy(`{"mode":"all"}`, w2); !asErr(err, &apiErr) || apiErr.Code != "nothing_to_install" {
		t.Fatalf("no package source: %v", err)
	}
}

// A command queued by an action reaches an agent that is long-polling.
func TestActionWakesLongPoll(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("w1", "win-01", "windows")
	if ans := ag.Inventory(apitest.Sample("win-01", "windows"), "h1"); ans.Status != 200 {
		t.Fatal(ans.Status)
	}
	got := make(chan time.Time, 1)
	go func() {
		resp, _ := ag.Checkin(60, agentproto.CheckinRequest{InventoryHash: "h1"})
		if len(resp.Commands) == 1 {
			got <- time.Now()
		}
		close(got)
	}()
	for deadline := time.Now().Add(time.Minute); !e.Server.Presence().Polling(ag.ID); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the long poll is not held")
		}
	}
	sent := time.Now()
	if _, err := e.Admin.RunAction(context.Background(), apiv1.ActionBody{Type: "REBOOT", EndpointIDs: []string{ag.ID}}); err != nil {
		t.Fatal(err)
	}
	at, ok := <-got
	// A poll that ran out its wait answers without the command.
	if !ok {
		t.Fatal("the long poll was not woken by the action")
	}
	t.Logf("long poll woke %v after the action", at.Sub(sent))
}
