package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

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
	o, err := s.CreateOrg(ctx, "Uses", "UTC")
	if err != nil {
		t.Fatal(err)
	}
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
	if _, _, err := s.EnrollEndpoint(ctx, en, now); !errors.Is(err, store.ErrNotFound) {
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
	o, err := s.CreateOrg(ctx, "Parallel uses", "UTC")
	if err != nil {
		t.Fatal(err)
	}
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
