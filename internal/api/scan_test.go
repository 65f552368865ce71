package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentapi"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestScanEndpoint: POST /api/v1/endpoints/{id}/scan wakes the agent's long
// poll with scanNow, which is handed out once; another organization's
// endpoint is 404 and gets nothing; a viewer may not ask.
func TestScanEndpoint(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.Enroll("uid-scan", "WS-SCAN", "linux")
	ag.Inventory(apitest.Sample("WS-SCAN", "linux"), "scan-hash").Must(t, http.StatusOK, "inventory")
	idle := agentproto.CheckinRequest{AgentVersion: "1.0.0", IPAddresses: []string{}, InventoryHash: "scan-hash"}

	first, ans := ag.Checkin(0, idle)
	if ans.Status != http.StatusOK || first.ScanNow || first.RefreshSeconds != int(agentapi.DefaultScanInterval/time.Second) {
		t.Fatalf("check-in before any scan: %d %+v", ans.Status, first)
	}

	// A long poll is held; the scan request ends it with scanNow.
	type result struct {
		resp agentproto.CheckinResponse
		ans  apitest.Answer
	}
	done := make(chan result, 1)
	go func() {
		r, a := ag.Checkin(60, idle)
		done <- result{r, a}
	}()
	deadline := time.Now().Add(30 * time.Second)
	for !e.Server.Presence().Polling(ag.ID) {
		if time.Now().After(deadline) {
			t.Fatal("the agent's long poll is not held")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := e.Admin.ScanEndpoint(ctx, ag.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.ans.Status != http.StatusOK || !r.resp.ScanNow || len(r.resp.Commands) != 0 {
			t.Fatalf("woken check-in: %d %+v", r.ans.Status, r.resp)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the scan request did not end the long poll")
	}
	// Handed out once.
	if again, _ := ag.Checkin(0, idle); again.ScanNow {
		t.Fatal("scanNow handed out twice")
	}

	// Another organization cannot ask; its agent's request is its own.
	other := e.Client(e.NewOrg("Other"), perm.All)
	mustStatus(t, other.ScanEndpoint(ctx, ag.ID), http.StatusNotFound, "other org")
	if r, _ := ag.Checkin(0, idle); r.ScanNow {
		t.Fatal("another organization's request reached the agent")
	}
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	mustStatus(t, viewer.ScanEndpoint(ctx, ag.ID), http.StatusForbidden, "viewer")
	mustStatus(t, e.Admin.ScanEndpoint(ctx, "no-such-endpoint"), http.StatusNotFound, "unknown endpoint")

	// Asked while the agent is away: the next check-in gets it.
	if err := e.Admin.ScanEndpoint(ctx, ag.ID); err != nil {
		t.Fatal(err)
	}
	if r, _ := ag.Checkin(0, idle); !r.ScanNow {
		t.Fatal("a request made while the agent was away was not handed out")
	}
}
