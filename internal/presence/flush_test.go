package presence

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestFlushDropsOnlyRefusedCheckins: a batched check-in the database
// refuses (NUL in its text, which the agent API refuses before; on
// PostgreSQL) is dropped after the batch was written around it; every other
// endpoint's last-seen time is written, and nothing is kept for a retry
// that would fail again. On SQLite the text is stored and nothing is
// refused.
func TestFlushDropsOnlyRefusedCheckins(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	o, err := s.CreateOrg(ctx, "Flush", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	enrolled := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var ids []string
	for i := range 5 {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i),
			Platform: "linux", SecretHash: store.NewID()}, enrolled)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	h := New(s, 0)
	at := time.Now().Truncate(time.Millisecond)
	bad := "al\x00ice"
	for i, id := range ids {
		c := store.Checkin{EndpointID: id, At: at}
		if i == 2 {
			c.User = &bad
		}
		h.Seen(c)
	}
	if err := h.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	h.mu.Lock()
	left := len(h.seen)
	h.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d check-ins kept for another flush", left)
	}
	for i, id := range ids {
		d, err := s.GetEndpoint(ctx, o.ID, id, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if i != 2 && (d.LastSeenAt == nil || !d.LastSeenAt.Equal(at)) {
			t.Errorf("endpoint %d: last seen %v, want %v", i, d.LastSeenAt, at)
		}
	}
}
