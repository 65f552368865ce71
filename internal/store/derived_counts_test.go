package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/sim"
)

// A counter of missing updates an inventory wrote from rows the matcher
// changed meanwhile (PostgreSQL's read committed) is recounted from the
// rows by the matcher's next pass over that endpoint.
func TestRefreshUpdateRiskRecountsStaleCounters(t *testing.T) {
	ctx := context.Background()
	s := storetest.Open(t)
	o, err := s.CreateOrg(ctx, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	doc := sim.Generate(1, 3)
	platform := sim.Platform(1, 3)
	id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: "m3", Hostname: doc.System.Hostname, Platform: platform, SecretHash: "s3"}, now)
	if err != nil {
		t.Fatal(err)
	}
	n, err := inventory.Check(&doc, platform, "", now)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ReplaceInventory(ctx, o.ID, id, n, "h", now); err != nil {
		t.Fatal(err)
	}
	before, err := s.PatchStates(ctx, o.ID, []string{id}, now)
	if err != nil {
		t.Fatal(err)
	}
	if before[id].MissingTotal == 0 {
		t.Fatal("the simulated endpoint misses no update")
	}
	if err := s.InTx(ctx, func(tx *store.Tx) error {
		return tx.ExecForTest(ctx, `UPDATE endpoints SET missing_critical = missing_critical + 5, missing_low = 0 WHERE id = ?`, id)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RefreshUpdateRisk(ctx, o.ID, []string{id}); err != nil {
		t.Fatal(err)
	}
	after, err := s.PatchStates(ctx, o.ID, []string{id}, now)
	if err != nil {
		t.Fatal(err)
	}
	if after[id] != before[id] {
		t.Errorf("counters %+v after the pass, %+v from the rows", after[id], before[id])
	}
}
