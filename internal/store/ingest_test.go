package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
)

// TestIngesterBatches submits many inventories at once, one of them for an
// endpoint that does not exist: that one fails alone, every other is stored
// with its new software titles.
func TestIngesterBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	g := ingester(t, s)
	const n = 60
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		id := "missing"
		if i != 17 {
			var err error
			id, _, err = s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i),
				Platform: "linux", SecretHash: fmt.Sprint("s", i)}, time.Now())
			if err != nil {
				t.Fatal(err)
			}
		}
		v := fmt.Sprint("1.", i)
		doc := agentproto.Inventory{System: agentproto.System{Hostname: fmt.Sprint("h", i)},
			Software: []agentproto.Software{{Name: "common", Version: &v}, {Name: fmt.Sprint("only-", i), Version: &v}}}
		norm, err := inventory.Check(&doc, "linux", "debian", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = g.Submit(ctx, o.ID, id, norm, "h", time.Now())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i == 17) != errors.Is(err, dberr.ErrNotFound) || (i != 17 && err != nil) {
			t.Fatalf("inventory %d: %v", i, err)
		}
	}
	rows, total, err := s.ListSoftware(ctx, store.SoftwareQuery{OrgID: o.ID, Q: "common", Limit: 500})
	if err != nil || total != n-1 || len(rows) != n-1 {
		t.Fatalf("common title: %d rows, total %d, %v", len(rows), total, err)
	}
	if _, total, _ := s.ListSoftware(ctx, store.SoftwareQuery{OrgID: o.ID, Q: "only-17", Limit: 500}); total != 0 {
		t.Fatalf("the failed inventory left rows: %d", total)
	}
	if _, total, _ := s.ListSoftware(ctx, store.SoftwareQuery{OrgID: o.ID, Limit: 500}); total != 2*(n-1) {
		t.Fatalf("all rows: %d", total)
	}
	g.Close()
	if err := g.Submit(ctx, o.ID, "x", inventory.Normalized{Doc: &agentproto.Inventory{}}, "h", time.Now()); !errors.Is(err, store.ErrIngesterClosed) {
		t.Fatalf("after close: %v", err)
	}
}

// TestIngestBatchMemberFails writes batches in which one inventory fails
// (its endpoint does not exist), first or last in the batch's order, and a
// batch of that one alone. The batch is written once without savepoints,
// rolled back at the failure and written again with one savepoint per
// inventory: the failing one answers its own error, the others are stored,
// and the title counters count each stored inventory once.
func TestIngestBatchMemberFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	g := ingester(t, s)
	now := time.Now()
	enrolled := 0
	batch := func(missing string, n int) ([]string, []inventory.Normalized) {
		ids := make([]string, n)
		ns := make([]inventory.Normalized, n)
		var err error
		for i := range ids {
			if i == 0 {
				ids[i] = missing
			} else {
				enrolled++
				ids[i], _, err = s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", enrolled),
					Hostname: fmt.Sprint("h", enrolled), Platform: "linux", SecretHash: fmt.Sprint("s", enrolled)}, now)
				if err != nil {
					t.Fatal(err)
				}
			}
			v := "1.0"
			doc := agentproto.Inventory{System: agentproto.System{Hostname: fmt.Sprint("h", i)},
				Software: []agentproto.Software{{Name: "common", Version: &v}, {Name: "only-" + ids[i], Version: &v}}}
			if ns[i], err = inventory.Check(&doc, "linux", "debian", now); err != nil {
				t.Fatal(err)
			}
		}
		return ids, ns
	}
	check := func(ids []string, errs []error) {
		t.Helper()
		for i, err := range errs {
			if (i == 0) != errors.Is(err, dberr.ErrNotFound) || (i != 0 && err != nil) {
				t.Fatalf("inventory %d (%s): %v", i, ids[i], err)
			}
			_, total, err := s.ListSoftware(ctx, store.SoftwareQuery{OrgID: o.ID, Q: "only-" + ids[i], Limit: 10})
			if err != nil || (total == 1) != (i != 0) {
				t.Fatalf("inventory %d (%s): %d rows stored, %v", i, ids[i], total, err)
			}
		}
	}
	common := func() (hosts, installs int) {
		t.Helper()
		titles, _, err := s.ListSoftwareTitles(ctx, store.SoftwareTitleQuery{OrgID: o.ID, Q: "common", Limit: 10})
		if err != nil || len(titles) != 1 {
			t.Fatalf("title common: %+v %v", titles, err)
		}
		return titles[0].Hosts, titles[0].Installs
	}
	// Ids sort before the others ("0…" < "01…", store.NewID) and after
	// them ("z…"): the failure comes first, and after three were written.
	for k, missing := range []string{"00000000000000000000000000000000", "zzzz"} {
		ids, ns := batch(missing, 4)
		check(ids, g.IngestForTest(o.ID, ids, ns, now))
		if hosts, installs := common(); hosts != 3*(k+1) || installs != 3*(k+1) {
			t.Fatalf("after batch %d: common on %d hosts, %d installs; want %d", k, hosts, installs, 3*(k+1))
		}
	}
	ids, ns := batch("zzzz", 1)
	check(ids, g.IngestForTest(o.ID, ids, ns, now))
	ids, ns = batch("zzzz", 3)
	ids, ns = ids[1:], ns[1:] // all of them enrolled
	for i, err := range g.IngestForTest(o.ID, ids, ns, now) {
		if err != nil {
			t.Fatalf("inventory %d: %v", i, err)
		}
	}
	if hosts, installs := common(); hosts != 8 || installs != 8 {
		t.Fatalf("at the end: common on %d hosts, %d installs; want 8", hosts, installs)
	}
}
