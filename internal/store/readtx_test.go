package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestReadTransactionsHoldingThePool runs read transactions with
// statements not cached yet on a read pool of one connection, then more of
// them at once than the pool has connections. A transaction that prepared its statement on the pool while holding
// one of its connections waited for a second one; with every connection so
// held, none ever ended (the scheduler's parallel fires hung that way).
func TestReadTransactionsHoldingThePool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, url := storetest.OpenURL(t)
	s, err := store.Open(ctx, url, "", store.Options{MaxConns: 1, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The bound only ends a hang: a transaction that waits for a second
	// connection fails when it passes, one that does not never meets it.
	bounded, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	o := newOrg(t, s, "Acme")
	list, err := s.ListGroups(bounded, o.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var all string
	for _, g := range list {
		if g.Builtin == groups.BuiltinAll {
			all = g.ID
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			_, err := s.GroupMemberIDs(bounded, o.ID, all)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("read transaction: %v", err)
		}
	}
}
