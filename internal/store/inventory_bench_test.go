package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/sim"
)

// BenchmarkReplaceInventory stores first inventories of simulated endpoints
// (≈150 applications, ≈10 updates and the report datasets each): the work
// of enrolling a fleet.
func BenchmarkReplaceInventory(b *testing.B) {
	ctx := context.Background()
	s := storetest.Open(b)
	o, err := s.CreateOrg(ctx, "Acme", "UTC")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		doc := sim.Generate(1, i)
		platform := sim.Platform(1, i)
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: doc.System.Hostname,
			Platform: platform, SecretHash: fmt.Sprint("s", i)}, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		n, err := inventory.Check(&doc, platform, "", time.Now())
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if err := s.ReplaceInventory(ctx, o.ID, id, n, "h", time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}
