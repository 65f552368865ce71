package api_test

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"testing"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

type grpFleet struct {
	berlin, paris, db, mac *apitest.Agent
}

func newGrpFleet(t *testing.T, e *apitest.Env) grpFleet {
	f := grpFleet{berlin: e.Enroll("g-1", "WS-Berlin-01", "windows"), paris: e.Enroll("g-2", "ws-paris-02", "windows"),
		db: e.Enroll("g-3", "srv-db-01", "linux"), mac: e.Enroll("g-4", "mac-01", "macos")}
	inv := func(ag *apitest.Agent, host, os, domain, typ string) {
		doc := apitest.Sample(host, ag.Platform)
		doc.System.OS, doc.System.Type = sp(os), typ
		if domain != "" {
			doc.System.Domain = sp(domain)
		}
		ag.MustInventory(doc)
	}
	inv(f.berlin, "WS-Berlin-01", "Windows 11 Pro", "corp.example", "workstation")
	inv(f.paris, "ws-paris-02", "Windows 10 Enterprise", "corp.example", "workstation")
	inv(f.db, "srv-db-01", "Debian GNU/Linux 12", "", "server")
	inv(f.mac, "mac-01", "macOS Sonoma", "", "workstation")
	return f
}

func createGroup(t *testing.T, c *client.Client, body apiv1.GroupBody) string {
	t.Helper()
	out, err := c.CreateGroup(context.Background(), body)
	if err != nil {
		t.Fatalf("create %+v: %v", body, err)
	}
	if !out.OK || out.Group.ID == "" || body.Name == nil || out.Group.Name != *body.Name {
		t.Fatalf("create: %+v", out)
	}
	return out.Group.ID
}

func groupByID(t *testing.T, c *client.Client, id string) apiv1.Group {
	t.Helper()
	list, err := c.ListGroups(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if list.Total != len(list.Items) {
		t.Fatalf("total %d, %d items", list.Total, len(list.Items))
	}
	for _, g := range list.Items {
		if g.ID == id {
			return g
		}
	}
	t.Fatalf("group %s not listed", id)
	return apiv1.Group{}
}

// members checks that the listed member count agrees with the member ids
// and answers the ids.
func members(t *testing.T, e *apitest.Env, id string) []string {
	t.Helper()
	ids, err := e.Store.GroupMemberIDs(context.Background(), e.Org.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if g := groupByID(t, e.Admin, id); g.Members != len(ids) {
		t.Fatalf("group %s lists %d members, has %d", g.Name, g.Members, len(ids))
	}
	return ids
}

func sameIDs(got []string, want ...*apitest.Agent) bool {
	w := make([]string, len(want))
	for i, a := range want {
		w[i] = a.ID
	}
	sort.Strings(w)
	g := slices.Clone(got)
	sort.Strings(g)
	return slices.Equal(g, w)
}

func rule(field, op, value string) apiv1.GroupRule {
	return apiv1.GroupRule{Field: field, Op: op, Value: value}
}

func ptr[T any](v T) *T { return &v }

func TestGroupBuiltins(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newGrpFleet(t, e)
	list, err := e.Admin.ListGroups(ctx)
	if err != nil || list.Total != 2 {
		t.Fatalf("%+v %v", list, err)
	}
	all, recent := list.Items[0], list.Items[1]
	if all.Name != "All endpoints" || !all.System || all.Members != 4 || recent.Name != "New endpoints" || !recent.System || recent.Members != 4 {
		t.Fatalf("built-ins: %+v", list.Items)
	}
	allID, err := e.Store.BuiltinGroupID(ctx, e.Org.ID, "all")
	if err != nil || allID != all.ID {
		t.Fatalf("BuiltinGroupID all: %s %v", allID, err)
	}
	if newID, err := e.Store.BuiltinGroupID(ctx, e.Org.ID, "new"); err != nil || newID != recent.ID {
		t.Fatalf("BuiltinGroupID new: %s %v", newID, err)
	}
	if ids := members(t, e, all.ID); !sameIDs(ids, f.berlin, f.paris, f.db, f.mac) {
		t.Fatalf("all members %v", ids)
	}
	if ids := members(t, e, recent.ID); len(ids) != 4 {
		t.Fatalf("new members %v", ids)
	}
	// Built-in groups refuse a new name, criteria, members and deletion.
	for _, body := range []apiv1.GroupBody{
		{Name: ptr("Everything")},
		{Rules: &[]apiv1.GroupRule{rule("hostname", "contains", "ws")}},
		{ExcludeRules: &[]apiv1.GroupRule{rule("hostname", "contains", "ws")}},
		{MachineIDs: &[]string{f.berlin.ID}},
		{MatchAll: ptr(false)},
	} {
		for _, id := range []string{all.ID, recent.ID} {
			_, err := e.Admin.PatchGroup(ctx, id, body)
			var ce *client.Error
			if !client.IsStatus(err, http.StatusConflict) || !asErr(err, &ce) || ce.Code != "builtin_group" {
				t.Fatalf("patch built-in with %+v: %v", body, err)
			}
		}
	}
	for _, id := range []string{all.ID, recent.ID} {
		mustStatus(t, e.Admin.DeleteGroup(ctx, id), http.StatusConflict, "delete built-in")
	}
	// Alert settings, a description and the same name are accepted.
	if _, err := e.Admin.PatchGroup(ctx, all.ID, apiv1.GroupBody{Name: ptr("All endpoints"), Description: ptr("every computer"),
		OfflineAlertMinutes: ptr(30), OnlineAlert: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if g := groupByID(t, e.Admin, all.ID); g.OfflineAlertMinutes == nil || *g.OfflineAlertMinutes != 30 || !g.OnlineAlert ||
		g.Description == nil || *g.Description != "every computer" || g.Members != 4 {
		t.Fatalf("built-in after patch: %+v", g)
	}
}

func TestGroupRuleOps(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newGrpFleet(t, e)
	if err := e.Admin.PatchEndpoint(ctx, f.berlin.ID, apiv1.EndpointPatch{Attributes: map[string]string{"attr3": "Finance", "attr30": "yes"}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		body  apiv1.GroupBody
		want  []*apitest.Agent
		extra string
	}{
		{"contains", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("hostname", "contains", "BERLIN")}}, []*apitest.Agent{f.berlin}, ""},
		{"notContains", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("hostname", "notContains", "ws-")}}, []*apitest.Agent{f.db, f.mac}, ""},
		{"equals", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("platform", "equals", "WINDOWS")}}, []*apitest.Agent{f.berlin, f.paris}, ""},
		{"notEquals", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("type", "notEquals", "workstation")}}, []*apitest.Agent{f.db}, ""},
		{"startsWith", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("os", "startsWith", "windows 1")}}, []*apitest.Agent{f.berlin, f.paris}, ""},
		{"endsWith", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("osVersion", "endsWith", ".0")}}, []*apitest.Agent{f.berlin, f.paris, f.db, f.mac}, ""},
		{"isTrue attribute", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("attr30", "isTrue", "")}}, []*apitest.Agent{f.berlin}, ""},
		{"isFalse attribute", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("attr30", "isFalse", "")}}, []*apitest.Agent{f.paris, f.db, f.mac}, ""},
		{"attribute equals", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("attr3", "equals", "finance")}}, []*apitest.Agent{f.berlin}, ""},
		{"domain", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("domain", "equals", "corp.example")}}, []*apitest.Agent{f.berlin, f.paris}, ""},
		{"arch", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("arch", "equals", "amd64")}}, []*apitest.Agent{f.berlin, f.paris, f.db, f.mac}, ""},
		{"manufacturer", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("manufacturer", "startsWith", "dell")}}, []*apitest.Agent{f.berlin, f.paris, f.db, f.mac}, ""},
		{"agentVersion", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("agentVersion", "equals", "1.0.0")}}, []*apitest.Agent{f.berlin, f.paris, f.db, f.mac}, ""},
		{"field name case", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("HostName", "endsWith", "-01")}}, []*apitest.Agent{f.berlin, f.db, f.mac}, ""},
		{"matchAll all", apiv1.GroupBody{MatchAll: ptr(true), Rules: &[]apiv1.GroupRule{rule("platform", "equals", "windows"), rule("os", "contains", "11")}},
			[]*apitest.Agent{f.berlin}, ""},
		{"matchAll any", apiv1.GroupBody{MatchAll: ptr(false), Rules: &[]apiv1.GroupRule{rule("platform", "equals", "linux"), rule("platform", "equals", "macos")}},
			[]*apitest.Agent{f.db, f.mac}, ""},
		{"exclude", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("platform", "equals", "windows")}, ExcludeRules: &[]apiv1.GroupRule{rule("hostname", "contains", "paris")}},
			[]*apitest.Agent{f.berlin}, ""},
		{"only exclude", apiv1.GroupBody{ExcludeRules: &[]apiv1.GroupRule{rule("type", "equals", "server")}}, []*apitest.Agent{f.berlin, f.paris, f.mac}, ""},
	} {
		c.body.Name = ptr("group " + c.name)
		id := createGroup(t, e.Admin, c.body)
		if g := groupByID(t, e.Admin, id); g.Kind != "DYNAMIC" || g.System {
			t.Fatalf("%s: %+v", c.name, g)
		}
		if ids := members(t, e, id); !sameIDs(ids, c.want...) {
			t.Fatalf("%s: members %v", c.name, ids)
		}
	}
}

func TestGroupMembershipFollowsChanges(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newGrpFleet(t, e)
	finance := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Finance"), Rules: &[]apiv1.GroupRule{rule("attr5", "equals", "finance")}})
	lyon := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Lyon"), Rules: &[]apiv1.GroupRule{rule("hostname", "contains", "lyon")}})
	reboot := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Reboot"), Rules: &[]apiv1.GroupRule{rule("reboot", "isTrue", "")}})
	subnet := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Subnet"), Rules: &[]apiv1.GroupRule{rule("ipAddresses", "startsWith", "10.9.")}})
	for _, id := range []string{finance, lyon, reboot, subnet} {
		if ids := members(t, e, id); len(ids) != 0 {
			t.Fatalf("members before changes: %v", ids)
		}
	}

	// A PATCH of attributes.
	if err := e.Admin.PatchEndpoint(ctx, f.paris.ID, apiv1.EndpointPatch{Attributes: map[string]string{"attr5": "Finance"}}); err != nil {
		t.Fatal(err)
	}
	if ids := members(t, e, finance); !sameIDs(ids, f.paris) {
		t.Fatalf("finance after PATCH: %v", ids)
	}
	// A new inventory with another hostname.
	doc := apitest.Sample("ws-lyon-07", "windows")
	f.berlin.MustInventory(doc)
	if ids := members(t, e, lyon); !sameIDs(ids, f.berlin) {
		t.Fatalf("lyon after inventory: %v", ids)
	}
	doc = apitest.Sample("ws-berlin-01", "windows")
	f.berlin.MustInventory(doc)
	if ids := members(t, e, lyon); len(ids) != 0 {
		t.Fatalf("lyon after rename back: %v", ids)
	}
	// A check-in reporting a pending reboot and new addresses.
	if _, ans := f.mac.Checkin(0, agentproto.CheckinRequest{PendingReboot: true, IPAddresses: []string{"10.9.0.4"}, AgentVersion: "1.0.0"}); ans.Status != http.StatusOK {
		t.Fatalf("check-in: %d %s", ans.Status, ans.Body)
	}
	if err := e.Server.Presence().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ids := members(t, e, reboot); !sameIDs(ids, f.mac) {
		t.Fatalf("reboot after check-in: %v", ids)
	}
	if ids := members(t, e, subnet); !sameIDs(ids, f.mac) {
		t.Fatalf("subnet after check-in: %v", ids)
	}
	// A newly enrolled endpoint joins at once.
	newcomer := e.Enroll("g-5", "ws-lyon-99", "windows")
	if ids := members(t, e, lyon); !sameIDs(ids, newcomer) {
		t.Fatalf("lyon after enrollment: %v", ids)
	}
	// A removed endpoint leaves every group.
	if err := e.Admin.DeleteEndpoint(ctx, f.mac.ID); err != nil {
		t.Fatal(err)
	}
	if ids := members(t, e, reboot); len(ids) != 0 {
		t.Fatalf("reboot after delete: %v", ids)
	}
	// Changing the rules recomputes the members.
	if _, err := e.Admin.PatchGroup(ctx, lyon, apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("hostname", "startsWith", "ws-")}}); err != nil {
		t.Fatal(err)
	}
	if ids := members(t, e, lyon); !sameIDs(ids, f.berlin, f.paris, newcomer) {
		t.Fatalf("lyon after new rules: %v", ids)
	}
}

func TestGroupStaticAndPatch(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newGrpFleet(t, e)
	id := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Pilot"), Description: ptr("first ring"), MachineIDs: &[]string{f.berlin.ID, f.db.ID, f.db.ID},
		OfflineAlertMinutes: ptr(15)})
	g := groupByID(t, e.Admin, id)
	if g.Kind != "STATIC" || g.Members != 2 || g.OfflineAlertMinutes == nil || *g.OfflineAlertMinutes != 15 || g.OnlineAlert {
		t.Fatalf("static group: %+v", g)
	}
	// Static members do not follow rules or inventory.
	f.berlin.MustInventory(apitest.Sample("renamed", "windows"))
	if ids := members(t, e, id); !sameIDs(ids, f.berlin, f.db) {
		t.Fatalf("static members %v", ids)
	}
	// PATCH changes only what it names; null clears the offline alert.
	if err := e.Admin.Do(ctx, http.MethodPatch, "/api/v1/groups/"+id, nil, map[string]any{"offlineAlertMinutes": nil, "onlineAlert": true}, nil); err != nil {
		t.Fatal(err)
	}
	g = groupByID(t, e.Admin, id)
	if g.OfflineAlertMinutes != nil || !g.OnlineAlert || g.Name != "Pilot" || g.Members != 2 || g.Description == nil {
		t.Fatalf("after alert patch: %+v", g)
	}
	out, err := e.Admin.PatchGroup(ctx, id, apiv1.GroupBody{Name: ptr("Pilot ring"), MachineIDs: &[]string{f.paris.ID}})
	if err != nil || out.Group.Name != "Pilot ring" || out.Group.ID != id {
		t.Fatalf("%+v %v", out, err)
	}
	if ids := members(t, e, id); !sameIDs(ids, f.paris) {
		t.Fatalf("after new machine list: %v", ids)
	}
	// Rules make it dynamic; machine ids make it static again.
	if _, err := e.Admin.PatchGroup(ctx, id, apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("platform", "equals", "linux")}}); err != nil {
		t.Fatal(err)
	}
	if g := groupByID(t, e.Admin, id); g.Kind != "DYNAMIC" || len(g.Rules) != 1 || g.Members != 1 {
		t.Fatalf("made dynamic: %+v", g)
	}
	if _, err := e.Admin.PatchGroup(ctx, id, apiv1.GroupBody{MachineIDs: &[]string{f.mac.ID, f.paris.ID}}); err != nil {
		t.Fatal(err)
	}
	if g := groupByID(t, e.Admin, id); g.Kind != "STATIC" || len(g.Rules) != 0 || g.Members != 2 {
		t.Fatalf("made static: %+v", g)
	}
	// Delete; then it is gone.
	if err := e.Admin.DeleteGroup(ctx, id); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, e.Admin.DeleteGroup(ctx, id), http.StatusNotFound, "second delete")
	if _, err := e.Store.GroupMemberIDs(ctx, e.Org.ID, id); err == nil {
		t.Fatal("members of a deleted group")
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "group.delete"})
	if err != nil || len(entries) != 1 || entries[0].TargetID != id {
		t.Fatalf("audit: %+v %v", entries, err)
	}
}

func TestGroupValidation(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newGrpFleet(t, e)
	createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Taken")})
	for _, c := range []struct {
		name   string
		body   apiv1.GroupBody
		fields []string
	}{
		{"missing name", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("hostname", "contains", "a")}}, []string{"name"}},
		{"blank name", apiv1.GroupBody{Name: ptr("  ")}, []string{"name"}},
		{"unknown op", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("hostname", "matches", "a")}}, []string{"rules[0].op"}},
		{"missing op", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("hostname", "", "a")}}, []string{"rules[0].op"}},
		{"field shape", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("host name!", "equals", "a")}}, []string{"rules[0].field"}},
		{"unknown field", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("favouriteColour", "equals", "a")}}, []string{"rules[0].field"}},
		{"attr31", apiv1.GroupBody{Name: ptr("x"), ExcludeRules: &[]apiv1.GroupRule{rule("attr31", "equals", "a")}}, []string{"excludeRules[0].field"}},
		{"attr0", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("attr0", "equals", "a")}}, []string{"rules[0].field"}},
		{"missing field", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("", "equals", "a")}}, []string{"rules[0].field"}},
		{"contains nothing", apiv1.GroupBody{Name: ptr("x"), Rules: &[]apiv1.GroupRule{rule("os", "contains", "")}}, []string{"rules[0].value"}},
		{"unknown machine ids", apiv1.GroupBody{Name: ptr("x"), MachineIDs: &[]string{f.berlin.ID, "nope", "nada"}}, []string{"machineIds[1]", "machineIds[2]"}},
		{"static and dynamic", apiv1.GroupBody{Name: ptr("x"), MachineIDs: &[]string{f.berlin.ID}, Rules: &[]apiv1.GroupRule{rule("os", "equals", "a")}}, []string{"machineIds"}},
		{"offline minutes", apiv1.GroupBody{Name: ptr("x"), OfflineAlertMinutes: ptr(0)}, []string{"offlineAlertMinutes"}},
		{"taken name", apiv1.GroupBody{Name: ptr("taken")}, []string{"name"}},
		{"every problem at once", apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("attr99", "like", "")}}, []string{"name", "rules[0].field", "rules[0].op"}},
	} {
		_, err := e.Admin.CreateGroup(ctx, c.body)
		wantValidation(t, err, c.fields...)
	}
	id := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Static")})
	_, err := e.Admin.PatchGroup(ctx, id, apiv1.GroupBody{MachineIDs: &[]string{"0000"}})
	wantValidation(t, err, "machineIds[0]")
	_, err = e.Admin.PatchGroup(ctx, id, apiv1.GroupBody{Name: ptr("Taken")})
	wantValidation(t, err, "name")
	_, err = e.Admin.PatchGroup(ctx, id, apiv1.GroupBody{Rules: &[]apiv1.GroupRule{rule("attr31", "equals", "x")}})
	wantValidation(t, err, "rules[0].field")
	if list, _ := e.Admin.ListGroups(ctx); list.Total != 4 {
		t.Fatalf("refused writes created groups: %+v", list)
	}
}

func TestGroupPermissionsAndIsolation(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newGrpFleet(t, e)
	id := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Mine"), MachineIDs: &[]string{f.berlin.ID}})

	viewer := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.EndpointsView))
	if list, err := viewer.ListGroups(ctx); err != nil || list.Total != 3 {
		t.Fatalf("viewer list: %+v %v", list, err)
	}
	mustStatus(t, errOf(viewer.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("No")})), http.StatusForbidden, "create without endpoints.manage")
	mustStatus(t, errOf(viewer.PatchGroup(ctx, id, apiv1.GroupBody{Name: ptr("No")})), http.StatusForbidden, "patch without endpoints.manage")
	mustStatus(t, viewer.DeleteGroup(ctx, id), http.StatusForbidden, "delete without endpoints.manage")
	blind := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.UpdatesView))
	mustStatus(t, errOf(blind.ListGroups(ctx)), http.StatusForbidden, "list without endpoints.view")

	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	list, err := oc.ListGroups(ctx)
	if err != nil || list.Total != 2 || list.Items[0].Members != 0 {
		t.Fatalf("other organization's groups: %+v %v", list, err)
	}
	mustStatus(t, errOf(oc.PatchGroup(ctx, id, apiv1.GroupBody{Name: ptr("Stolen")})), http.StatusNotFound, "patch across organizations")
	mustStatus(t, oc.DeleteGroup(ctx, id), http.StatusNotFound, "delete across organizations")
	mustStatus(t, errOf(oc.PatchGroup(ctx, "no-such-group", apiv1.GroupBody{Name: ptr("x")})), http.StatusNotFound, "patch unknown")
	// Another organization's endpoints are unknown machine ids there.
	_, err = oc.CreateGroup(ctx, apiv1.GroupBody{Name: ptr("Theirs"), MachineIDs: &[]string{f.berlin.ID}})
	wantValidation(t, err, "machineIds[0]")
	// A dynamic group there sees none of this organization's endpoints.
	theirs := createGroup(t, oc, apiv1.GroupBody{Name: ptr("Windows"), Rules: &[]apiv1.GroupRule{rule("platform", "equals", "windows")}})
	if ids, err := e.Store.GroupMemberIDs(ctx, other.ID, theirs); err != nil || len(ids) != 0 {
		t.Fatalf("cross-organization members: %v %v", ids, err)
	}
	if _, err := e.Store.GroupMemberIDs(ctx, e.Org.ID, theirs); err == nil {
		t.Fatal("GroupMemberIDs answered another organization's group")
	}
	if g := groupByID(t, e.Admin, id); g.Name != "Mine" {
		t.Fatalf("group changed from another organization: %+v", g)
	}
}
