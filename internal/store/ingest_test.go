package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestIngesterBatches submits many inventories at once, one of them for an
// endpoint that does not exist: that one fails alone, every other is stored
// with its new software titles.
func TestIngesterBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	o, err := s.CreateOrg(ctx, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	g := s.NewIngester()
	defer g.Close()
	const n = 60
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := 0; i < n; i++ {
		id := "missing"
		if i != 17 {
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
		if (i == 17) != errors.Is(err, store.ErrNotFound) || (i != 17 && err != nil) {
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
