package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TestAgentPolicyStaged: a staged policy gives the version to the first
// ring (a group) at once and to the rest only after the ring has had it for
// the delay and reached the success rate; GET shows each ring's state and
// counts; a ring whose failures make the rate unreachable halts the
// rollout; malformed bodies (422 naming the field) change nothing; another
// organization's group is no ring; the policy is audited and needs
// endpoints.manage.
func TestAgentPolicyStaged(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	now := time.Now()
	clock := func() time.Time { return now }
	e.Server.Agents().SetClock(clock)
	e.Server.API().SetClock(clock)

	test1 := e.Enroll("uid-t1", "test-1", "linux")
	test2 := e.Enroll("uid-t2", "test-2", "linux")
	rest1 := e.Enroll("uid-r1", "rest-1", "linux")
	rest2 := e.Enroll("uid-r2", "rest-2", "windows")
	g, err := e.Admin.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("Test"), MachineIDs: &[]string{test1.ID, test2.ID}})
	if err != nil {
		t.Fatal(err)
	}
	checkin := func(a *apitest.Agent, version string, f *agentproto.UpdateFailure) string {
		t.Helper()
		r, ans := a.Checkin(0, agentproto.CheckinRequest{AgentVersion: version, IPAddresses: []string{}, UpdateFailure: f})
		if ans.Status != http.StatusOK {
			t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
		}
		return r.AgentTarget
	}
	for _, a := range []*apitest.Agent{test1, test2, rest1, rest2} {
		checkin(a, "1.0.0", nil)
	}
	rings := func(v apiv1.AgentVersions) string {
		t.Helper()
		if v.Rollout == nil {
			t.Fatalf("no rollout: %+v", v)
		}
		var b strings.Builder
		for _, r := range v.Rollout.Rings {
			fmt.Fprintf(&b, "%s:%d/%d/%d ", r.State, r.Endpoints, r.Updated, r.Failed)
		}
		return strings.TrimSpace(b.String())
	}

	v, err := e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "staged", Version: ptr("2.0.0"), Rings: []string{g.Group.ID},
		DelayHours: ptr(24), SuccessRate: ptr(50)})
	if err != nil {
		t.Fatal(err)
	}
	if v.Policy != "staged" || v.Target == nil || *v.Target != "2.0.0" || v.Rollout.Version != "2.0.0" || v.Rollout.DelayHours != 24 ||
		v.Rollout.SuccessRate != 50 || rings(v) != "rolling_out:2/0/0 waiting:2/0/0" || v.Behind != 4 {
		t.Fatalf("staged: %+v %s", v, rings(v))
	}
	if r := v.Rollout.Rings[0]; r.GroupID == nil || *r.GroupID != g.Group.ID || *r.GroupName != "Test" || r.StartedAt == nil || r.DoneAt != nil {
		t.Fatalf("first ring: %+v", r)
	}
	if r := v.Rollout.Rings[1]; r.GroupID != nil || r.StartedAt != nil {
		t.Fatalf("last ring: %+v", r)
	}
	audit, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "agent_policy.set"})
	if err != nil || len(audit) != 1 || audit[0].Summary["policy"] != "staged" || audit[0].Summary["successRate"] != float64(50) {
		t.Fatalf("audit: %+v %v", audit, err)
	}
	now = now.Add(time.Minute) // past the agent API's policy cache
	if got := [4]string{checkin(test1, "1.0.0", nil), checkin(test2, "1.0.0", nil), checkin(rest1, "1.0.0", nil), checkin(rest2, "1.0.0", nil)}; got != [4]string{"2.0.0", "2.0.0", "", ""} {
		t.Fatalf("targets while the test ring rolls out: %q", got)
	}

	// One of the two test endpoints runs it (50 %), but the delay has not
	// passed: the rest waits.
	checkin(test1, "2.0.0", nil)
	e.Server.Presence().Flush(ctx)
	now = now.Add(12 * time.Hour)
	if v, err = e.Admin.AgentVersions(ctx); err != nil || rings(v) != "rolling_out:2/1/0 waiting:2/0/0" {
		t.Fatalf("before the delay: %v %s", err, rings(v))
	}
	if got := checkin(rest1, "1.0.0", nil); got != "" {
		t.Fatalf("rest before the delay: %q", got)
	}
	// After it the gate passes and the rest gets the version.
	now = now.Add(13 * time.Hour)
	if got := checkin(rest1, "1.0.0", nil); got != "2.0.0" {
		t.Fatalf("rest after the gate: %q", got)
	}
	if v, err = e.Admin.AgentVersions(ctx); err != nil || rings(v) != "done:2/1/0 rolling_out:2/0/0" || v.Rollout.Rings[1].StartedAt == nil {
		t.Fatalf("after the gate: %v %s", err, rings(v))
	}

	// Malformed bodies name their field and change nothing.
	token := tokenOf(t, e.Admin)
	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	og, err := oc.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("Theirs")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ body, field string }{
		{`{"policy":"staged","version":"3","delayHours":1,"successRate":90}`, "rings"},
		{`{"policy":"staged","version":"3","rings":[],"delayHours":1,"successRate":90}`, "rings"},
		{`{"policy":"staged","rings":["` + g.Group.ID + `"],"delayHours":1,"successRate":90}`, "version"},
		{`{"policy":"staged","version":"3","rings":["` + og.Group.ID + `"],"delayHours":1,"successRate":90}`, "rings[0]"},
		{`{"policy":"staged","version":"3","rings":["` + g.Group.ID + `","` + g.Group.ID + `"],"delayHours":1,"successRate":90}`, "rings[1]"},
		{`{"policy":"staged","version":"3","rings":["nope"],"delayHours":1,"successRate":90}`, "rings[0]"},
		{`{"policy":"staged","version":"3","rings":["` + g.Group.ID + `"],"successRate":90}`, "delayHours"},
		{`{"policy":"staged","version":"3","rings":["` + g.Group.ID + `"],"delayHours":-1,"successRate":90}`, "delayHours"},
		{`{"policy":"staged","version":"3","rings":["` + g.Group.ID + `"],"delayHours":1}`, "successRate"},
		{`{"policy":"staged","version":"3","rings":["` + g.Group.ID + `"],"delayHours":1,"successRate":101}`, "successRate"},
		{`{"policy":"pinned","version":"3","rings":["` + g.Group.ID + `"]}`, "rings"},
		{`{"policy":"latest","delayHours":1}`, "delayHours"},
		{`{"policy":"none","successRate":5}`, "successRate"},
	} {
		ans := rawCall(t, e, http.MethodPut, "/api/v1/agent-policy", token, []byte(c.body))
		if ans.status != http.StatusUnprocessableEntity || !strings.Contains(string(ans.body), `"`+c.field+`"`) {
			t.Errorf("%s: %d %s, want 422 naming %s", c.body, ans.status, ans.body, c.field)
		}
	}
	if v, err = e.Admin.AgentVersions(ctx); err != nil || v.Rollout == nil || v.Rollout.Version != "2.0.0" || rings(v) != "done:2/1/0 rolling_out:2/0/0" {
		t.Fatalf("after malformed bodies: %v %+v", err, v)
	}
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView))
	mustStatus(t, errOf(viewer.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "none"})), http.StatusForbidden, "viewer set")
	if ov, err := oc.AgentVersions(ctx); err != nil || ov.Policy != "none" || ov.Rollout != nil {
		t.Fatalf("another organization: %+v %v", ov, err)
	}

	// Set again with 100 %: the rollout starts over; a failure in the test
	// ring makes 100 % unreachable and halts it, the rest waits.
	if v, err = e.Admin.SetAgentPolicy(ctx, apiv1.AgentPolicyBody{Policy: "staged", Version: ptr("3.0.0"), Rings: []string{g.Group.ID},
		DelayHours: ptr(0), SuccessRate: ptr(100)}); err != nil || rings(v) != "rolling_out:2/0/0 waiting:2/0/0" {
		t.Fatalf("staged again: %v %s", err, rings(v))
	}
	checkin(test1, "3.0.0", nil)
	checkin(test2, "2.0.0", &agentproto.UpdateFailure{Version: "3.0.0", Reason: "the new agent does not start", At: now})
	e.Server.Presence().Flush(ctx)
	now = now.Add(time.Minute)
	if got := [3]string{checkin(test2, "2.0.0", nil), checkin(rest1, "2.0.0", nil), checkin(rest2, "1.0.0", nil)}; got != [3]string{"", "", ""} {
		t.Fatalf("targets after the halt: %q", got)
	}
	if v, err = e.Admin.AgentVersions(ctx); err != nil || rings(v) != "halted:2/1/1 waiting:2/0/0" || v.Rollout.Rings[0].HaltedAt == nil {
		t.Fatalf("halted: %v %s", err, rings(v))
	}
	now = now.Add(48 * time.Hour)
	if v, err = e.Admin.AgentVersions(ctx); err != nil || rings(v) != "halted:2/1/1 waiting:2/0/0" {
		t.Fatalf("a halt stays: %v %s", err, rings(v))
	}

	// Deleting the ring's group leaves the last ring: it starts at once
	// and, holding the failed endpoint now, halts too.
	if err := e.Admin.DeleteGroup(ctx, g.Group.ID); err != nil {
		t.Fatal(err)
	}
	if v, err = e.Admin.AgentVersions(ctx); err != nil || rings(v) != "halted:4/1/1" {
		t.Fatalf("group deleted: %v %s", err, rings(v))
	}
}
