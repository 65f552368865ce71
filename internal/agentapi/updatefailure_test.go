package agentapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
)

// TestUpdateFailureStoredAndRaised: a check-in's updateFailure is stored on
// the endpoint (GET /api/v1/agent-versions lists it) and raises
// AGENT_UPDATE_FAILED; a malformed one is refused (400) and changes
// nothing; another organization sees neither.
func TestUpdateFailureStoredAndRaised(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	rule, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "Agent updates", Trigger: "AGENT_UPDATE_FAILED", EmailTo: ptrS("ops@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	ag := e.Enroll("uid-upd", "web-09", "linux")
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Millisecond)
	for _, bad := range []*agentproto.UpdateFailure{
		{Version: "", Reason: "bad signature", At: at},
		{Version: "2.0.0", Reason: " ", At: at},
		{Version: "2.0.0", Reason: "x\x00y", At: at},
		{Version: strings.Repeat("9", agentproto.MaxAgentVersion+1), Reason: "r", At: at},
		{Version: "2.0.0", Reason: strings.Repeat("r", agentproto.MaxUpdateReason+1), At: at},
	} {
		_, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0", IPAddresses: []string{}, UpdateFailure: bad})
		if ans.Status != http.StatusBadRequest {
			t.Fatalf("%+v: %d %s", bad, ans.Status, ans.Body)
		}
	}
	fleet, err := e.Store.AgentFleetOf(ctx, e.Org.ID)
	if err != nil || len(fleet.Failures) != 0 {
		t.Fatalf("after malformed reports: %+v %v", fleet.Failures, err)
	}
	if evs, _ := e.Store.ListAlertEvents(ctx, e.Org.ID, rule.Rule.ID, 10); len(evs) != 0 {
		t.Fatalf("malformed reports raised %+v", evs)
	}
	_, ans := ag.Checkin(0, agentproto.CheckinRequest{AgentVersion: "1.0.0", IPAddresses: []string{},
		UpdateFailure: &agentproto.UpdateFailure{Version: "2.0.0", Reason: "rolled back: the new agent did not check in in time", At: at}})
	if ans.Status != http.StatusOK {
		t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
	}
	fleet, err = e.Store.AgentFleetOf(ctx, e.Org.ID)
	if err != nil || len(fleet.Failures) != 1 {
		t.Fatalf("failures: %+v %v", fleet.Failures, err)
	}
	f := fleet.Failures[0]
	if f.EndpointID != ag.ID || f.Hostname != "web-09" || f.Version != "2.0.0" || !f.At.Equal(at) || !strings.Contains(f.Reason, "rolled back") {
		t.Fatalf("failure: %+v", f)
	}
	evs, err := e.Store.ListAlertEvents(ctx, e.Org.ID, rule.Rule.ID, 10)
	if err != nil || len(evs) != 1 || evs[0].Event != "AGENT_UPDATE_FAILED" || !strings.Contains(evs[0].Detail, "2.0.0") ||
		!strings.Contains(evs[0].Detail, "rolled back") {
		t.Fatalf("events: %+v %v", evs, err)
	}
	other := e.NewOrg("Other")
	if of, err := e.Store.AgentFleetOf(ctx, other.ID); err != nil || len(of.Failures) != 0 || len(of.Versions) != 0 {
		t.Fatalf("other organization: %+v %v", of, err)
	}
}
