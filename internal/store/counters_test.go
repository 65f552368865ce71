package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestConcurrentWritersKeepCounts runs three replicas' writers on one
// organization at once: enrollments, inventory batches whose software and
// updates overlap in random orders, check-in flushes, and a group whose rule
// changes in the middle. On PostgreSQL they run side by side (the group
// lock is shared by endpoint changes); afterwards every counter equals the
// rows it counts, no write failed, and the group holds exactly the
// endpoints its final rule selects.
func TestConcurrentWritersKeepCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s1, url := storetest.OpenURL(t)
	replicas := []*store.Store{s1}
	for range 2 {
		s, err := store.Open(ctx, url, "", store.Options{MaxConns: 8, SecretKey: storetest.SecretKey})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		replicas = append(replicas, s)
	}
	o := newOrg(t, s1, "Acme")
	rule := func(prefix string) *[]groups.Rule {
		return &[]groups.Rule{{Field: "hostname", Op: groups.OpStartsWith, Value: prefix}}
	}
	name, matchAll := "Prefixed", true
	g, err := s1.CreateGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.create", TargetType: "group"}, o.ID,
		store.GroupChange{Name: &name, MatchAll: &matchAll, Rules: rule("a-")}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != groups.Dynamic {
		t.Fatalf("group kind %s", g.Kind)
	}

	const perReplica = 30
	type agent struct {
		id   string
		host string
	}
	agents := make([][]agent, len(replicas))
	var wg sync.WaitGroup
	errs := make(chan error, 10000)
	for r, s := range replicas {
		wg.Go(func() {
			for i := range perReplica {
				host := fmt.Sprintf("x-%d-%d", r, i)
				id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: host, Hostname: host, Platform: "linux",
					SecretHash: "s-" + host}, time.Now())
				if err != nil {
					errs <- fmt.Errorf("enroll %s: %w", host, err)
					return
				}
				agents[r] = append(agents[r], agent{id: id, host: host})
			}
		})
	}
	wg.Wait()

	// inventory makes a document of popular and rare titles and update keys
	// in a random order, renamed to host.
	inventoryOf := func(rng *rand.Rand, host string) inventory.Normalized {
		doc := agentproto.Inventory{System: agentproto.System{Hostname: host}}
		for _, n := range rng.Perm(40)[:25] {
			v := fmt.Sprintf("%d.%d", n, rng.IntN(3))
			doc.Software = append(doc.Software, agentproto.Software{Name: fmt.Sprintf("title-%02d", n), Version: &v})
		}
		for _, n := range rng.Perm(30)[:12] {
			sev := "Important"
			pkg := fmt.Sprintf("pkg-%02d", n)
			latest := fmt.Sprintf("%d.1", n)
			doc.Updates = append(doc.Updates, agentproto.Update{Title: "Update " + pkg, Severity: &sev, Source: "OS - Mandatory",
				Categories: []string{"Security Updates"}, PackageName: &pkg, LatestVersion: &latest})
		}
		norm, err := inventory.Check(&doc, "linux", "debian", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return norm
	}
	final := map[string]string{} // endpoint id -> hostname after the last round
	var finalMu sync.Mutex
	for round := range 3 {
		for r, s := range replicas {
			ing := s.NewIngester()
			for i, a := range agents[r] {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(round), uint64(r*1000+i)))
					host := []string{"a-", "b-"}[rng.IntN(2)] + a.host
					if err := ing.Submit(ctx, o.ID, a.id, inventoryOf(rng, host), host, time.Now()); err != nil {
						errs <- fmt.Errorf("inventory %s round %d: %w", host, round, err)
						return
					}
					finalMu.Lock()
					final[a.id] = host
					finalMu.Unlock()
				})
			}
			wg.Go(func() {
				user := fmt.Sprintf("user-%d", round)
				var batch []store.Checkin
				for _, a := range agents[r] {
					batch = append(batch, store.Checkin{EndpointID: a.id, At: time.Now(), User: &user})
				}
				if err := s.RecordCheckins(ctx, batch, nil); err != nil {
					errs <- fmt.Errorf("check-ins round %d: %w", round, err)
				}
			})
			defer ing.Close()
		}
		if round == 1 {
			wg.Go(func() {
				if _, err := replicas[2].PatchGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.update", TargetType: "group"},
					o.ID, g.ID, store.GroupChange{Rules: rule("b-")}, time.Now()); err != nil {
					errs <- fmt.Errorf("patch group: %w", err)
				}
			})
		}
		wg.Wait()
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	bad, err := s1.CounterMismatchesForTest(ctx, o.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	want := 0
	for _, host := range final {
		if strings.HasPrefix(host, "b-") {
			want++
		}
	}
	got, err := s1.GetGroup(ctx, o.ID, g.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if got.Members != want {
		t.Errorf("group members %d, want %d of %d endpoints", got.Members, want, len(final))
	}
}
