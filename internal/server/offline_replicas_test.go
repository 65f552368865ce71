package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/server"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/worker"
)

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// TestOfflineAcrossReplicasWithLaggingFlush reproduces false
// ENDPOINT_OFFLINE alerts of a lagging replica, with three replicas on one PostgreSQL database:
// agents check in every 20 seconds, two with replica A, one with B; A's
// flush is held (as when its database gives it no transaction) for 100
// seconds, while C evaluates a 1-minute offline rule. last_seen_at of A's
// agents is then 100 seconds old, which raised them offline; with the
// replicas' presence watermarks nothing is raised while A lags, nor after
// its writes land, and offline is raised for all three once they really
// stop checking in.
func TestOfflineAcrossReplicasWithLaggingFlush(t *testing.T) {
	replicasOnPostgres(t)
	ctx := context.Background()
	s1, url := storetest.OpenURL(t)
	clock := &testClock{t: time.Now().Truncate(time.Millisecond)}
	type replica struct {
		srv *server.Server
		url string
		s   *store.Store
	}
	var reps []replica
	for i := range 3 {
		s := s1
		if i > 0 {
			var err error
			if s, err = store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
		}
		srv := server.New(config.Config{CheckinInterval: 20 * time.Second}, s)
		srv.Agents().SetClock(clock.Now)
		ts := httptest.NewServer(srv.Handler())
		t.Cleanup(func() { ts.Close(); srv.Close() })
		reps = append(reps, replica{srv: srv, url: ts.URL, s: s})
	}
	a, b, c := reps[0], reps[1], reps[2]

	org, err := admin.CreateOrg(ctx, s1, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	one := 1
	in := alerts.Rule{Name: "offline", Trigger: alerts.EndpointOffline, Threshold: &one, EmailTo: "oncall@example.com"}
	if err := in.Check(); err != nil {
		t.Fatal(err)
	}
	rule, err := s1.CreateAlertRule(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, org.ID, in, clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	tok, err := admin.CreateEnrollToken(ctx, s1, "test", org.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	type agent struct {
		secret string
		via    replica
	}
	var agents []agent
	for i, via := range []replica{a, a, b} {
		name := fmt.Sprintf("lag-%d", i)
		code, body := agentCall(t, via.url, "POST", agentproto.PathEnroll, "", agentproto.EnrollRequest{EnrollToken: tok.Token, MachineUID: name,
			Hostname: name, Platform: "linux", OS: "Debian", OSVersion: "12", Arch: "amd64", AgentVersion: "1.0.0"})
		if code != 200 {
			t.Fatalf("enroll: %d %s", code, body)
		}
		var en agentproto.EnrollResponse
		json.Unmarshal(body, &en)
		if code, body := agentCall(t, via.url, "PUT", agentproto.PathInventory, en.AgentSecret, apitest.Sample(name, "linux"),
			agentproto.HeaderInventoryHash, "h1"); code != 200 {
			t.Fatalf("inventory: %d %s", code, body)
		}
		agents = append(agents, agent{secret: en.AgentSecret, via: via})
	}
	checkins := func() {
		t.Helper()
		for _, ag := range agents {
			if code, body := agentCall(t, ag.via.url, "POST", agentproto.PathCheckin, ag.secret, agentproto.CheckinRequest{InventoryHash: "h1"}); code != 200 {
				t.Fatalf("check-in: %d %s", code, body)
			}
		}
	}
	flush := func(rs ...replica) {
		t.Helper()
		for _, r := range rs {
			if err := r.srv.FlushCheckins(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	eval := &worker.AlertEvaluator{Store: c.s, DisconnectedAfter: time.Minute, Now: clock.Now}
	raised := func() int {
		t.Helper()
		if _, err := eval.EvaluateOnce(ctx); err != nil {
			t.Fatal(err)
		}
		evs, err := s1.ListAlertEvents(ctx, org.ID, rule.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(evs)
	}

	checkins()
	flush(a, b, c)
	// A's next flush is held; its agents keep checking in with it.
	held, release := make(chan struct{}), make(chan struct{})
	a.srv.Presence().SetBeforeWrite(func(context.Context) { close(held); <-release })
	flushed := make(chan error, 1)
	for step := range 5 {
		clock.Add(20 * time.Second)
		checkins()
		if step == 0 {
			go func() { flushed <- a.srv.FlushCheckins(ctx) }()
			<-held
			a.srv.Presence().SetBeforeWrite(nil)
		}
		flush(b, c)
		if n := raised(); n != 0 {
			t.Fatalf("after %ds with replica A's writes held: %d offline events for endpoints that checked in 20s ago", 20*(step+1), n)
		}
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	flush(a, b, c)
	if n := raised(); n != 0 {
		t.Fatalf("after replica A's writes landed: %d offline events", n)
	}
	// Silence: offline is still raised, for every endpoint, by any replica.
	clock.Add(2 * time.Minute)
	flush(a, b, c)
	if n := raised(); n != 3 {
		t.Fatalf("after two silent minutes: %d offline events, want 3", n)
	}
}
