package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestPresenceMigration: migration 038 carries every endpoint's last-seen
// time and recorded status (and when it changed) from the endpoints rows
// into endpoint_presence when it upgrades a database with endpoints in it:
// the API's view, the offline report and the next status sweep are the
// same before and after.
func TestPresenceMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	t0 := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	org, ids := enrollN(t, s, "upgrade", 4, t0)
	// 0 and 1 check in later; 2 and 3 not, and the sweep records them
	// disconnected; 3 comes back, not swept yet.
	t1 := t0.Add(10 * time.Minute)
	if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: ids[0], At: t1}, {EndpointID: ids[1], At: t1.Add(time.Second)}}, nil); err != nil {
		t.Fatal(err)
	}
	if changes, err := s.SweepStatus(ctx, t1.Add(-time.Minute), t1); err != nil || len(changes) != 2 {
		t.Fatalf("sweep before: %v %v", changes, err)
	}
	t2 := t1.Add(5 * time.Minute)
	if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: ids[3], At: t2}}, nil); err != nil {
		t.Fatal(err)
	}
	view := func() string {
		t.Helper()
		list, total, err := s.FindEndpoints(ctx, store.EndpointQuery{OrgID: org.ID, ConnectedSince: t1.Add(-time.Minute), Sort: "lastSeen"})
		if err != nil {
			t.Fatal(err)
		}
		out := fmt.Sprint(total, ":")
		for _, e := range list {
			out += fmt.Sprintf(" %s %s %s;", e.Name, e.Status, e.LastSeenAt.UTC().Format(time.TimeOnly))
		}
		offline, _, err := s.FindEndpoints(ctx, store.EndpointQuery{OrgID: org.ID, ConnectedSince: t1.Add(-time.Minute), Status: "disconnected"})
		if err != nil {
			t.Fatal(err)
		}
		out += fmt.Sprint(" offline ", len(offline))
		return out
	}
	want := "4: upgrade-2 disconnected 08:00:00; upgrade-0 connected 08:10:00; upgrade-1 connected 08:10:01; upgrade-3 connected 08:15:00; offline 1"
	upgradeKeeps(t, s, s.UndoMigration038ForTest, view, want)
	// The recorded statuses came along: the next sweep records endpoint 3
	// back online (it went offline at t1) and nothing else.
	changes, err := s.SweepStatus(ctx, t1.Add(-time.Minute), t2)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].EndpointID != ids[3] || !changes[0].Connected || changes[0].Since == nil || !changes[0].Since.Equal(t1) {
		t.Fatalf("sweep after the upgrade: %+v", changes)
	}
}
