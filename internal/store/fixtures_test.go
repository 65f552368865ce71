package store_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// The organizations, roles and users the store's tests start from.

// newOrg creates an organization (time zone UTC).
func newOrg(t testing.TB, s *store.Store, name string) store.Org {
	t.Helper()
	o, err := s.CreateOrg(context.Background(), name, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// acmeStore opens a store for the test with the organization Acme.
func acmeStore(t testing.TB) (*store.Store, store.Org) {
	t.Helper()
	s := storetest.Open(t)
	return s, newOrg(t, s, "Acme")
}

// ingester answers a new Ingester of s, closed when the test ends.
func ingester(t testing.TB, s *store.Store) *store.Ingester {
	t.Helper()
	g := s.NewIngester()
	t.Cleanup(g.Close)
	return g
}

// builtinRole answers the organization's built-in role of that name
// (store.RoleAdministrator, store.RoleReadOnly).
func builtinRole(t testing.TB, s *store.Store, orgID, name string) store.Role {
	t.Helper()
	r, err := s.FindRole(context.Background(), orgID, name)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// newUser creates u (its OrgID, Email and RoleID set) with the password
// hash "x" unless it has one, recorded as created by "test"; an instance
// operator's grant is recorded too.
func newUser(t testing.TB, s *store.Store, u store.User) store.User {
	t.Helper()
	if u.PasswordHash == "" {
		u.PasswordHash = "x"
	}
	var ie *store.InstanceEvent
	if u.InstanceOperator {
		ie = &store.InstanceEvent{Actor: "test", Action: "instance_operator.grant"}
	}
	u, err := s.CreateUser(context.Background(), &store.AuditEntry{OrgID: u.OrgID, Actor: "test", Action: "user.create", TargetType: "user"}, ie, u)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// newAdmin creates an organization and an Administrator of it: the start
// of most identity tests.
func newAdmin(t testing.TB, s *store.Store, org, email string) (store.Org, store.User) {
	t.Helper()
	o := newOrg(t, s, org)
	return o, newUser(t, s, store.User{OrgID: o.ID, Email: email, RoleID: builtinRole(t, s, o.ID, store.RoleAdministrator).ID})
}

// race runs f in 8 goroutines at once (the i-th is given i) and answers
// how many of them f answered true: of racers for one thing that may be
// taken once, exactly one must win.
func race(f func(i int) bool) int32 {
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f(i) {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	return wins.Load()
}
