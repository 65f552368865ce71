package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/apitest"
)

// TestStoppedAgentShownDisconnected: the console shows an endpoint whose
// agent said it stops as disconnected at once (its page, the list's
// status filter, the dashboard's count), and connected again after its
// next check-in.
func TestStoppedAgentShownDisconnected(t *testing.T) {
	e := apitest.New(t)
	b := adminBrowser(t, e)
	ag := e.Enroll("stop-01", "stop-01", "linux")
	e.Enroll("run-01", "run-01", "linux")
	flush := func() {
		t.Helper()
		if err := e.Server.Presence().Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	shows := func(status string) {
		t.Helper()
		other := map[string]string{"connected": "disconnected", "disconnected": "connected"}[status]
		if _, body := b.get("/console/endpoints/" + ag.ID); !strings.Contains(body, `<span class="badge `+status+`">`) {
			t.Fatalf("endpoint page does not show %s:\n%.3000s", status, body)
		}
		if _, body := b.get("/console/endpoints?status=" + status); !strings.Contains(body, ">stop-01<") {
			t.Errorf("status=%s does not list the endpoint:\n%.6000s", status, body)
		}
		if _, body := b.get("/console/endpoints?status=" + other); strings.Contains(body, ">stop-01<") {
			t.Errorf("status=%s lists the endpoint", other)
		}
		want := map[string]string{"connected": "2 of 2 endpoints connected", "disconnected": "1 of 2 endpoints connected"}[status]
		if _, body := b.get("/console/"); !strings.Contains(body, want) {
			t.Errorf("dashboard does not say %q", want)
		}
	}
	ag.Checkin(0, agentproto.CheckinRequest{})
	flush()
	shows("connected")
	if ans := ag.Stopping(agentproto.StopSignal); ans.Status != http.StatusNoContent {
		t.Fatalf("stopping: %d %s", ans.Status, ans.Body)
	}
	shows("disconnected")
	ag.Checkin(0, agentproto.CheckinRequest{})
	flush()
	shows("connected")
}
