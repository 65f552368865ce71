package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// enrollN enrolls n endpoints in a new organization of its own.
func enrollN(t *testing.T, s *store.Store, name string, n int, at time.Time) (store.Org, []string) {
	t.Helper()
	ctx := context.Background()
	o := newOrg(t, s, name)
	ids := make([]string, n)
	for i := range ids {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprintf("%s-%d", name, i),
			Hostname: fmt.Sprintf("%s-%d", name, i), Platform: "linux", SecretHash: store.NewID()}, at)
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	return o, ids
}

func lastSeen(t *testing.T, s *store.Store, orgID, id string) time.Time {
	t.Helper()
	d, err := s.GetEndpoint(context.Background(), orgID, id, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if d.LastSeenAt == nil {
		return time.Time{}
	}
	return *d.LastSeenAt
}

// TestPoisonedCheckinFailsAlone: a check-in the database refuses (here a
// test fault that fails like PostgreSQL refusing a value) does not keep the
// other check-ins of the batch, of any organization, from being written.
func TestPoisonedCheckinFailsAlone(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	enrolled := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	orgA, a := enrollN(t, s, "poison-a", 5, enrolled)
	orgB, b := enrollN(t, s, "poison-b", 4, enrolled)
	bad := map[string]bool{a[1]: true, b[2]: true}
	s.SetCheckinFaultForTest(func(c store.Checkin) error {
		if bad[c.EndpointID] {
			return &pgconn.PgError{Code: "22021", Message: "invalid byte sequence for encoding \"UTF8\": 0x00"}
		}
		return nil
	})
	at := time.Now().Truncate(time.Millisecond)
	var batch []store.Checkin
	for _, id := range append(append([]string{}, a...), b...) {
		batch = append(batch, store.Checkin{EndpointID: id, At: at, AgentVersion: "1.0.1"})
	}
	err := s.RecordCheckins(context.Background(), batch, nil)
	var refused *store.CheckinsRefused
	if !errors.As(err, &refused) || len(refused.Refused) != 2 || refused.Refused[a[1]] == nil || refused.Refused[b[2]] == nil {
		t.Fatalf("RecordCheckins: %v, want only %v refused", err, bad)
	}
	for _, e := range []struct {
		org string
		ids []string
	}{{orgA.ID, a}, {orgB.ID, b}} {
		for _, id := range e.ids {
			got := lastSeen(t, s, e.org, id)
			if bad[id] {
				if !got.Equal(enrolled) {
					t.Errorf("the refused check-in was written: %v", got)
				}
				continue
			}
			if !got.Equal(at) {
				t.Errorf("endpoint %s: last seen %v, want %v", id, got, at)
			}
		}
	}
}

// TestCheckinsCarryWatermark: a replica's watermark is written with its
// check-ins, in the same transaction: a batch the database fails leaves
// the previous watermark, a batch with a refused check-in writes the
// others and then the watermark.
func TestCheckinsCarryWatermark(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	_, ids := enrollN(t, s, "mark", 4, time.Now().Add(-time.Hour))
	var fault func(store.Checkin) error
	s.SetCheckinFaultForTest(func(c store.Checkin) error {
		if fault != nil {
			return fault(c)
		}
		return nil
	})
	now := time.Now().Truncate(time.Millisecond)
	batch := func(at time.Time) []store.Checkin {
		var b []store.Checkin
		for _, id := range ids {
			b = append(b, store.Checkin{EndpointID: id, At: at})
		}
		return b
	}
	watermark := func() time.Time {
		t.Helper()
		through, ok, err := s.PresenceWatermark(ctx, now)
		if err != nil || !ok {
			t.Fatalf("PresenceWatermark: %v, %v", ok, err)
		}
		return through
	}
	first := &store.PresenceMark{Replica: "r1", WrittenThrough: now.Add(-3 * time.Second), At: now.Add(-3 * time.Second)}
	if err := s.RecordCheckins(ctx, batch(now.Add(-4*time.Second)), first); err != nil {
		t.Fatal(err)
	}
	if got := watermark(); !got.Equal(first.WrittenThrough) {
		t.Fatalf("watermark %v, want %v", got, first.WrittenThrough)
	}
	fault = func(store.Checkin) error { return errors.New("the database went away") }
	failed := &store.PresenceMark{Replica: "r1", WrittenThrough: now.Add(-time.Second), At: now.Add(-time.Second)}
	if err := s.RecordCheckins(ctx, batch(now.Add(-2*time.Second)), failed); err == nil {
		t.Fatal("RecordCheckins answered nil for a failing database")
	}
	if got := watermark(); !got.Equal(first.WrittenThrough) {
		t.Fatalf("a failed batch moved the watermark to %v (want %v)", got, first.WrittenThrough)
	}
	fault = func(c store.Checkin) error {
		if c.EndpointID == ids[2] {
			return &pgconn.PgError{Code: "22021", Message: "invalid byte sequence for encoding \"UTF8\": 0x00"}
		}
		return nil
	}
	if err := s.RecordCheckins(ctx, batch(now.Add(-time.Second)), failed); !errors.As(err, new(*store.CheckinsRefused)) {
		t.Fatalf("RecordCheckins: %v, want one refused", err)
	}
	if got := watermark(); !got.Equal(failed.WrittenThrough) {
		t.Fatalf("watermark %v after the others were written, want %v", got, failed.WrittenThrough)
	}
}

// TestCheckinWithNULFailsAlone stores a check-in whose text holds NUL
// directly (the agent API refuses it before): on PostgreSQL the database
// refuses it, and only it; on SQLite it is stored. Either way every other
// endpoint's last-seen time is written.
func TestCheckinWithNULFailsAlone(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	enrolled := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	org, ids := enrollN(t, s, "nul", 4, enrolled)
	at := time.Now().Truncate(time.Millisecond)
	user := "CORP\\al\x00ice"
	batch := []store.Checkin{
		{EndpointID: ids[0], At: at},
		{EndpointID: ids[1], At: at, User: &user},
		{EndpointID: ids[2], At: at, IPAddresses: []string{"10.0.0.1\x00"}},
		{EndpointID: ids[3], At: at, AgentVersion: "1.0.0"},
	}
	err := s.RecordCheckins(context.Background(), batch, nil)
	var refused *store.CheckinsRefused
	if err != nil && !errors.As(err, &refused) {
		t.Fatalf("RecordCheckins: %v", err)
	}
	for _, id := range []string{ids[0], ids[3]} {
		if got := lastSeen(t, s, org.ID, id); !got.Equal(at) {
			t.Errorf("endpoint %s: last seen %v, want %v (err %v)", id, got, at, err)
		}
	}
}

// TestIngestBatchWithNUL writes a batch of inventories, one of which holds
// a NUL in a software name (the agent API refuses it before; the store is
// tested alone): on PostgreSQL that one fails and the others are stored, on
// SQLite all are stored.
func TestIngestBatchWithNUL(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	org, ids := enrollN(t, s, "ingest-nul", 3, time.Now())
	g := ingester(t, s)
	now := time.Now()
	var ns []inventory.Normalized
	for i := range ids {
		doc := agentproto.Inventory{System: agentproto.System{Hostname: fmt.Sprintf("h%d", i)},
			Software: []agentproto.Software{{Name: fmt.Sprintf("app-%d-%s", i, store.NewID())}}}
		if i == 1 {
			doc.Software[0].Name = "bad\x00app-" + store.NewID()
		}
		n, err := inventory.Check(&doc, "linux", "debian", now)
		if err != nil && i != 1 {
			t.Fatal(err)
		}
		if i == 1 {
			// Check refuses it too; build the normalized document by hand.
			n = inventory.Normalized{Doc: &doc}
		}
		ns = append(ns, n)
	}
	errs := g.IngestForTest(org.ID, ids, ns, now)
	for _, i := range []int{0, 2} {
		if errs[i] != nil {
			t.Errorf("inventory %d failed with the bad one: %v", i, errs[i])
		}
		d, err := s.GetEndpoint(context.Background(), org.ID, ids[i], time.Time{})
		if err != nil || len(d.Software) != 1 {
			t.Errorf("inventory %d not stored: %+v %v", i, d.Software, err)
		}
	}
}

// TestCheckinFlushInChunks writes a flush larger than one statement's
// chunk: every endpoint's last-seen time is written, the fields group
// rules test are written only where they changed (a check-in without
// addresses, boot time or version keeps the known ones), and a check-in of
// an endpoint removed meanwhile is skipped without failing the others. A
// new boot time alone is written as well.
func TestCheckinFlushInChunks(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	enrolled := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	org, ids := enrollN(t, s, "chunks", 520, enrolled)
	boot := enrolled.Add(-time.Minute)
	alice := "CORP\\alice"
	first := make([]store.Checkin, len(ids))
	for i, id := range ids {
		first[i] = store.Checkin{EndpointID: id, At: enrolled.Add(time.Second), LastBootAt: &boot, User: &alice,
			IPAddresses: []string{"10.0.0.1"}, AgentVersion: "1.0.0"}
	}
	if err := s.RecordCheckins(ctx, first, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "test", Action: "endpoint.delete", TargetType: "endpoint"},
		org.ID, ids[7], time.Now()); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Truncate(time.Millisecond)
	bob := "CORP\\bob"
	second := make([]store.Checkin, len(ids))
	for i, id := range ids {
		second[i] = store.Checkin{EndpointID: id, At: at, User: &alice} // no addresses, boot or version: kept
	}
	second[3].User, second[3].PendingReboot = &bob, true
	second[511].IPAddresses, second[511].AgentVersion = []string{"10.0.0.2"}, "1.1.0"
	second[519].User = nil
	rebooted := boot.Add(30 * time.Minute)
	second[100].LastBootAt = &rebooted // the boot time alone changed: written too
	if err := s.RecordCheckins(ctx, second, nil); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if i == 7 {
			continue
		}
		e, err := s.GetEndpoint(ctx, org.ID, id, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		wantUser, wantReboot, wantIP, wantVersion, wantBoot := &alice, false, "10.0.0.1", "1.0.0", boot
		switch i {
		case 100:
			wantBoot = rebooted
		case 3:
			wantUser, wantReboot = &bob, true
		case 511:
			wantIP, wantVersion = "10.0.0.2", "1.1.0"
		case 519:
			wantUser = nil
		}
		switch {
		case e.LastSeenAt == nil || !e.LastSeenAt.Equal(at):
			t.Errorf("endpoint %d: last seen %v, want %v", i, e.LastSeenAt, at)
		case e.LastBootAt == nil || !e.LastBootAt.Equal(wantBoot):
			t.Errorf("endpoint %d: last boot %v, want %v", i, e.LastBootAt, wantBoot)
		case (e.User == nil) != (wantUser == nil) || (wantUser != nil && *e.User != *wantUser):
			t.Errorf("endpoint %d: user %v, want %v", i, e.User, wantUser)
		case e.PendingReboot != wantReboot:
			t.Errorf("endpoint %d: pending reboot %v, want %v", i, e.PendingReboot, wantReboot)
		case len(e.IPAddresses) != 1 || e.IPAddresses[0] != wantIP:
			t.Errorf("endpoint %d: addresses %v, want [%s]", i, e.IPAddresses, wantIP)
		case e.AgentVersion == nil || *e.AgentVersion != wantVersion:
			t.Errorf("endpoint %d: agent version %v, want %s", i, e.AgentVersion, wantVersion)
		}
	}
}

// TestCheckinFactsRemembered: on SQLite a flush reads only the endpoint
// rows whose check-in sends other facts than the row was last written with;
// an enrollment, a removal and a refused check-in make the row be read
// again, and what the rows hold is the same as when every row is read
// (PostgreSQL, whose replicas always read them).
func TestCheckinFactsRemembered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	enrolled := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	org, ids := enrollN(t, s, "facts", 4, enrolled)
	sqlite := s.Engine() == store.SQLite
	user := "alice"
	boot := enrolled.Add(-time.Minute)
	checkins := func(at time.Time, version string, ids ...string) []store.Checkin {
		var out []store.Checkin
		for _, id := range ids {
			out = append(out, store.Checkin{EndpointID: id, At: at, LastBootAt: &boot, User: &user,
				IPAddresses: []string{"10.0.0.1", "fd00::1"}, AgentVersion: version})
		}
		return out
	}
	toRead := func(batch []store.Checkin, onSQLite int) {
		t.Helper()
		want := len(batch)
		if sqlite {
			want = onSQLite
		}
		if got := s.CheckinsToReadForTest(batch); got != want {
			t.Fatalf("a flush of %d check-ins reads %d endpoint rows, want %d", len(batch), got, want)
		}
	}
	version := func(id string) string {
		t.Helper()
		d, err := s.GetEndpoint(ctx, org.ID, id, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if d.AgentVersion == nil {
			return ""
		}
		return *d.AgentVersion
	}
	record := func(batch []store.Checkin) {
		t.Helper()
		if err := s.RecordCheckins(ctx, batch, nil); err != nil {
			t.Fatal(err)
		}
	}

	at := enrolled.Add(time.Minute)
	first := checkins(at, "1.1", ids...)
	toRead(first, 4) // never written by a check-in
	record(first)
	at = at.Add(time.Minute)
	toRead(checkins(at, "1.1", ids...), 0)

	// Other facts: that row is read (and written).
	changed := checkins(at, "1.2", ids[1])
	toRead(append(checkins(at, "1.1", ids[0]), changed...), 1)
	record(changed)
	if v := version(ids[1]); v != "1.2" {
		t.Fatalf("agent version %q after a check-in sent 1.2", v)
	}
	toRead(checkins(at, "1.2", ids[1]), 0)
	noUser := checkins(at, "1.1", ids[0])
	noUser[0].User = nil
	toRead(noUser, 1)

	// An enrollment writes the agent version: the next check-in's row is
	// read again and the check-in's version written, as on PostgreSQL.
	if _, created, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: org.ID, MachineUID: "facts-0", Hostname: "facts-0",
		Platform: "linux", SecretHash: store.NewID(), AgentVersion: "2.0"}, at); err != nil || created {
		t.Fatalf("enroll again: created %v, %v", created, err)
	}
	if v := version(ids[0]); v != "2.0" {
		t.Fatalf("agent version %q after enrolling with 2.0", v)
	}
	at = at.Add(time.Minute)
	toRead(checkins(at, "1.1", ids[0]), 1)
	record(checkins(at, "1.1", ids[0]))
	if v := version(ids[0]); v != "1.1" {
		t.Fatalf("agent version %q after a check-in sent 1.1 following an enrollment with 2.0", v)
	}

	// A removed endpoint is forgotten; its late check-in changes nothing.
	if err := s.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "test", Action: "endpoint.delete", TargetType: "endpoint"},
		org.ID, ids[3], at); err != nil {
		t.Fatal(err)
	}
	toRead(checkins(at, "1.1", ids[3]), 1)
	record(checkins(at.Add(time.Second), "1.1", ids[2], ids[3]))
	if got := lastSeen(t, s, org.ID, ids[2]); !got.Equal(at.Add(time.Second)) {
		t.Fatalf("last seen %v, want %v", got, at.Add(time.Second))
	}

	// A check-in the database refuses leaves nothing remembered of it.
	s.SetCheckinFaultForTest(func(c store.Checkin) error {
		if c.EndpointID == ids[2] {
			return &pgconn.PgError{Code: "22021", Message: "refused for the test"}
		}
		return nil
	})
	refused := checkins(at.Add(2*time.Second), "1.3", ids[1], ids[2])
	var rerr *store.CheckinsRefused
	if err := s.RecordCheckins(ctx, refused, nil); !errors.As(err, &rerr) {
		t.Fatalf("RecordCheckins = %v, want the refused check-in answered", err)
	}
	s.SetCheckinFaultForTest(nil)
	toRead(refused[:1], 0)
	toRead(refused[1:], 1)
}

// TestCheckinFlushDecidesPerOrganization: one flush holding check-ins of two
// organizations writes each changed endpoint and re-decides its membership
// in its own organization's dynamic groups only, and queues for matching
// the endpoints whose rule fields changed (not one whose boot time alone
// did).
func TestCheckinFlushDecidesPerOrganization(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx := context.Background()
	enrolled := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	orgA, a := enrollN(t, s, "flush-a", 3, enrolled)
	orgB, b := enrollN(t, s, "flush-b", 3, enrolled)
	group := func(org store.Org) string {
		g, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "test", Action: "group.create", TargetType: "group"}, org.ID,
			store.GroupChangeForTest("Lab", true, []groups.Rule{{Field: "ipAddresses", Op: groups.OpStartsWith, Value: "10.1."}}), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return g.ID
	}
	groupA, groupB := group(orgA), group(orgB)
	members := func(org store.Org, groupID string, want ...string) {
		t.Helper()
		got, err := s.GroupMemberIDs(ctx, org.ID, groupID)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("group of %s: members %v, want %v", org.Name, got, want)
		}
	}
	gens := func() map[string]int64 {
		t.Helper()
		dirty, err := s.DirtyEndpoints(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, d := range dirty {
			out[d.ID] = d.Gen
		}
		return out
	}
	before := gens()
	at := enrolled.Add(time.Minute)
	boot := enrolled.Add(-time.Minute)
	if err := s.RecordCheckins(ctx, []store.Checkin{
		{EndpointID: a[0], At: at, IPAddresses: []string{"10.1.0.1"}},
		{EndpointID: a[1], At: at, IPAddresses: []string{"10.2.0.1"}},
		{EndpointID: a[2], At: at, LastBootAt: &boot},
		{EndpointID: b[0], At: at, IPAddresses: []string{"10.1.0.2"}},
		{EndpointID: b[1], At: at, IPAddresses: []string{"10.1.0.3"}, AgentVersion: "1.2.0"},
		{EndpointID: b[2], At: at},
	}, nil); err != nil {
		t.Fatal(err)
	}
	members(orgA, groupA, a[0])
	members(orgB, groupB, b[0], b[1])
	after := gens()
	for _, id := range []string{a[0], a[1], b[0], b[1]} {
		if after[id] != before[id]+1 {
			t.Errorf("endpoint %s: matching mark %d, want %d", id, after[id], before[id]+1)
		}
	}
	for _, id := range []string{a[2], b[2]} {
		if after[id] != before[id] {
			t.Errorf("endpoint %s (no rule field changed): matching mark %d, want %d", id, after[id], before[id])
		}
	}
	if e, err := s.GetEndpoint(ctx, orgA.ID, a[2], time.Time{}); err != nil {
		t.Fatal(err)
	} else if e.LastBootAt == nil || !e.LastBootAt.Equal(boot) {
		t.Errorf("endpoint a2: last boot %v, want %v", e.LastBootAt, boot)
	}

	at = at.Add(time.Minute)
	if err := s.RecordCheckins(ctx, []store.Checkin{
		{EndpointID: a[0], At: at, IPAddresses: []string{"10.2.0.9"}},
		{EndpointID: b[2], At: at, IPAddresses: []string{"10.1.0.4"}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	members(orgA, groupA)
	members(orgB, groupB, b[0], b[1], b[2])
}
