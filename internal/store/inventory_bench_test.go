package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/sim"
)

// enrolledInventory enrolls simulated endpoint i of an organization and
// answers its id and its first inventory, checked.
func enrolledInventory(b *testing.B, s *store.Store, orgID string, i int) (string, inventory.Normalized) {
	b.Helper()
	doc := sim.Generate(1, i)
	platform := sim.Platform(1, i)
	id, _, err := s.EnrollEndpoint(context.Background(), store.Enrollment{OrgID: orgID, MachineUID: fmt.Sprint("m", i),
		Hostname: doc.System.Hostname, Platform: platform, SecretHash: fmt.Sprint("s", i)}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	n, err := inventory.Check(&doc, platform, "", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return id, n
}

// BenchmarkReplaceInventory stores first inventories of simulated endpoints
// (≈150 applications, ≈10 updates and the report datasets each): the work
// of enrolling a fleet.
func BenchmarkReplaceInventory(b *testing.B) {
	ctx := context.Background()
	s, o := acmeStore(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		id, n := enrolledInventory(b, s, o.ID, i)
		b.StartTimer()
		if err := s.ReplaceInventory(ctx, o.ID, id, n, "h", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordCheckins writes check-in flushes as a steady fleet of
// 10,000 endpoints makes them: 350 distinct endpoints a flush (two
// seconds of check-ins every 57 s), facts unchanged. An op is one flush;
// µs/checkin is what each check-in costs the writer.
func BenchmarkRecordCheckins(b *testing.B) {
	ctx := context.Background()
	s, o := acmeStore(b)
	ids, err := s.BulkEndpointsForTest(ctx, o.ID, 10000, time.Now().Add(-time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	const perFlush = 350
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Now()
	for b.Loop() {
		b.StopTimer()
		batch := make([]store.Checkin, perFlush)
		for i, k := range r.Perm(len(ids))[:perFlush] {
			at = at.Add(time.Millisecond)
			batch[i] = store.Checkin{EndpointID: ids[k], At: at}
		}
		b.StartTimer()
		if err := s.RecordCheckins(ctx, batch, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*perFlush), "µs/checkin")
}

// BenchmarkIngest stores first inventories of simulated endpoints through
// the Ingester, 64 submitted at once, as an enrolling fleet sends them: the
// batches share their transactions. An op is 64 inventories; ms/inventory
// is what each costs.
func BenchmarkIngest(b *testing.B) {
	ctx := context.Background()
	s, o := acmeStore(b)
	g := ingester(b, s)
	const wave = 64
	type doc struct {
		id string
		n  inventory.Normalized
	}
	next := 0
	for b.Loop() {
		b.StopTimer()
		docs := make([]doc, wave)
		for k := range docs {
			docs[k].id, docs[k].n = enrolledInventory(b, s, o.ID, next+k)
		}
		b.StartTimer()
		var wg sync.WaitGroup
		for _, d := range docs {
			wg.Go(func() {
				if err := g.Submit(ctx, o.ID, d.id, d.n, "h", time.Now()); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
		next += wave
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(next), "ms/inventory")
}
