package agentapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/agentapi"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestAgentsReadAgainSpread: a replica serves an agent it has read from
// memory for at least half of agentTTL and reads it again by agentTTL, at
// a moment of its own in between: an endpoint another replica removed
// (here the store directly, which this replica's cache does not see) is
// told to uninstall within agentTTL, never before half of it, and a fleet
// read together is not read again together.
func TestAgentsReadAgainSpread(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	const n = 24
	start := time.Now()
	at := func(d time.Duration) { e.Server.Agents().SetClock(func() time.Time { return start.Add(d) }) }
	at(0)
	agents := make([]*apitest.Agent, n)
	for i := range agents {
		agents[i] = e.Enroll(fmt.Sprint("uid-", i), fmt.Sprint("ws-", i), "windows")
		if _, ans := agents[i].Checkin(0, agentproto.CheckinRequest{}); ans.Status != 200 {
			t.Fatalf("check-in %d: %d %s", i, ans.Status, ans.Body)
		}
	}
	for _, ag := range agents {
		if err := e.Store.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "other replica", Action: "endpoint.delete",
			TargetType: "endpoint"}, e.Org.ID, ag.ID, start); err != nil {
			t.Fatal(err)
		}
	}
	told := make([]bool, n)
	checkin := func(when string) (served, uninstall int) {
		t.Helper()
		for i, ag := range agents {
			resp, ans := ag.Checkin(0, agentproto.CheckinRequest{})
			switch {
			case told[i] && ans.Status == 401:
			case !told[i] && ans.Status == 200 && resp.Uninstall:
				told[i] = true
				uninstall++
			case !told[i] && ans.Status == 200:
				served++
			default:
				t.Fatalf("%s: agent %d: %d %s", when, i, ans.Status, ans.Body)
			}
		}
		return served, uninstall
	}
	ttl := e.Server.Agents().AgentTTL()
	at(ttl/2 - time.Second)
	if served, _ := checkin("before half the TTL"); served != n {
		t.Fatalf("before half the TTL: %d of %d served from memory, want all", served, n)
	}
	// Each lasts a random time between half the TTL and all of it: at
	// three quarters, all on one side has a chance of 2 in 2^24.
	at(ttl * 3 / 4)
	if served, uninstall := checkin("at three quarters of the TTL"); served == 0 || uninstall == 0 {
		t.Fatalf("at three quarters of the TTL: %d served from memory, %d read again: want some of each", served, uninstall)
	}
	at(ttl + time.Second)
	checkin("after the TTL")
	for i := range told {
		if !told[i] {
			t.Errorf("agent %d not told to uninstall after the TTL", i)
		}
	}
}

// TestAgentTTLByEngine: on SQLite, where every change to an agent goes
// through this process (which forgets the entry at once), a cached agent
// lasts an hour at most; replicas sharing PostgreSQL keep agentTTL, so an
// endpoint another replica removed (here the store directly) is told to
// uninstall within it. An endpoint removed through the API is forgotten at
// once on both.
func TestAgentTTLByEngine(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	start := time.Now()
	e.Server.Agents().SetClock(func() time.Time { return start })
	direct := e.Enroll("uid-direct", "ws-direct", "linux")
	viaAPI := e.Enroll("uid-api", "ws-api", "linux")
	for _, ag := range []*apitest.Agent{direct, viaAPI} {
		if _, ans := ag.Checkin(0, agentproto.CheckinRequest{}); ans.Status != 200 {
			t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
		}
	}
	if err := e.Store.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: e.Org.ID, Actor: "other replica", Action: "endpoint.delete",
		TargetType: "endpoint"}, e.Org.ID, direct.ID, start); err != nil {
		t.Fatal(err)
	}
	if err := e.Admin.DeleteEndpoint(ctx, viaAPI.ID); err != nil {
		t.Fatal(err)
	}
	if resp, ans := viaAPI.Checkin(0, agentproto.CheckinRequest{}); ans.Status != 200 || !resp.Uninstall {
		t.Fatalf("removed through the API: %d %s, want the uninstall order at once", ans.Status, ans.Body)
	}
	later := agentapi.PostgresAgentTTL + time.Second
	e.Server.Agents().SetClock(func() time.Time { return start.Add(later) })
	resp, ans := direct.Checkin(0, agentproto.CheckinRequest{})
	if ans.Status != 200 {
		t.Fatalf("after %s: %d %s", later, ans.Status, ans.Body)
	}
	sqlite := e.Store.Engine() == store.SQLite
	if resp.Uninstall == sqlite {
		t.Errorf("engine %s, after %s: uninstall %v, want %v", e.Store.Engine(), later, resp.Uninstall, !sqlite)
	}
	if got := e.Server.Agents().AgentTTL(); sqlite && got != time.Hour || !sqlite && got != agentapi.PostgresAgentTTL {
		t.Errorf("engine %s: agent TTL %s", e.Store.Engine(), got)
	}
}
