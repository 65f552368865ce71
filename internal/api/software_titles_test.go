package api_test

import (
	"net/http"
	"testing"

	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestListSoftwareTitles: GET /api/v1/software/titles (a patchd addition)
// answers the titles of the caller's organization with endpoint counts, in
// the shape the OpenAPI document gives (the Env's client checks every
// answer), refuses a bad sort or page with a 400, needs endpoints.view, and
// shows another organization nothing of them.
func TestListSoftwareTitles(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	for _, h := range []string{"ws-01", "ws-02"} {
		e.EnrollSample("uid-"+h, h, "windows")
	}
	page, err := e.Admin.ListSoftwareTitles(ctx, client.SoftwareTitleQuery{Sort: "name"})
	if err != nil || page.Total != 3 || len(page.Items) != 3 {
		t.Fatalf("titles: %+v %v", page, err)
	}
	first := page.Items[0]
	if first.Name != "7-Zip 24.08 (x64)" || first.Hosts != 2 || first.Installs != 2 || len(first.Versions) != 1 ||
		*first.Versions[0].Version != "24.08" || first.Versions[0].Hosts != 2 || first.Publisher == nil || *first.Publisher != "Igor Pavlov" {
		t.Fatalf("first title: %+v", first)
	}
	page, err = e.Admin.ListSoftwareTitles(ctx, client.SoftwareTitleQuery{Q: "fire", PageQuery: client.PageQuery{Limit: 1}})
	if err != nil || page.Total != 1 || page.Items[0].Name != "Mozilla Firefox" || page.Limit != 1 {
		t.Fatalf("q=fire: %+v %v", page, err)
	}
	var names []string
	for title, err := range e.Admin.SoftwareTitles(ctx, client.SoftwareTitleQuery{Publisher: "o", PageQuery: client.PageQuery{Limit: 1}}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, title.Name)
	}
	if len(names) != 3 { // Google LLC, Mozilla, Igor Pavlov
		t.Fatalf("walk by publisher: %v", names)
	}
	for _, q := range []string{"sort=installs", "sort=HOSTS", "limit=x", "offset=-1"} {
		r, out := call(t, e, http.MethodGet, "/api/v1/software/titles?"+q, tokenOf(t, e.Admin))
		if r.StatusCode != 400 || out["error"] != "invalid_request" {
			t.Errorf("%s: %d %v", q, r.StatusCode, out)
		}
	}
	other := e.Client(e.NewOrg("Other"), perm.All)
	if page, err := other.ListSoftwareTitles(ctx, client.SoftwareTitleQuery{}); err != nil || page.Total != 0 || len(page.Items) != 0 {
		t.Fatalf("other org: %+v %v", page, err)
	}
	noView := e.Client(e.Org, perm.Set(perm.APIAccess|perm.ReportsView))
	mustStatus(t, errOf(noView.ListSoftwareTitles(ctx, client.SoftwareTitleQuery{})), 403, "without endpoints.view")
}
