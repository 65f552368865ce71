package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// TestLastOperatorKept: revoking, disabling or deleting the last enabled
// instance operator is refused, also when two revocations race.
func TestLastOperatorKept(t *testing.T) {
	s, o := acmeStore(t)
	ctx := context.Background()
	role := builtinRole(t, s, o.ID, store.RoleAdministrator)
	grant := func(action string) *store.InstanceEvent { return &store.InstanceEvent{Actor: "test", Action: action} }
	entry := func(action string) *store.AuditEntry {
		return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action, TargetType: "user"}
	}
	a := newUser(t, s, store.User{OrgID: o.ID, Email: "a@example.com", RoleID: role.ID, InstanceOperator: true})
	b := newUser(t, s, store.User{OrgID: o.ID, Email: "b@example.com", RoleID: role.ID})

	if _, err := s.SetInstanceOperator(ctx, grant("instance_operator.revoke"), a.ID, false); !errors.Is(err, store.ErrLastOperator) {
		t.Errorf("revoke the last operator: %v, want ErrLastOperator", err)
	}
	if err := s.SetUserDisabled(ctx, entry("user.disable"), o.ID, a.ID, true); !errors.Is(err, store.ErrLastOperator) {
		t.Errorf("disable the last operator: %v, want ErrLastOperator", err)
	}
	if err := s.DeleteUser(ctx, entry("user.delete"), o.ID, a.ID); !errors.Is(err, store.ErrLastOperator) {
		t.Errorf("delete the last operator: %v, want ErrLastOperator", err)
	}
	if err := s.SetUserDisabled(ctx, entry("user.disable"), o.ID, b.ID, true); err != nil {
		t.Errorf("disable a user who is no operator: %v", err)
	}
	if err := s.SetUserDisabled(ctx, entry("user.enable"), o.ID, b.ID, false); err != nil {
		t.Fatal(err)
	}

	// Two operators, both revoked at once: one revocation wins.
	if changed, err := s.SetInstanceOperator(ctx, grant("instance_operator.grant"), b.ID, true); err != nil || !changed {
		t.Fatalf("grant: %v %v", changed, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, id := range []string{a.ID, b.ID} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.SetInstanceOperator(ctx, grant("instance_operator.revoke"), id, false)
		}()
	}
	wg.Wait()
	refused := 0
	for _, err := range errs {
		switch {
		case errors.Is(err, store.ErrLastOperator):
			refused++
		case err != nil:
			t.Fatalf("a racing revocation: %v", err)
		}
	}
	ops, err := s.ListInstanceOperators(ctx)
	if refused != 1 || err != nil || len(ops) != 1 {
		t.Fatalf("after two racing revocations: %d refused, operators %+v %v", refused, ops, err)
	}
	events, err := s.ListInstanceEvents(ctx, store.InstanceEventFilter{Actions: []string{"instance_operator.grant", "instance_operator.revoke"}})
	if err != nil || len(events) != 3 {
		t.Errorf("instance events (grant a, grant b, one revoke): %+v %v", events, err)
	}
	if _, err := s.SetInstanceOperator(ctx, grant("instance_operator.grant"), "no-such-user", true); !errors.Is(err, dberr.ErrNotFound) {
		t.Errorf("grant to an unknown user: %v", err)
	}
}
