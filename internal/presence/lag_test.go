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

// TestOfflineWaitsForLaggingReplica reproduces the false
// ENDPOINT_OFFLINE alerts a lagging replica caused: two replicas on one database; replica A accepts
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
	f := newOfflineFixture(t, s, now, "a1", "a2", "b1", "silent")
	ids := f.ids
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
		_, got := f.evaluate(t, when)
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

// offlineFixture is an organization with endpoints by name and a 1-minute
// ENDPOINT_OFFLINE rule.
type offlineFixture struct {
	s         *store.Store
	now       time.Time
	org, rule string
	ids       map[string]string
}

func newOfflineFixture(t *testing.T, s *store.Store, now time.Time, names ...string) *offlineFixture {
	t.Helper()
	ctx := context.Background()
	o, err := s.CreateOrg(ctx, "Lag", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	f := &offlineFixture{s: s, now: now, org: o.ID, ids: map[string]string{}}
	for _, name := range names {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: "m-" + name, Hostname: name,
			Platform: "linux", SecretHash: store.NewID()}, now.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		f.ids[name] = id
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
	f.rule = rule.ID
	return f
}

// evaluate evaluates the alerts at when and answers the time the offline
// conditions were evaluated at and the endpoints raised offline so far.
func (f *offlineFixture) evaluate(t *testing.T, when time.Time) (time.Time, map[string]bool) {
	t.Helper()
	ctx := context.Background()
	st, err := f.s.EvaluateAlerts(ctx, when, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("evaluated at %v: offline at %v, %d raised", when.Sub(f.now), st.OfflineAt.Sub(f.now), st.Raised)
	evs, err := f.s.ListAlertEvents(ctx, f.org, f.rule, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, ev := range evs {
		for name, id := range f.ids {
			if ev.EndpointID != nil && *ev.EndpointID == id {
				got[name] = true
			}
		}
	}
	return st.OfflineAt, got
}

// TestWatermarkKeptLocal: a replica that keeps its watermark in memory
// (the one process of a SQLite database) writes no watermark row, neither
// with its check-ins nor when it has none to write, and still holds its
// process's offline evaluation back to its oldest unwritten check-in, as a
// published watermark does. Another process on the database (a second
// store) finds no row. At its start the replica forgets the rows earlier
// processes left; once it stopped, nothing waits for it.
func TestWatermarkKeptLocal(t *testing.T) {
	t.Parallel()
	s, u := storetest.OpenURL(t)
	ctx := context.Background()
	other, err := store.Open(ctx, u, "", store.Options{MaxConns: 2, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	rowless := func() {
		t.Helper()
		if through, ok, err := other.PresenceWatermark(ctx, time.Now()); err != nil || ok {
			t.Fatalf("another process finds a watermark row (%v, %v, %v), want none", through, ok, err)
		}
	}
	now := time.Now().Truncate(time.Millisecond)
	f := newOfflineFixture(t, s, now, "a1", "silent")
	sec := func(n int) time.Time { return now.Add(time.Duration(n) * time.Second) }
	at := now
	h := New(s, 0)
	h.SetClock(func() time.Time { return at })
	h.KeepWatermarkLocal()

	at = sec(-100)
	h.Seen(store.Checkin{EndpointID: f.ids["a1"], At: at})
	h.Seen(store.Checkin{EndpointID: f.ids["silent"], At: at})
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rowless()
	if through, ok, err := s.PresenceWatermark(ctx, now); err != nil || !ok || !through.Equal(now) {
		t.Fatalf("with every check-in written: watermark %v, %v (%v), want now", through, ok, err)
	}

	// a1's check-in of 80 seconds ago is being written, slowly; that of
	// 30 seconds ago waits for the next flush.
	at = sec(-80)
	h.Seen(store.Checkin{EndpointID: f.ids["a1"], At: at})
	held, release := make(chan struct{}), make(chan struct{})
	h.SetBeforeWrite(func(context.Context) { close(held); <-release })
	flushed := make(chan error, 1)
	go func() { flushed <- h.Flush(ctx) }()
	<-held
	h.SetBeforeWrite(nil)
	at = sec(-30)
	h.Seen(store.Checkin{EndpointID: f.ids["a1"], At: at})
	if offlineAt, got := f.evaluate(t, now); !offlineAt.Equal(sec(-80)) || len(got) != 0 {
		t.Fatalf("while a check-in of 80 s ago is written: offline evaluated at %v, raised %v; want %v and none", offlineAt.Sub(now), got, sec(-80).Sub(now))
	}
	close(release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if offlineAt, got := f.evaluate(t, now); !offlineAt.Equal(sec(-30)) || fmt.Sprint(got) != "map[silent:true]" {
		t.Fatalf("with a check-in of 30 s ago unwritten: offline evaluated at %v, raised %v; want %v and silent only", offlineAt.Sub(now), got, sec(-30).Sub(now))
	}
	at = now
	if err := h.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Flush(ctx); err != nil { // nothing to write
		t.Fatal(err)
	}
	rowless()

	// An earlier process left its row; this one forgets it when it starts,
	// and takes its own watermark back when it stops.
	if err := s.PublishPresenceWatermark(ctx, "earlier", sec(-10), time.Now()); err != nil {
		t.Fatal(err)
	}
	if through, ok, err := s.PresenceWatermark(ctx, now); err != nil || !ok || !through.Equal(sec(-10)) {
		t.Fatalf("with an earlier process's row: watermark %v, %v (%v), want %v", through, ok, err, sec(-10))
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { h.Run(runCtx); close(done) }()
	for {
		if _, ok, err := other.PresenceWatermark(ctx, time.Now()); err != nil {
			t.Fatal(err)
		} else if !ok {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-done
	if through, ok, err := s.PresenceWatermark(ctx, now); err != nil || ok {
		t.Fatalf("after the replica stopped: watermark %v, %v (%v), want none", through, ok, err)
	}
}
