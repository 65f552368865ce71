package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestGroupListCache reads the group list between changes: a change made
// through the same store shows at once, one made through another replica
// within the cache's second.
func TestGroupListCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, url := storetest.OpenURL(t)
	other, err := store.Open(ctx, url, "", store.Options{MaxConns: 4, SecretKey: storetest.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	o := newOrg(t, s, "Acme")
	all := func(s *store.Store) int {
		t.Helper()
		list, err := s.ListGroups(ctx, o.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range list {
			if g.Builtin == groups.BuiltinAll {
				return g.Members
			}
		}
		t.Fatal("no built-in group of all endpoints")
		return 0
	}
	enroll := func(s *store.Store, i int) {
		t.Helper()
		if _, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i),
			Platform: "linux", SecretHash: fmt.Sprint("s", i)}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := all(s); n != 0 {
		t.Fatalf("members %d before any enrollment", n)
	}
	enroll(s, 1)
	if n := all(s); n != 1 {
		t.Fatalf("members %d right after an enrollment through the same store, want 1", n)
	}
	name := "Linux"
	g, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.create", TargetType: "group"}, o.ID,
		store.GroupChange{Name: &name, Rules: &[]groups.Rule{{Field: "platform", Op: groups.OpEquals, Value: "linux"}}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.ListGroups(ctx, o.ID, time.Now())
	if err != nil || len(list) != 3 || list[2].ID != g.ID || list[2].Members != 1 {
		t.Fatalf("after creating a group: %+v, %v", list, err)
	}
	enroll(other, 2)
	deadline := time.Now().Add(time.Minute) // generous: a busy machine must pass
	for all(s) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("an enrollment through another replica is not seen after a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	list, _ = s.ListGroups(ctx, o.ID, time.Now())
	if list[2].Members != 2 {
		t.Fatalf("dynamic group members %d, want 2", list[2].Members)
	}
	list[2].Name = "changed by the caller"
	if again, _ := s.ListGroups(ctx, o.ID, time.Now()); again[2].Name != name {
		t.Fatalf("a caller's change reached the cache: %q", again[2].Name)
	}
}
