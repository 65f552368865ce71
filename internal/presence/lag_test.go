package presence

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestOfflineWaitsForLaggingReplica reproduces issue 21's false
// ENDPOINT_OFFLINE alerts: two replicas on one database; replica A accepts
// check-ins of two endpoints every 20 seconds but its flush cannot write
// them (held, as a database that gives it no transaction would), while
// replica B evaluates a 1-minute offline rule. Judged by last_seen_at
// alone, A's endpoints were last written 100 seconds ago and were raised
// offline although A heard from them 10 seconds ago. With A's watermark the evaluation looks no
// later than A's oldest unwritten check-in: nothing is raised for them (an
// endpoint nobody heard from waits too), and once A's flush lands the truly
// silent endpoint is raised, and only it. A replica that died (heartbeat
// older than store.PresenceStaleAfter) holds nothing back.
func TestOfflineWaitsForLaggingReplica(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	o, err := s.CreateOrg(ctx, "Lag", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, name := range []string{"a1", "a2", "b1", "silent"} {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: "m-" + name, Hostname: name,
			Platform: "linux", SecretHash: store.NewID()}, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	one := 1
	in := alerts.Rule{Name: "offline", Trigger: alerts.EndpointOffline, Threshold: &one, EmailTo: "oncall@example.com"}
	if err := in.Check(); err != nil {
		t.Fatal(err)
	}
	rule, err := s.CreateAlertRule(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, o.ID, in, now.Add(-30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	at := now
	a, b := New(s, 0), New(s, 0)
	for _, h := range []*Hub{a, b} {
		h.SetClock(func() time.Time { return at })
	}
	sec := func(n int) time.Time { return now.Add(time.Duration(n) * time.Second) }
	// 100 seconds ago every endpoint checked in and was written.
	at = sec(-100)
	for _, name := range []string{"a1", "a2", "silent"} {
		a.Seen(store.Checkin{EndpointID: ids[name], At: at})
	}
	b.Seen(store.Checkin{EndpointID: ids["b1"], At: at})
	for _, h := range []*Hub{a, b} {
		if err := h.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// From 90 seconds ago a1 and a2 check in with A every 20 seconds, and
	// A's flush of the first of those is held; b1 checks in with B, which
	// writes. silent checks in no more.
	at = sec(-90)
	a.Seen(store.Checkin{EndpointID: ids["a1"], At: at})
	a.Seen(store.Checkin{EndpointID: ids["a2"], At: at})
	held, release := make(chan struct{}), make(chan struct{})
	a.SetBeforeWrite(func(context.Context) { close(held); <-release })
	flushed := make(chan error, 1)
	go func() { flushed <- a.Flush(ctx) }()
	<-held
	a.SetBeforeWrite(nil)
	for n := -70; n < 0; n += 20 {
		at = sec(n)
		a.Seen(store.Checkin{EndpointID: ids["a1"], At: at})
		a.Seen(store.Checkin{EndpointID: ids["a2"], At: at})
		b.Seen(store.Checkin{EndpointID: ids["b1"], At: at})
		if err := b.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	at = now
	if err := b.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if lag, n := a.WriteLag(now); lag != 90*time.Second || n != 2 {
		t.Errorf("replica A's write lag %v with %d endpoints waiting, want 1m30s and 2", lag, n)
	}

	offline := func(when time.Time) map[string]bool {
		t.Helper()
		st, err := s.EvaluateAlerts(ctx, when, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("evaluated at %v: offline at %v, %d raised", when.Sub(now), st.OfflineAt.Sub(now), st.Raised)
		evs, err := s.ListAlertEvents(ctx, o.ID, rule.ID, 100)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, ev := range evs {
			for name, id := range ids {
				if ev.EndpointID != nil && *ev.EndpointID == id {
					got[name] = true
				}
			}
		}
		return got
	}
	st, err := s.EvaluateAlerts(ctx, now, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := sec(-100); !st.OfflineAt.Equal(want) {
		t.Errorf("offline evaluated at %v, want replica A's watermark %v", st.OfflineAt, want)
	}
	if got := offline(now); len(got) != 0 {
		t.Fatalf("offline raised while replica A had accepted check-ins unwritten: %v", got)
	}

	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	// The held batch is written; the later check-ins still wait.
	if got := offline(now); len(got) != 0 {
		t.Fatalf("offline raised while replica A had check-ins of 70 seconds ago unwritten: %v", got)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := offline(now); fmt.Sprint(got) != "map[silent:true]" {
		t.Fatalf("offline after replica A's flush: %v, want silent only", got)
	}
	acc, wr := a.Counts()
	if acc != 13 || wr != 7 {
		// Four check-ins of each endpoint: the last one is written.
		t.Errorf("replica A counted %d accepted, %d written; want 13, 7", acc, wr)
	}

	// A replica that died with a check-in unwritten holds the evaluation
	// back until its heartbeat is stale.
	dead := New(s, 0)
	dead.SetClock(func() time.Time { return now })
	dead.SetBeforeWrite(func(context.Context) {})
	dead.Seen(store.Checkin{EndpointID: ids["b1"], At: sec(-5)})
	if err := dead.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	later := now.Add(store.PresenceStaleAfter / 2)
	if st, err := s.EvaluateAlerts(ctx, later, time.Minute, nil); err != nil || !st.OfflineAt.Equal(sec(-5)) {
		t.Errorf("with a live replica's watermark at %v: evaluated at %v (%v)", sec(-5), st.OfflineAt, err)
	}
	stale := now.Add(store.PresenceStaleAfter + time.Minute)
	if st, err := s.EvaluateAlerts(ctx, stale, time.Minute, nil); err != nil || !st.OfflineAt.Equal(stale) {
		t.Errorf("past the dead replica's heartbeat: evaluated at %v (%v)", st.OfflineAt, err)
	}
}
