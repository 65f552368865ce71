package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestEnrollCountsTokenUse: an enrollment counts a use of its token in its
// own transaction, and a token revoked since it was looked up enrolls
// nothing and counts nothing.
func TestEnrollCountsTokenUse(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	o := newOrg(t, s, "Uses")
	audit := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action, TargetType: "enroll_token"}
	}
	tok, err := s.CreateEnrollToken(ctx, audit("enroll_token.create"), o.ID, "hash-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tokenID, orgID, err := s.ValidEnrollToken(ctx, "hash-1", now)
	if err != nil || tokenID != tok.ID || orgID != o.ID {
		t.Fatalf("ValidEnrollToken: %s %s %v", tokenID, orgID, err)
	}
	en := store.Enrollment{OrgID: o.ID, MachineUID: "m1", Hostname: "h1", Platform: "linux", SecretHash: "s1", TokenID: tok.ID}
	if _, _, err := s.EnrollEndpoint(ctx, en, now); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeEnrollToken(ctx, audit("enroll_token.revoke"), o.ID, tok.ID); err != nil {
		t.Fatal(err)
	}
	en.MachineUID, en.SecretHash = "m2", "s2"
	if _, _, err := s.EnrollEndpoint(ctx, en, now); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("enroll with a token revoked since its lookup: %v", err)
	}
	list, err := s.ListEnrollTokens(ctx, o.ID)
	if err != nil || len(list) != 1 || list[0].Uses != 1 {
		t.Fatalf("tokens: %+v %v", list, err)
	}
}

// TestEnrollCountsParallelUses: enrollments with one token at the same
// time are each counted (in the token's slots, summed when listed).
func TestEnrollCountsParallelUses(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	o := newOrg(t, s, "Parallel uses")
	tok, err := s.CreateEnrollToken(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "enroll_token.create", TargetType: "enroll_token"},
		o.ID, "hash-parallel", nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			en := store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i), Platform: "linux",
				SecretHash: fmt.Sprint("s", i), TokenID: tok.ID}
			_, _, err := s.EnrollEndpoint(ctx, en, time.Now())
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A re-enrollment uses the token too.
	if _, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: "m0", Hostname: "h0", Platform: "linux",
		SecretHash: "s0-again", TokenID: tok.ID}, time.Now()); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListEnrollTokens(ctx, o.ID)
	if err != nil || len(list) != 1 || list[0].Uses != n+1 {
		t.Fatalf("tokens: %+v %v", list, err)
	}
}

// TestEnrollmentsShareTransaction: enrollments arriving together (held
// behind a transaction on SQLite, so that they are written as one) each
// end as they would alone: one with a token revoked fails and leaves
// nothing, nor does one whose caller went away before it was written; two
// of the same machine enroll it once, then again (one endpoint, the
// second's secret); every other enrolls, and each success counts a use.
func TestEnrollmentsShareTransaction(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	o := newOrg(t, s, "Shared")
	audit := &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "enroll_token.create", TargetType: "enroll_token"}
	tok, err := s.CreateEnrollToken(ctx, audit, o.ID, "hash-shared", nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	const revoked, gone, dupA, dupB = 7, 12, 20, 21
	gaveUp, giveUp := context.WithCancel(ctx)
	giveUp()
	release := make(chan struct{})
	held := make(chan struct{})
	holdErr := make(chan error, 1)
	go func() {
		holdErr <- s.InTx(ctx, func(*store.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	type result struct {
		id      string
		created bool
		err     error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		en := store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i), Platform: "linux",
			SecretHash: fmt.Sprint("s", i), TokenID: tok.ID}
		c := ctx
		switch i {
		case revoked:
			en.TokenID = "no-such-token"
		case gone:
			c = gaveUp
		case dupA, dupB:
			en.MachineUID = "same-machine"
		}
		wg.Go(func() {
			r := &results[i]
			r.id, r.created, r.err = s.EnrollEndpoint(c, en, time.Now())
		})
	}
	if s.Engine() == store.SQLite {
		for s.SharedWaitingForTest() < n { // all of them behind the held transaction
			time.Sleep(time.Millisecond)
		}
	}
	close(release)
	wg.Wait()
	if err := <-holdErr; err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i, r := range results {
		switch i {
		case revoked:
			if !errors.Is(r.err, dberr.ErrNotFound) {
				t.Errorf("enrollment with an unknown token: %v", r.err)
			}
			continue
		case gone:
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("enrollment whose caller went away: %v", r.err)
			}
			continue
		}
		if r.err != nil || r.id == "" {
			t.Fatalf("enrollment %d: %q %v", i, r.id, r.err)
		}
		if i != dupA && i != dupB && !r.created {
			t.Errorf("enrollment %d: not created", i)
		}
		ids[r.id] = true
	}
	a, b := results[dupA], results[dupB]
	if a.id != b.id || a.created == b.created {
		t.Fatalf("one machine enrolled twice: %+v, %+v", a, b)
	}
	if len(ids) != n-3 {
		t.Fatalf("%d endpoints answered, want %d", len(ids), n-3)
	}
	if _, total, err := s.FindEndpoints(ctx, store.EndpointQuery{OrgID: o.ID, Limit: 1}); err != nil || total != n-3 {
		t.Fatalf("endpoints stored: %d %v, want %d", total, err, n-3)
	}
	// The enrollment written second holds the machine's secret.
	first, second := fmt.Sprint("s", dupA), fmt.Sprint("s", dupB)
	if b.created {
		first, second = second, first
	}
	if ag, err := s.AgentBySecret(ctx, second); err != nil || ag.EndpointID != a.id {
		t.Fatalf("the second enrollment's secret: %+v %v", ag, err)
	}
	if _, err := s.AgentBySecret(ctx, first); !errors.Is(err, dberr.ErrNotFound) {
		t.Fatalf("the first enrollment's secret still works: %v", err)
	}
	for _, i := range []int{revoked, gone} {
		if _, err := s.AgentBySecret(ctx, fmt.Sprint("s", i)); !errors.Is(err, dberr.ErrNotFound) {
			t.Fatalf("failed enrollment %d left its endpoint: %v", i, err)
		}
	}
	list, err := s.ListEnrollTokens(ctx, o.ID)
	if err != nil || len(list) != 1 || list[0].Uses != n-2 {
		t.Fatalf("token uses: %+v %v, want %d", list, err, n-2)
	}
}
