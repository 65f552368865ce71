package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/inventory"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// titlesText writes a page of titles as "name/publisher hosts installs
// [version:hosts …]" lines, to compare whole pages.
func titlesText(items []apiv1.SoftwareTitle) string {
	var b strings.Builder
	for _, t := range items {
		pub := "-"
		if t.Publisher != nil {
			pub = *t.Publisher
		}
		fmt.Fprintf(&b, "%s/%s %d %d %d[", t.Name, pub, t.Hosts, t.Installs, t.VersionCount)
		for i, v := range t.Versions {
			if i > 0 {
				b.WriteString(" ")
			}
			ver := "-"
			if v.Version != nil {
				ver = *v.Version
			}
			fmt.Fprintf(&b, "%s:%d", ver, v.Hosts)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestSoftwareTitles: the list by title counts endpoints (an endpoint with
// two versions of a title counts once in hosts, twice in installs) and the
// endpoints of each version, follows inventories that drop software and
// endpoints that are deleted, filters by name and publisher, orders by
// endpoints or name, pages, and never counts or shows another
// organization's titles, even of the same name.
func TestSoftwareTitles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.Open(t)
	now := time.Now()
	acme := newOrg(t, s, "Acme")
	other := newOrg(t, s, "Other")
	enroll := func(orgID, uid string) string {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: orgID, MachineUID: uid, Hostname: uid, Platform: "windows",
			SecretHash: "s-" + uid}, now)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	sw := func(name, version, publisher string) agentproto.Software {
		out := agentproto.Software{Name: name}
		if version != "" {
			out.Version = &version
		}
		if publisher != "" {
			out.Publisher = &publisher
		}
		return out
	}
	put := func(orgID, id string, software ...agentproto.Software) {
		t.Helper()
		doc := &agentproto.Inventory{CollectedAt: now, System: agentproto.System{Hostname: "h-" + id, Type: "workstation"}, Software: software}
		n, err := inventory.Check(doc, "windows", "", now)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceInventory(ctx, orgID, id, n, fmt.Sprint(time.Now().UnixNano()), now); err != nil {
			t.Fatal(err)
		}
	}
	list := func(q store.SoftwareTitleQuery) (string, int) {
		t.Helper()
		if q.Limit == 0 {
			q.Limit = 50
		}
		items, total, err := s.ListSoftwareTitles(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return titlesText(items), total
	}
	e1, e2, e3 := enroll(acme.ID, "e1"), enroll(acme.ID, "e2"), enroll(acme.ID, "e3")
	o1 := enroll(other.ID, "o1")
	put(acme.ID, e1, sw("Google Chrome", "120.0", "Google LLC"), sw("Google Chrome", "121.0", "Google LLC"), sw("7-Zip", "23.01", "Igor Pavlov"))
	put(acme.ID, e2, sw("Google Chrome", "121.0", "Google LLC"), sw("Mozilla Firefox", "", ""))
	put(acme.ID, e3, sw("Google Chrome", "120.0", "Google LLC"))
	// Another organization: the same title, on many more endpoints, and one
	// of its own.
	put(other.ID, o1, sw("Google Chrome", "999.0", "Google LLC"), sw("Secret App", "1.0", "Igor Pavlov"))
	for _, id := range []string{"o2", "o3", "o4", "o5"} {
		put(other.ID, enroll(other.ID, id), sw("Google Chrome", "999.0", "Google LLC"))
	}

	got, total := list(store.SoftwareTitleQuery{OrgID: acme.ID})
	want := "Google Chrome/Google LLC 3 4 2[120.0:2 121.0:2]\n7-Zip/Igor Pavlov 1 1 1[23.01:1]\nMozilla Firefox/- 1 1 1[-:1]\n"
	if got != want || total != 3 {
		t.Fatalf("by hosts (%d):\n%s\nwant:\n%s", total, got, want)
	}
	got, total = list(store.SoftwareTitleQuery{OrgID: acme.ID, Sort: store.TitlesByName})
	if want := "7-Zip/Igor Pavlov 1 1 1[23.01:1]\nGoogle Chrome/Google LLC 3 4 2[120.0:2 121.0:2]\nMozilla Firefox/- 1 1 1[-:1]\n"; got != want || total != 3 {
		t.Fatalf("by name (%d):\n%s", total, got)
	}
	got, total = list(store.SoftwareTitleQuery{OrgID: acme.ID, Limit: 1, Offset: 1})
	if got != "7-Zip/Igor Pavlov 1 1 1[23.01:1]\n" || total != 3 {
		t.Fatalf("page 2 of 1 (%d): %s", total, got)
	}
	for _, c := range []struct {
		q      store.SoftwareTitleQuery
		titles string
		total  int
	}{
		{store.SoftwareTitleQuery{Q: "CHROME"}, "Google Chrome", 1},
		{store.SoftwareTitleQuery{Publisher: "pavlov"}, "7-Zip", 1}, // not Secret App: Other's
		{store.SoftwareTitleQuery{Q: "secret"}, "", 0},
		{store.SoftwareTitleQuery{Q: "%"}, "", 0}, // wildcards are literal
		{store.SoftwareTitleQuery{Publisher: "_"}, "", 0},
		{store.SoftwareTitleQuery{Q: "o", Publisher: "google"}, "Google Chrome", 1},
	} {
		c.q.OrgID, c.q.Limit = acme.ID, 50
		items, total, err := s.ListSoftwareTitles(ctx, c.q)
		var names []string
		for _, it := range items {
			names = append(names, it.Name)
		}
		if err != nil || strings.Join(names, ",") != c.titles || total != c.total {
			t.Errorf("%+v: %v (%d) %v, want %s (%d)", c.q, names, total, err, c.titles, c.total)
		}
	}

	// e1 drops Chrome 121 and 7-Zip; e3 is deleted.
	put(acme.ID, e1, sw("Google Chrome", "120.0", "Google LLC"))
	if err := s.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: acme.ID, Actor: "test", Action: "endpoint.delete", TargetType: "endpoint"},
		acme.ID, e3, now); err != nil {
		t.Fatal(err)
	}
	got, total = list(store.SoftwareTitleQuery{OrgID: acme.ID})
	if want := "Google Chrome/Google LLC 2 2 2[120.0:1 121.0:1]\nMozilla Firefox/- 1 1 1[-:1]\n"; got != want || total != 2 {
		t.Fatalf("after the changes (%d):\n%s\nwant:\n%s", total, got, want)
	}
	got, total = list(store.SoftwareTitleQuery{OrgID: other.ID})
	if want := "Google Chrome/Google LLC 5 5 1[999.0:5]\nSecret App/Igor Pavlov 1 1 1[1.0:1]\n"; got != want || total != 2 {
		t.Fatalf("the other organization (%d):\n%s", total, got)
	}
	// A title in more versions than the list shows: the most common
	// first (all on one endpoint here, so by version), and their number.
	var many []agentproto.Software
	for i := range 25 {
		many = append(many, sw("Many Versions", fmt.Sprintf("v%02d", i), ""))
	}
	put(acme.ID, enroll(acme.ID, "e5"), many...)
	items, total, err := s.ListSoftwareTitles(ctx, store.SoftwareTitleQuery{OrgID: acme.ID, Q: "many", Limit: 10})
	if err != nil || total != 1 || items[0].Hosts != 1 || items[0].Installs != 25 || items[0].VersionCount != 25 ||
		len(items[0].Versions) != apiv1.MaxTitleVersions || *items[0].Versions[0].Version != "v00" || *items[0].Versions[19].Version != "v19" {
		t.Fatalf("many versions: %+v (%d) %v", items, total, err)
	}
	for _, org := range []string{acme.ID, other.ID} {
		if bad, err := s.CounterMismatchesForTest(ctx, org); err != nil || len(bad) > 0 {
			t.Fatalf("counters: %v %v", bad, err)
		}
	}
}

// TestSoftwareTitlesMigration: migration 019 counts the endpoints of the
// titles and versions already stored, and takes their publisher, when it
// upgrades a database with inventories in it; migration 040 keeps them.
func TestSoftwareTitlesMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, o := acmeStore(t)
	now := time.Now()
	str := func(v string) *string { return &v }
	var ids []string
	for i, vers := range [][]string{{"1.0", "2.0"}, {"1.0"}, {"3.0"}} {
		id, _, err := s.EnrollEndpoint(ctx, store.Enrollment{OrgID: o.ID, MachineUID: fmt.Sprint("m", i), Hostname: fmt.Sprint("h", i),
			Platform: "windows", SecretHash: fmt.Sprint("s", i)}, now)
		if err != nil {
			t.Fatal(err)
		}
		doc := &agentproto.Inventory{CollectedAt: now, System: agentproto.System{Hostname: fmt.Sprint("h", i), Type: "workstation"}}
		for _, v := range vers {
			doc.Software = append(doc.Software, agentproto.Software{Name: "Widget", Version: str(v), Publisher: str("Acme Software")})
		}
		doc.Software = append(doc.Software, agentproto.Software{Name: fmt.Sprint("Only on ", i)})
		n, err := inventory.Check(doc, "windows", "", now)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ReplaceInventory(ctx, o.ID, id, n, "x", now); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	list := func() string {
		t.Helper()
		items, total, err := s.ListSoftwareTitles(ctx, store.SoftwareTitleQuery{OrgID: o.ID, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(total, "\n", titlesText(items))
	}
	want := "4\nWidget/Acme Software 3 4 3[1.0:2 2.0:1 3.0:1]\nOnly on 0/- 1 1 1[-:1]\nOnly on 1/- 1 1 1[-:1]\nOnly on 2/- 1 1 1[-:1]\n"
	upgradeKeeps(t, s, s.UndoMigration019ForTest, list, want)
	if bad, err := s.CounterMismatchesForTest(ctx, o.ID); err != nil || len(bad) > 0 {
		t.Fatalf("counters: %v %v", bad, err)
	}

	// Migration 040 (SQLite: endpoint_software's foreign keys replaced by a
	// cascade trigger) keeps the installations, and a deleted endpoint's
	// go with it.
	upgradeKeeps(t, s, s.UndoMigration040ForTest, list, want)
	if err := s.DeleteEndpoint(ctx, &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: "endpoint.delete", TargetType: "endpoint"},
		o.ID, ids[0], now); err != nil {
		t.Fatal(err)
	}
	if got, want := list(), "3\nWidget/Acme Software 2 2 2[1.0:1 3.0:1]\nOnly on 1/- 1 1 1[-:1]\nOnly on 2/- 1 1 1[-:1]\n"; got != want {
		t.Fatalf("after a deletion:\n%s\nwant:\n%s", got, want)
	}
	if bad, err := s.CounterMismatchesForTest(ctx, o.ID); err != nil || len(bad) > 0 {
		t.Fatalf("counters after a deletion: %v %v", bad, err)
	}
}
