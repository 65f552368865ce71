package api_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentdist"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
)

// TestAgentTargetFollowsPolicy: the check-in answer's agentTarget is the
// organization's policy (none, latest, a pinned version), read again after
// the replica's short cache; another organization's policy is its own; a
// malformed policy is refused and changes nothing.
func TestAgentTargetFollowsPolicy(t *testing.T) {
	// A release newer than the agent's 1.0.0: "latest" has somewhere to go
	// (an agent as new as every release is not told latest).
	e, ctx, now := withRelease(t, "1.1.0")
	ag := e.Enroll("uid-pol", "WS-POL", "linux")
	req := agentproto.CheckinRequest{AgentVersion: "1.0.0", IPAddresses: []string{}}
	target := func() string { t.Helper(); return checkinAs(t, ag, req).AgentTarget }
	audit := func(org string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: org, Actor: "test", Action: "agent.policy", TargetType: "org"}
	}
	if got := target(); got != "" {
		t.Fatalf("without a policy: %q", got)
	}
	if err := e.Store.SetAgentPolicy(ctx, audit(e.Org.ID), e.Org.ID, store.AgentPolicy{Policy: store.AgentPolicyLatest}, *now); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute) // past the cache
	if got := target(); got != "latest" {
		t.Fatalf("latest: %q", got)
	}
	for _, bad := range []store.AgentPolicy{{Policy: store.AgentPolicyPinned}, {Policy: store.AgentPolicyLatest, Version: "2"}, {Policy: "sometimes"}} {
		if err := e.Store.SetAgentPolicy(ctx, audit(e.Org.ID), e.Org.ID, bad, *now); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	other := e.NewOrg("Other")
	if err := e.Store.SetAgentPolicy(ctx, audit(other.ID), other.ID, store.AgentPolicy{Policy: store.AgentPolicyPinned, Version: "9.9.9"}, *now); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute)
	if got := target(); got != "latest" {
		t.Fatalf("after a bad policy and another organization's: %q", got)
	}
	if err := e.Store.SetAgentPolicy(ctx, audit(e.Org.ID), e.Org.ID, store.AgentPolicy{Policy: store.AgentPolicyPinned, Version: "2.0.0"}, *now); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute)
	if got := target(); got != "2.0.0" {
		t.Fatalf("pinned: %q", got)
	}
	if err := e.Store.SetAgentPolicy(ctx, audit(e.Org.ID), e.Org.ID, store.AgentPolicy{}, *now); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(time.Minute)
	if got := target(); got != "" {
		t.Fatalf("policy removed: %q", got)
	}
}

// withRelease starts a server for t (parallel) whose agent folder has
// /bin/true (any linux/amd64 program passes for the agent here) as the
// linux/amd64 release version, its signature unchecked (no keys given);
// the agent API's clock stands at *now, which the test moves.
func withRelease(t *testing.T, version string) (*apitest.Env, context.Context, *time.Time) {
	t.Helper()
	dir := t.TempDir()
	e, ctx := apitest.NewParallel(t, func(c *config.Config) { c.AgentDir = dir })
	now := time.Now()
	e.Server.Agents().SetClock(func() time.Time { return now })
	dist, err := agentdist.NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := agentdist.Platform{OS: "linux", Arch: "amd64"}
	if _, err := dist.Publish("/bin/true", p); err != nil {
		t.Fatal(err)
	}
	if _, err := dist.SetRelease(p, version, "c2ln", nil); err != nil {
		t.Fatal(err)
	}
	return e, ctx, &now
}

// checkinAs checks a in with req and answers the check-in's answer.
func checkinAs(t *testing.T, a *apitest.Agent, req agentproto.CheckinRequest) agentproto.CheckinResponse {
	t.Helper()
	r, ans := a.Checkin(0, req)
	if ans.Status != http.StatusOK {
		t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
	}
	return r
}
