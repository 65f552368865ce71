package agentapi_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/endpointq"
)

// stepClock is a clock the test moves: a check-in and a stopping call in
// the same millisecond would be ordered by chance.
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(10 * time.Millisecond)
	return c.t
}

// TestStoppingDisconnectsAtOnce: an agent that says it stops shows
// disconnected at once, in the API's endpoint and list filters, the
// console's summary and the status sweep, although it checked in just
// before; a check-in accepted before the call and written after it does
// not undo it, the agent's next check-in does. Only the endpoint's own
// agent secret is heard; bad input is 400 in the Error shape and changes
// nothing; a removed or re-enrolled endpoint's secret is 401.
func TestStoppingDisconnectsAtOnce(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	clock := &stepClock{t: time.Now()}
	e.Server.Agents().SetClock(clock.Now)
	ag := e.Enroll("uid-1", "web-01", "linux")
	other := e.Enroll("uid-2", "web-02", "linux")
	flush := func() {
		t.Helper()
		if err := e.Server.Presence().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	status := func(a *apitest.Agent) string {
		t.Helper()
		ep, err := e.Admin.GetEndpoint(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		return ep.Status
	}
	listed := func(st string) []string {
		t.Helper()
		page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{Status: st})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, it := range page.Items {
			names = append(names, it.Name)
		}
		return names
	}
	connected := func() int {
		t.Helper()
		f, err := e.Store.FleetSummary(ctx, e.Org.ID, endpointq.ConnectedSince(time.Now(), time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		return f.Connected
	}
	ag.Checkin(0, agentproto.CheckinRequest{})
	other.Checkin(0, agentproto.CheckinRequest{})
	flush()
	if status(ag) != "connected" || status(other) != "connected" {
		t.Fatalf("after check-ins: %s %s", status(ag), status(other))
	}

	// Refused: no secret, a wrong one, bad bodies. Nothing changes.
	for _, c := range []struct {
		name, secret string
		body         any
		code         int
		err          string
	}{
		{"no secret", "", agentproto.StoppingReport{}, http.StatusUnauthorized, "invalid_agent"},
		{"wrong secret", "nope", agentproto.StoppingReport{}, http.StatusUnauthorized, "invalid_agent"},
		{"not JSON", ag.Secret, []byte("stop"), http.StatusBadRequest, "invalid_json"},
		{"long reason", ag.Secret, agentproto.StoppingReport{Reason: strings.Repeat("x", agentproto.MaxStoppingReason+1)}, http.StatusBadRequest, "invalid_request"},
		{"NUL in reason", ag.Secret, agentproto.StoppingReport{Reason: "sig\x00nal"}, http.StatusBadRequest, "invalid_json"},
		{"reason not text", ag.Secret, []byte(`{"reason": 15}`), http.StatusBadRequest, "invalid_request"},
	} {
		ans := e.Call(http.MethodPost, agentproto.PathStopping, c.secret, c.body, false)
		if ans.Status != c.code || ans.Error() != c.err {
			t.Errorf("%s: %d %s, want %d %s", c.name, ans.Status, ans.Body, c.code, c.err)
		}
	}
	if status(ag) != "connected" {
		t.Fatalf("a refused stopping call disconnected the endpoint")
	}

	// A check-in accepted before the call, written after it (the batch of
	// a flush, or another replica's).
	ag.Checkin(0, agentproto.CheckinRequest{})
	ag.Stopping(agentproto.StopSignal).Must(t, http.StatusNoContent, "stopping")
	flush()
	if got := status(ag); got != "disconnected" {
		t.Fatalf("after the stopping call: %s", got)
	}
	if got := status(other); got != "connected" {
		t.Fatalf("another endpoint after the stopping call: %s", got)
	}
	if got := listed("disconnected"); len(got) != 1 || got[0] != "web-01" {
		t.Errorf("status=disconnected lists %v", got)
	}
	if got := listed("connected"); len(got) != 1 || got[0] != "web-02" {
		t.Errorf("status=connected lists %v", got)
	}
	if n := connected(); n != 1 {
		t.Errorf("console summary: %d connected, want 1", n)
	}
	changes, err := e.Store.SweepStatus(ctx, endpointq.ConnectedSince(time.Now(), time.Minute), time.Now())
	if err != nil || len(changes) != 1 || changes[0].EndpointID != ag.ID || changes[0].Connected {
		t.Fatalf("sweep after the stopping call: %+v %v", changes, err)
	}

	// The next check-in: connected again.
	ag.Checkin(0, agentproto.CheckinRequest{})
	flush()
	if got := status(ag); got != "connected" {
		t.Fatalf("after the next check-in: %s", got)
	}
	if n := connected(); n != 2 {
		t.Errorf("console summary after the check-in: %d connected, want 2", n)
	}
	changes, err = e.Store.SweepStatus(ctx, endpointq.ConnectedSince(time.Now(), time.Minute), time.Now())
	if err != nil || len(changes) != 1 || changes[0].EndpointID != ag.ID || !changes[0].Connected {
		t.Fatalf("sweep after the next check-in: %+v %v", changes, err)
	}

	// Enrolled again: the old secret is refused, the endpoint unchanged.
	again := e.Enroll("uid-1", "web-01", "linux")
	if ans := ag.Stopping(agentproto.StopSignal); ans.Status != http.StatusUnauthorized || ans.Error() != "invalid_agent" {
		t.Errorf("stopping with a replaced secret: %d %s", ans.Status, ans.Body)
	}
	if got := status(again); got != "connected" {
		t.Fatalf("a replaced secret's stopping call: %s", got)
	}

	// Removed: 401, and the agent is still told to uninstall.
	if err := e.Admin.DeleteEndpoint(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	if ans := other.Stopping(agentproto.StopSignal); ans.Status != http.StatusUnauthorized || ans.Error() != "invalid_agent" {
		t.Errorf("stopping of a removed endpoint: %d %s", ans.Status, ans.Body)
	}
	if resp, ans := other.Checkin(0, agentproto.CheckinRequest{}); ans.Status != http.StatusOK || !resp.Uninstall {
		t.Errorf("check-in of the removed endpoint after its stopping call: %d %s", ans.Status, ans.Body)
	}
}
