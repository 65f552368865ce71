package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/groups"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
)

// TestFindEndpoints: every filter of the endpoint lists selects exactly
// the endpoints it names, sorts order them both ways, the total counts
// every match whatever the page, and another organization's endpoints
// never appear.
func TestFindEndpoints(t *testing.T) {
	t.Parallel()
	s, o := acmeStore(t)
	ctx := context.Background()
	now := time.Now().Truncate(time.Millisecond)
	other := newOrg(t, s, "Other")
	add := func(orgID, name, platform, os string, at time.Time, ci store.Checkin, ups ...agentproto.Update) string {
		t.Helper()
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: orgID, MachineUID: name, Hostname: name, Platform: platform,
			SecretHash: "h-" + orgID + name}, at)
		if err != nil {
			t.Fatal(err)
		}
		doc := &agentproto.Inventory{CollectedAt: at, System: agentproto.System{Hostname: name, Type: "workstation", OS: str(os)}, Updates: ups}
		n, err := inventory.Check(doc, platform, "", at)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceInventory(ctx, orgID, id, n, "x", at); err != nil {
			t.Fatal(err)
		}
		ci.EndpointID, ci.At = id, at
		if err := s.RecordCheckins(ctx, []store.Checkin{ci}, nil); err != nil {
			t.Fatal(err)
		}
		return id
	}
	win := add(o.ID, "ws-01", "windows", "Windows 11 Pro", now, store.Checkin{PendingReboot: true, IPAddresses: []string{"10.0.0.5"}, AgentVersion: "1.2.0"},
		kb("KB5066835", "Critical"))
	old := add(o.ID, "ws-02", "windows", "Windows 10 Pro", now.Add(-10*24*time.Hour), store.Checkin{IPAddresses: []string{"10.0.0.6"}, AgentVersion: "1.1.0"},
		app("Mozilla.Firefox", "140.0"))
	lin := add(o.ID, "db-01", "linux", "Debian GNU/Linux 13", now.Add(-time.Minute), store.Checkin{IPAddresses: []string{"192.168.1.20"}, AgentVersion: "1.2.0"})
	add(other.ID, "ws-01-other", "windows", "Windows 11 Pro", now, store.Checkin{AgentVersion: "1.2.0"}, kb("KB5066835", "Critical"))
	name := "Linux"
	g, err := s.CreateGroup(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "group.create", TargetType: "group"}, o.ID,
		store.GroupChange{Name: &name, Rules: &[]groups.Rule{{Field: "platform", Op: groups.OpEquals, Value: "linux"}}}, now)
	if err != nil {
		t.Fatal(err)
	}
	since := now.Add(-5 * time.Minute)
	for _, tc := range []struct {
		what string
		q    store.EndpointQuery
		want []string
	}{
		{"everything, by name", store.EndpointQuery{}, []string{lin, win, old}},
		{"by name, reversed", store.EndpointQuery{Desc: true}, []string{old, win, lin}},
		{"API q on the hostname", store.EndpointQuery{Q: "WS-"}, []string{win, old}},
		{"API q ignores addresses", store.EndpointQuery{Q: "10.0.0"}, nil},
		{"search by address", store.EndpointQuery{Search: "10.0.0.6"}, []string{old}},
		{"search by operating system", store.EndpointQuery{Search: "debian"}, []string{lin}},
		{"connected", store.EndpointQuery{Status: "connected"}, []string{lin, win}},
		{"disconnected", store.EndpointQuery{Status: "disconnected"}, []string{old}},
		{"platform", store.EndpointQuery{Platform: "windows"}, []string{win, old}},
		{"OS", store.EndpointQuery{OS: "windows 1"}, []string{win, old}},
		{"group", store.EndpointQuery{GroupID: g.ID}, []string{lin}},
		{"missing a critical update", store.EndpointQuery{Missing: "critical"}, []string{win}},
		{"missing any update", store.EndpointQuery{Missing: "any"}, []string{win, old}},
		{"fully patched", store.EndpointQuery{Missing: "none"}, []string{lin}},
		{"missing updates, none critical", store.EndpointQuery{Missing: "other"}, []string{old}},
		{"missing one update", store.EndpointQuery{UpdateKey: "KB5066835"}, []string{win}},
		{"missing an update nobody misses", store.EndpointQuery{UpdateKey: "KB1"}, nil},
		{"affected by a CVE not on the fleet", store.EndpointQuery{CVE: "CVE-2024-4671"}, nil},
		{"pending reboot", store.EndpointQuery{PendingReboot: true}, []string{win}},
		{"not seen for a week", store.EndpointQuery{NotSeenSince: now.Add(-7 * 24 * time.Hour)}, []string{old}},
		{"agent version", store.EndpointQuery{AgentVersion: "1.2.0"}, []string{lin, win}},
		{"filters together", store.EndpointQuery{Platform: "windows", AgentVersion: "1.2.0", Missing: "critical"}, []string{win}},
		{"sorted by last seen, newest first", store.EndpointQuery{Sort: "lastSeen", Desc: true}, []string{win, lin, old}},
		{"sorted by platform", store.EndpointQuery{Sort: "platform"}, []string{lin, win, old}},
		{"sorted by agent version", store.EndpointQuery{Sort: "agentVersion"}, []string{old, lin, win}},
	} {
		tc.q.OrgID, tc.q.ConnectedSince = o.ID, since
		items, total, err := s.FindEndpoints(ctx, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.what, err)
		}
		var got []string
		for _, e := range items {
			got = append(got, e.ID)
		}
		if !slices.Equal(got, tc.want) || total != len(tc.want) {
			t.Errorf("%s: %v (total %d), want %v", tc.what, got, total, tc.want)
		}
		ids, err := s.FindEndpointIDs(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(ids, want) {
			t.Errorf("%s: ids %v, want %v", tc.what, ids, want)
		}
	}
	// A page of one still counts every match.
	items, total, err := s.FindEndpoints(ctx, store.EndpointQuery{OrgID: o.ID, Platform: "windows", Limit: 1, Offset: 1, ConnectedSince: since})
	if err != nil || total != 2 || len(items) != 1 || items[0].ID != old {
		t.Fatalf("second page of one: %v total %d, %v", items, total, err)
	}
}
