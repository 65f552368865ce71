package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

func TestRunGetStopRetry(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	cred, admin := e.CredentialClient(e.Org, perm.All)
	a1, a2, a3 := e.Enroll("m1", "host-1", "linux"), e.Enroll("m2", "host-2", "linux"), e.Enroll("m3", "host-3", "linux")
	started, err := admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{a1.ID, a2.ID, a3.ID}, Label: "Fix it",
		Payload: json.RawMessage(`{"script":"fix","language":"bash"}`)})
	if err != nil {
		t.Fatal(err)
	}
	// host-1 succeeds, host-2 and host-3 fail.
	for ag, status := range map[*apitest.Agent]string{a1: "SUCCESS", a2: "FAILED", a3: "FAILED"} {
		c := commandOf(t, ag)
		ag.Status(c.ID, status, "done", intp(map[string]int{"SUCCESS": 0, "FAILED": 1}[status])).Must(t, 200, "status")
	}
	run, err := admin.GetRun(ctx, started.RunID)
	if err != nil || run.ID != started.RunID || run.Name != "Fix it" || run.Total != 3 || run.Succeeded != 1 || run.Failed != 2 || run.Status != "FAILED" {
		t.Fatalf("get: %+v %v", run, err)
	}
	// A finished run cannot be stopped.
	if _, err := admin.StopRun(ctx, run.ID); !client.IsStatus(err, http.StatusConflict) || !strings.Contains(err.Error(), "run_not_running") {
		t.Fatalf("stop a finished run: %v", err)
	}

	// Retry: a new run on the two failed endpoints, with the same action.
	retry, err := admin.RetryRun(ctx, run.ID)
	if err != nil || retry.Queued != 2 || retry.RunID == run.ID {
		t.Fatalf("retry: %+v %v", retry, err)
	}
	again, cmds := runOf(t, admin, retry.RunID)
	if again.Name != "Fix it (retry)" || again.Total != 2 || again.Status != "RUNNING" || again.ActionType != "RUN_SCRIPT" ||
		cmds[a2.ID].Status != "PENDING" || cmds[a3.ID].Status != "PENDING" || again.Detail == nil || !strings.Contains(*again.Detail, run.ID) {
		t.Fatalf("retry run: %+v %+v", again, cmds)
	}
	c := commandOf(t, a2)
	var p agentproto.RunScriptPayload
	if json.Unmarshal(c.Payload, &p); p.Script != "fix" || c.RunID != retry.RunID {
		t.Fatalf("retried command: %+v %s", c, c.Payload)
	}
	if en := auditedAs(t, e, e.Org, "run.retry", cred.Name, retry.RunID); en.Summary["retryOf"] != run.ID {
		t.Fatalf("retry audit: %+v", en)
	}

	// Stop the retry while host-2 runs its command: host-3's is cancelled.
	if ans := a2.Status(c.ID, "RUNNING", "", nil); ans.Status != 200 {
		t.Fatal(ans.Status)
	}
	stopped, err := admin.StopRun(ctx, retry.RunID)
	if err != nil || stopped.Status != "STOPPED" || stopped.ID != retry.RunID {
		t.Fatalf("stop: %+v %v", stopped, err)
	}
	auditedAs(t, e, e.Org, "run.stop", cred.Name, retry.RunID)
	if _, cmds := runOf(t, admin, retry.RunID); cmds[a3.ID].Status != "CANCELLED" || cmds[a2.ID].Status != "RUNNING" {
		t.Fatalf("after stop: %+v", cmds)
	}
	mustStatus(t, errOf(admin.StopRun(ctx, retry.RunID)), http.StatusConflict, "stop twice")
	// A run none of whose commands failed has nothing to retry.
	if _, err := admin.RetryRun(ctx, retry.RunID); !client.IsStatus(err, http.StatusConflict) || !strings.Contains(err.Error(), "no_failed_endpoints") {
		t.Fatalf("retry without failures: %v", err)
	}

	// Permissions: automations.view reads but neither stops nor retries;
	// without automations.view nothing; another organization sees no run.
	viewer := e.Client(e.Org, perm.ReadOnly)
	if _, err := viewer.GetRun(ctx, run.ID); err != nil {
		t.Errorf("viewer get: %v", err)
	}
	wantStatus(t, errOf(viewer.RetryRun(ctx, run.ID)), http.StatusForbidden, "viewer retry")
	wantStatus(t, errOf(viewer.StopRun(ctx, run.ID)), http.StatusForbidden, "viewer stop")
	wantStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView)).GetRun(ctx, run.ID)), http.StatusForbidden, "get without automations.view")
	other := e.Client(e.NewOrg("Other"), perm.All)
	wantStatus(t, errOf(other.GetRun(ctx, run.ID)), http.StatusNotFound, "other get")
	wantStatus(t, errOf(other.StopRun(ctx, run.ID)), http.StatusNotFound, "other stop")
	wantStatus(t, errOf(other.RetryRun(ctx, run.ID)), http.StatusNotFound, "other retry")
	// Malformed ids are 400; a retry whose stored script was deleted is 422.
	tok := tokenOf(t, admin)
	for _, path := range []string{"/api/v1/runs/%00/stop", "/api/v1/runs/%00/retry"} {
		if a := rawCall(t, e, http.MethodPost, path, tok, nil); a.status != http.StatusBadRequest {
			t.Errorf("%s: %d %s", path, a.status, a.body)
		}
	}
	sc, err := admin.CreateScript(ctx, scriptBody("flaky"))
	if err != nil {
		t.Fatal(err)
	}
	scripted, err := admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{a1.ID}, Payload: json.RawMessage(`{"scriptId":"` + sc.ID + `"}`)})
	if err != nil {
		t.Fatal(err)
	}
	c1 := commandOf(t, a1)
	a1.Status(c1.ID, "FAILED", "no", intp(2))
	if err := admin.DeleteScript(ctx, sc.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RetryRun(ctx, scripted.RunID); problemFields(err) != "validation_failed:payload.scriptId" {
		t.Fatalf("retry of a deleted script: %v", err)
	}
	if r, _ := admin.ListRuns(ctx, client.RunQuery{}); r.Total != 3 {
		t.Fatalf("refused calls started runs: %d", r.Total)
	}
}

// TestRunFilters: failed=1 keeps the runs with a failed command; status and
// search select a run's results; a status the spec does not know, failed
// other than 1/0, or status/search without runId are 400 (patchd additions).
func TestRunFilters(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	admin := e.Client(e.Org, perm.All)
	a1, a2, a3 := e.Enroll("m1", "web-1", "linux"), e.Enroll("m2", "web-2", "linux"), e.Enroll("m3", "db-1", "linux")
	bad, err := admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{a1.ID, a2.ID, a3.ID}, Label: "Mixed",
		Payload: json.RawMessage(`{"script":"x","language":"bash"}`)})
	if err != nil {
		t.Fatal(err)
	}
	for ag, res := range map[*apitest.Agent][2]string{a1: {"SUCCESS", "all good"}, a2: {"FAILED", "disk FULL on /var"}, a3: {"FAILED", "timeout"}} {
		ag.Status(commandOf(t, ag).ID, res[0], res[1], intp(map[string]int{"SUCCESS": 0, "FAILED": 1}[res[0]])).Must(t, 200, "status")
	}
	good, err := admin.RunAction(ctx, apiv1.ActionBody{Type: "RUN_SCRIPT", EndpointIDs: []string{a1.ID}, Label: "Fine",
		Payload: json.RawMessage(`{"script":"y","language":"bash"}`)})
	if err != nil {
		t.Fatal(err)
	}
	a1.Status(commandOf(t, a1).ID, "SUCCESS", "", intp(0))

	if all, err := admin.ListRuns(ctx, client.RunQuery{}); err != nil || all.Total != 2 {
		t.Fatalf("all runs: %+v %v", all, err)
	}
	failed, err := admin.ListRuns(ctx, client.RunQuery{Failed: true})
	if err != nil || failed.Total != 1 || failed.Items[0].ID != bad.RunID {
		t.Fatalf("failed runs: %+v %v", failed, err)
	}
	if l, err := admin.ListRuns(ctx, client.RunQuery{Since: time.Now().Add(time.Hour)}); err != nil || l.Total != 0 {
		t.Fatalf("runs since an hour from now: %+v %v", l, err)
	}
	if l, err := admin.ListRuns(ctx, client.RunQuery{Since: time.Now().Add(-time.Hour), Failed: true}); err != nil || l.Total != 1 {
		t.Fatalf("failed runs of the last hour: %+v %v", l, err)
	}
	ids := func(q client.RunQuery) []string {
		t.Helper()
		l, err := admin.RunCommands(ctx, bad.RunID, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range l.Items {
			out = append(out, c.Endpoint)
		}
		slices.Sort(out)
		if l.Total != len(out) {
			t.Fatalf("total %d for %d items", l.Total, len(out))
		}
		return out
	}
	for _, tc := range []struct {
		q    client.RunQuery
		want []string
	}{
		{client.RunQuery{Status: "FAILED"}, []string{"db-1", "web-2"}},
		{client.RunQuery{Status: "SUCCESS"}, []string{"web-1"}},
		{client.RunQuery{Status: "CANCELLED"}, nil},
		{client.RunQuery{Search: "WEB"}, []string{"web-1", "web-2"}},
		{client.RunQuery{Search: "disk full"}, []string{"web-2"}},
		{client.RunQuery{Status: "FAILED", Search: "web"}, []string{"web-2"}},
		{client.RunQuery{Search: "100%"}, nil}, // % is a character, not a wildcard
	} {
		if got := ids(tc.q); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.q, got, tc.want)
		}
	}
	tok := tokenOf(t, admin)
	for _, path := range []string{"/api/v1/runs?failed=yes", "/api/v1/runs?since=last+week", "/api/v1/runs?status=FAILED", "/api/v1/runs?search=web",
		"/api/v1/runs?runId=" + good.RunID + "&status=failed", "/api/v1/runs?runId=" + good.RunID + "&status=DONE"} {
		if a := rawCall(t, e, http.MethodGet, path, tok, nil); a.status != http.StatusBadRequest || a.code != "invalid_request" {
			t.Errorf("%s: %d %s", path, a.status, a.body)
		}
	}
}
