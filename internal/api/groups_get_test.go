package api_test

import (
	"net/http"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
)

// TestGetGroup covers GET /api/v1/groups/{id} (patchd addition): the group
// as listed, built-in ones included; 403 without endpoints.view; 404 for
// another organization's group and an unknown id.
func TestGetGroup(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	e.Enroll("gg-1", "web-01", "linux")
	e.Enroll("gg-2", "db-01", "linux")
	id := createGroup(t, e.Admin, apiv1.GroupBody{Name: ptr("Web"), Description: ptr("front ends"),
		Rules: &[]apiv1.GroupRule{{Field: "hostname", Op: "startsWith", Value: "web"}}, OfflineAlertMinutes: intp(30)})

	viewer := e.Client(e.Org, perm.ReadOnly)
	list, err := viewer.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, listed := range list.Items {
		got, err := viewer.GetGroup(ctx, listed.ID)
		if err != nil || got.ID != listed.ID || got.Name != listed.Name || got.Members != listed.Members || got.System != listed.System ||
			got.Kind != listed.Kind || len(got.Rules) != len(listed.Rules) {
			t.Errorf("get %s: %+v %v, listed %+v", listed.ID, got, err, listed)
		}
	}
	got, err := viewer.GetGroup(ctx, id)
	if err != nil || got.Name != "Web" || got.Members != 1 || len(got.Rules) != 1 || got.Rules[0].Value != "web" ||
		got.OfflineAlertMinutes == nil || *got.OfflineAlertMinutes != 30 || got.Description == nil {
		t.Fatalf("get: %+v %v", got, err)
	}

	blind := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.ReportsView))
	wantStatus(t, errOf(blind.GetGroup(ctx, id)), http.StatusForbidden, "get without endpoints.view")
	other := e.Client(e.NewOrg("Other "+apitest.NewName()), perm.All)
	wantStatus(t, errOf(other.GetGroup(ctx, id)), http.StatusNotFound, "other organization")
	wantStatus(t, errOf(viewer.GetGroup(ctx, "no-such-group")), http.StatusNotFound, "unknown id")
}
