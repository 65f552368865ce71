package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestStoppedEndpointIsDisconnected: an endpoint whose agent said it
// stops after its last check-in is disconnected wherever the store
// answers a status (the endpoint, the list's filters and order, the fleet
// summary, the reports, the sweep), though seen within the intervals; a
// check-in older than the stop, written after it, changes nothing; a later
// one makes it connected. Only the secret's endpoint is marked; an unknown
// or removed one's is answered false.
func TestStoppedEndpointIsDisconnected(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	o := newOrg(t, s, "stopping")
	secrets := map[string]string{}
	var ids []string
	for _, name := range []string{"a-stops", "b-runs"} {
		secret := store.NewID()
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: name, Hostname: name, Platform: "linux", SecretHash: secret}, t0)
		if err != nil {
			t.Fatal(err)
		}
		secrets[id] = secret
		ids = append(ids, id)
	}
	a, b := ids[0], ids[1]
	checkin := func(id string, at time.Time) {
		t.Helper()
		if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: id, At: at}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	now := t0.Add(10 * time.Minute)
	since := now.Add(-3 * time.Minute) // the interval rule: both seen since
	checkin(a, now.Add(-2*time.Second))
	checkin(b, now.Add(-2*time.Second))
	if _, err := s.SweepStatus(ctx, since, now); err != nil {
		t.Fatal(err)
	}

	statuses := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, id := range ids {
			d, err := s.GetEndpoint(ctx, o.ID, id, since)
			if err != nil {
				t.Fatal(err)
			}
			out[id] = d.Status
		}
		return out
	}
	find := func(q store.EndpointQuery) []string {
		t.Helper()
		q.OrgID, q.ConnectedSince, q.Now = o.ID, since, now
		list, _, err := s.FindEndpoints(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range list {
			out = append(out, e.Hostname+"="+e.Status)
		}
		return out
	}
	connected := func() int {
		t.Helper()
		f, err := s.FleetSummary(ctx, o.ID, since)
		if err != nil {
			t.Fatal(err)
		}
		return f.Connected
	}
	report := func(source string) []string {
		t.Helper()
		var out []string
		for r, err := range s.ReportRows(ctx, source, store.ReportParams{OrgID: o.ID, Now: now, ConnectedSince: since}) {
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range r.Values {
				if v == "connected" || v == "disconnected" {
					out = append(out, v.(string))
				}
			}
			if source == "offline" {
				out = append(out, r.Values[0].(string))
			}
		}
		return out
	}
	if got := statuses(); got[a] != "connected" || got[b] != "connected" {
		t.Fatalf("before: %v", got)
	}

	// Unknown secret: nothing.
	if ok, err := s.RecordAgentStopping(ctx, "no-such-secret", now); err != nil || ok {
		t.Fatalf("unknown secret: %v %v", ok, err)
	}
	if ok, err := s.RecordAgentStopping(ctx, secrets[a], now.Add(-time.Second)); err != nil || !ok {
		t.Fatalf("stopping: %v %v", ok, err)
	}
	// A check-in accepted before the stop, written after it.
	checkin(a, now.Add(-1500*time.Millisecond))
	if got := statuses(); got[a] != "disconnected" || got[b] != "connected" {
		t.Fatalf("after the stop: %v", got)
	}
	if got := find(store.EndpointQuery{Status: "disconnected"}); !slices.Equal(got, []string{"a-stops=disconnected"}) {
		t.Errorf("status=disconnected: %v", got)
	}
	if got := find(store.EndpointQuery{Status: "connected"}); !slices.Equal(got, []string{"b-runs=connected"}) {
		t.Errorf("status=connected: %v", got)
	}
	// Ordered by status: the stopped one with the disconnected, though
	// seen later.
	checkin(b, now.Add(-1800*time.Millisecond))
	if got := find(store.EndpointQuery{Sort: "status"}); !slices.Equal(got, []string{"a-stops=disconnected", "b-runs=connected"}) {
		t.Errorf("sort=status: %v", got)
	}
	if got := find(store.EndpointQuery{Sort: "status", Desc: true}); !slices.Equal(got, []string{"b-runs=connected", "a-stops=disconnected"}) {
		t.Errorf("sort=status desc: %v", got)
	}
	if n := connected(); n != 1 {
		t.Errorf("fleet summary: %d connected, want 1", n)
	}
	if got := report("endpoints"); !slices.Equal(got, []string{"disconnected", "connected"}) {
		t.Errorf("endpoints report statuses: %v", got)
	}
	if got := report("offline"); !slices.Equal(got, []string{"a-stops"}) {
		t.Errorf("offline report: %v", got)
	}
	changes, err := s.SweepStatus(ctx, since, now)
	if err != nil || len(changes) != 1 || changes[0].EndpointID != a || changes[0].Connected {
		t.Fatalf("sweep after the stop: %+v %v", changes, err)
	}

	// The next check-in.
	checkin(a, now)
	if got := statuses(); got[a] != "connected" {
		t.Fatalf("after the next check-in: %v", got)
	}
	if n := connected(); n != 2 {
		t.Errorf("fleet summary after the check-in: %d connected, want 2", n)
	}
	changes, err = s.SweepStatus(ctx, since, now)
	if err != nil || len(changes) != 1 || changes[0].EndpointID != a || !changes[0].Connected {
		t.Fatalf("sweep after the next check-in: %+v %v", changes, err)
	}

	// Removed: false, and nothing else is marked.
	if err := s.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "endpoint.delete", TargetType: "endpoint"}, o.ID, b, now); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.RecordAgentStopping(ctx, secrets[b], now); err != nil || ok {
		t.Fatalf("removed endpoint: %v %v", ok, err)
	}
	if d, err := s.GetEndpoint(ctx, o.ID, a, since); err != nil || d.Status != "connected" {
		t.Fatal("a removed endpoint's stop marked another")
	}
}
