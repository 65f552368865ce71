package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/vulns/match"
)

// TestMatcherAndRebootTrackerTogether runs the vulnerability matcher's
// write (SaveMatchResults) and the reboot tracker (the first step of
// EvaluateAlerts) at the same moment, many times, over endpoints whose rows
// were rewritten in a shuffled order, so that the tracker's scan of
// endpoints meets them out of id order. On PostgreSQL the matcher locked
// the rows FOR UPDATE in id order while the tracker's foreign-key checks
// took key-share locks in scan order, and the two deadlocked;
// neither may fail now, and both must have done their work.
func TestMatcherAndRebootTrackerTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	now := time.Now()
	const endpoints = 1500
	ids, err := s.BulkEndpointsForTest(ctx, o.ID, endpoints, now)
	if err != nil {
		t.Fatal(err)
	}
	// One check-in per transaction, in a shuffled order: on PostgreSQL each
	// update writes a new row version, so the table's physical order (the
	// tracker's scan order) no longer follows the ids, as in a live fleet.
	order := rand.Perm(endpoints)
	for _, i := range order {
		if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: ids[i], At: now, PendingReboot: true}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	rounds := 5
	if s.Engine() == store.Postgres {
		rounds = 30
	}
	finding := []match.Finding{{CVEID: "CVE-2024-0001", Software: "Google Chrome", Version: "120.0", Source: "google:chrome"}}
	for round := range rounds {
		if err := s.ForgetRebootsForTest(ctx); err != nil {
			t.Fatal(err)
		}
		// The tracker runs once; meanwhile the matcher saves results in
		// batches of 50 endpoints, as its worker does, over and over until
		// the tracker is done (and at least once over the fleet), so that
		// some batch takes its locks while the tracker's foreign-key checks
		// take theirs. Each pass alternates between one finding per
		// endpoint and none, so that every batch writes.
		trackDone := make(chan error, 1)
		go func() {
			_, err := s.EvaluateAlerts(ctx, now, time.Hour, nil)
			trackDone <- err
		}()
		var trackErr error
		tracked := false
		for pass := 0; ; pass++ {
			for start := 0; start < endpoints; start += 50 {
				batch := make([]store.MatchResult, 0, 50)
				for _, id := range ids[start:min(start+50, endpoints)] {
					r := store.MatchResult{EndpointID: id, OrgID: o.ID}
					if pass%2 == 0 {
						r.Findings = finding
					}
					batch = append(batch, r)
				}
				if _, err := s.SaveMatchResults(ctx, batch, now); err != nil {
					t.Fatalf("round %d: matcher: %v", round, err)
				}
			}
			if !tracked {
				select {
				case trackErr = <-trackDone:
					tracked = true
				default:
				}
			}
			if tracked && pass%2 == 0 {
				break
			}
		}
		if trackErr != nil {
			t.Fatalf("round %d: reboot tracker: %v", round, trackErr)
		}
		n, err := s.TrackedRebootsForTest(ctx)
		if err != nil || n != endpoints {
			t.Fatalf("round %d: %d endpoints tracked with a pending reboot, want %d (%v)", round, n, endpoints, err)
		}
		for _, id := range []string{ids[0], ids[endpoints/2], ids[endpoints-1]} {
			got, err := s.EndpointFindings(ctx, o.ID, id)
			if err != nil || len(got) != 1 {
				t.Fatalf("round %d: endpoint %s has %d findings, want 1 (%v)", round, id, len(got), err)
			}
		}
	}
}

// TestSweepNotHeldByKeyShare: on PostgreSQL the status sweep skips the
// endpoint rows another transaction locks, but a key-share lock (a
// foreign-key check of a row that references the endpoint: the reboot
// tracker, group members, inventory rows) does not stop it, since it takes
// the lock its UPDATE needs (FOR NO KEY UPDATE), not FOR UPDATE. Before,
// the transition was missed for as long as such a lock was held, and the
// key-share taker waited for the sweep.
func TestSweepNotHeldByKeyShare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	if s.Engine() != store.Postgres {
		t.Skip("row locks are PostgreSQL's; SQLite has one writer")
	}
	o := newOrg(t, s, "Acme")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: "m", Hostname: "h", Platform: "windows", SecretHash: "s"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: id, At: t0}}, nil); err != nil {
		t.Fatal(err)
	}
	// Connected first (seen after the cutoff), so that the sweep under test
	// records disconnected.
	if _, err := s.SweepStatus(ctx, t0.Add(-time.Minute), t0); err != nil {
		t.Fatal(err)
	}
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- s.KeyShareForTest(ctx, id, held, release) }()
	select {
	case <-held:
	case err := <-done:
		t.Fatal(err)
	}
	changes, err := s.SweepStatus(ctx, t0.Add(time.Hour), t0.Add(time.Hour))
	close(release)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(changes) != 1 || changes[0].EndpointID != id || changes[0].Connected {
		t.Fatalf("sweep with a key share held: %s", fmt.Sprint(changes))
	}
}
