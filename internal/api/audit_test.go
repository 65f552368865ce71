package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

func TestAuditTrail(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	other := e.NewOrg("Other")
	// 7 entries of two actors an hour apart, and one of another organization.
	for i := range 7 {
		actor, action := "api:bot", "group.create"
		if i%2 == 1 {
			actor, action = "user:alice@example.com", "script.delete"
		}
		en := &store.AuditEntry{OrgID: e.Org.ID, At: base.Add(time.Duration(i) * time.Hour), Actor: actor, Action: action, TargetType: "x",
			TargetID: "t" + string(rune('0'+i)), Summary: map[string]any{"i": i}}
		if err := e.Store.Audited(ctx, en, func(*store.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Store.Audited(ctx, &store.AuditEntry{OrgID: other.ID, At: base, Actor: "api:bot", Action: "group.create", TargetType: "x"},
		func(*store.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	viewer := e.Client(e.Org, perm.ReadOnly)
	until := base.Add(7 * time.Hour)

	// Newest first, in pages; total counts every match.
	page, err := viewer.ListAudit(ctx, client.AuditQuery{Since: base, Until: until, PageQuery: client.PageQuery{Limit: 3, Offset: 1}})
	if err != nil || page.Total != 7 || len(page.Items) != 3 || page.Limit != 3 || page.Offset != 1 || page.Items[0].TargetID == nil ||
		*page.Items[0].TargetID != "t5" || !page.Items[0].At.Equal(base.Add(5*time.Hour)) || page.Items[0].Summary["i"] != float64(5) {
		t.Fatalf("page: %+v %v", page, err)
	}
	var all []string
	for en, err := range viewer.Audit(ctx, client.AuditQuery{Actor: "api:bot", Since: base, Until: until, PageQuery: client.PageQuery{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, *en.TargetID)
	}
	if got := joinStrings(all); got != "t6,t4,t2,t0" {
		t.Fatalf("walk of api:bot: %s", got)
	}
	for _, c := range []struct {
		q    client.AuditQuery
		want int
	}{
		{client.AuditQuery{Action: "script.delete", Since: base, Until: until}, 3},
		{client.AuditQuery{Since: base.Add(2 * time.Hour), Until: base.Add(4 * time.Hour)}, 2}, // since inclusive, until exclusive
		{client.AuditQuery{Actor: "user:alice@example.com", Action: "group.create"}, 0},
	} {
		if p, err := viewer.ListAudit(ctx, c.q); err != nil || p.Total != c.want {
			t.Errorf("%+v: total %d, want %d (%v)", c.q, p.Total, c.want, err)
		}
	}
	// A date alone is midnight UTC.
	tok := tokenOf(t, viewer)
	if a := rawCall(t, e, http.MethodGet, "/api/v1/audit?since=2026-03-01&until=2026-03-02&action=group.create", tok, nil); a.status != 200 ||
		!contains(a.body, `"total":4`) {
		t.Errorf("date bounds: %d %s", a.status, a.body)
	}
	// API writes show up as api:<credential name>.
	cred, admin := e.CredentialClient(e.Org, perm.All)
	if _, err := admin.CreateScript(ctx, scriptBody("audited")); err != nil {
		t.Fatal(err)
	}
	if p, err := viewer.ListAudit(ctx, client.AuditQuery{Actor: "api:" + cred.Name}); err != nil || p.Total != 1 || p.Items[0].Action != "script.create" {
		t.Fatalf("the API's own write: %+v %v", p, err)
	}

	// Malformed filters are 400 and name the parameter.
	for _, q := range []string{"since=yesterday", "until=2026-13-01", "since=2026-03-02&until=2026-03-01", "limit=ten", "offset=-1"} {
		if a := rawCall(t, e, http.MethodGet, "/api/v1/audit?"+q, tok, nil); a.status != http.StatusBadRequest || a.code != "invalid_request" {
			t.Errorf("%s: %d %s", q, a.status, a.body)
		}
	}
	// Another organization sees only its own entries; a role without reports.view gets 403.
	if p, err := e.Client(other, perm.All).ListAudit(ctx, client.AuditQuery{Since: base, Until: until}); err != nil || p.Total != 1 {
		t.Errorf("other org: %+v %v", p, err)
	}
	wantStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.EndpointsView|perm.AutomationsManage)).ListAudit(ctx, client.AuditQuery{})), http.StatusForbidden, "without reports.view")
}
