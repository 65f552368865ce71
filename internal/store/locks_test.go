package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
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
// took key-share locks in scan order, and the two deadlocked (issue 22);
// neither may fail now, and both must have done their work.
func TestMatcherAndRebootTrackerTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	o, err := s.CreateOrg(ctx, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
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
		if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: ids[i], At: now, PendingReboot: true}}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("endpoints ready")
	rounds := 10
	if s.Engine() == store.Postgres {
		rounds = 60
	}
	for round := range rounds {
		if err := s.ForgetRebootsForTest(ctx); err != nil {
			t.Fatal(err)
		}
		// Alternate between one finding per endpoint and none, so that
		// every round writes.
		results := make([]store.MatchResult, endpoints)
		for i, id := range ids {
			results[i] = store.MatchResult{EndpointID: id, OrgID: o.ID}
			if round%2 == 0 {
				results[i].Findings = []match.Finding{{CVEID: "CVE-2024-0001", Software: "Google Chrome", Version: "120.0", Source: "google:chrome"}}
			}
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		var trackErr, matchErr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			_, trackErr = s.EvaluateAlerts(ctx, now, time.Hour, nil)
		}()
		// The matcher starts anywhere in the tracker's run: the rounds
		// try the interleavings (this pause is no condition of the
		// outcome, which must be the same for every pause).
		pause := time.Duration(rand.IntN(30)) * time.Millisecond
		go func() {
			defer wg.Done()
			<-start
			time.Sleep(pause)
			_, matchErr = s.SaveMatchResults(ctx, results, now)
		}()
		close(start)
		wg.Wait()
		if trackErr != nil || matchErr != nil {
			t.Fatalf("round %d: reboot tracker: %v; matcher: %v", round, trackErr, matchErr)
		}
		n, err := s.TrackedRebootsForTest(ctx)
		if err != nil || n != endpoints {
			t.Fatalf("round %d: %d endpoints tracked with a pending reboot, want %d (%v)", round, n, endpoints, err)
		}
		want := 0
		if round%2 == 0 {
			want = 1
		}
		for _, id := range []string{ids[0], ids[endpoints/2], ids[endpoints-1]} {
			got, err := s.EndpointFindings(ctx, o.ID, id)
			if err != nil || len(got) != want {
				t.Fatalf("round %d: endpoint %s has %d findings, want %d (%v)", round, id, len(got), want, err)
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
	o, err := s.CreateOrg(ctx, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: "m", Hostname: "h", Platform: "windows", SecretHash: "s"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCheckins(ctx, []store.Checkin{{EndpointID: id, At: t0}}); err != nil {
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
