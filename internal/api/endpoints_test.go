package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

func str(s string) *string { return &s }

func TestListEndpointsPagingAndSearch(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	for i := 0; i < 12; i++ {
		e.Enroll(fmt.Sprintf("uid-%d", i), fmt.Sprintf("HOST-%02d", i), "windows")
	}
	page, err := e.Admin.ListEndpoints(ctx, client.EndpointQuery{PageQuery: client.PageQuery{Limit: 5, Offset: 10}})
	if err != nil || page.Total != 12 || len(page.Items) != 2 || page.Limit != 5 || page.Offset != 10 || page.Items[0].Hostname != "HOST-10" {
		t.Fatalf("page 3: %+v %v", page, err)
	}
	var all []string
	for ep, err := range e.Admin.Endpoints(ctx, client.EndpointQuery{PageQuery: client.PageQuery{Limit: 5}}) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ep.Hostname)
	}
	if len(all) != 12 || all[0] != "HOST-00" || all[11] != "HOST-11" {
		t.Fatalf("walk: %v", all)
	}
	if page, _ := e.Admin.ListEndpoints(ctx, client.EndpointQuery{Q: "host-1"}); page.Total != 2 {
		t.Fatalf("q=host-1: %d", page.Total)
	}
	// The display name is searched too, case-insensitively.
	if err := e.Admin.PatchEndpoint(ctx, page.Items[0].ID, apiv1.EndpointPatch{Name: str("Reception PC")}); err != nil {
		t.Fatal(err)
	}
	if page, _ := e.Admin.ListEndpoints(ctx, client.EndpointQuery{Q: "RECEPTION"}); page.Total != 1 || page.Items[0].Name != "Reception PC" {
		t.Fatalf("q on display name: %+v", page)
	}
	if page, _ := e.Admin.ListEndpoints(ctx, client.EndpointQuery{Q: "%"}); page.Total != 0 {
		t.Fatalf("q=%% matched %d: LIKE wildcards must be literal", page.Total)
	}
	for q, want := range map[string]int{"limit=1000": 500, "limit=0": 1, "limit=-5": 1} {
		r, out := call(t, e, http.MethodGet, "/api/v1/endpoints?"+q, tokenOf(t, e.Admin))
		if r.StatusCode != 200 || out["limit"] != float64(want) {
			t.Errorf("%s: %d limit %v, want %d", q, r.StatusCode, out["limit"], want)
		}
	}
	for _, q := range []string{"limit=ten", "offset=-1", "offset=x"} {
		r, out := call(t, e, http.MethodGet, "/api/v1/endpoints?"+q, tokenOf(t, e.Admin))
		if r.StatusCode != 400 || out["error"] != "invalid_request" {
			t.Errorf("%s: %d %v", q, r.StatusCode, out)
		}
	}
	// Another organization sees none of them.
	other := e.Client(e.NewOrg("Other"), perm.All)
	if page, err := other.ListEndpoints(ctx, client.EndpointQuery{}); err != nil || page.Total != 0 {
		t.Fatalf("other org: %+v %v", page, err)
	}
}

// tokenOf answers a token c was given.
func tokenOf(t *testing.T, c *client.Client) string {
	t.Helper()
	tok, _, err := c.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestGetPatchDeleteEndpoint(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.EnrollSample("uid-1", "ws-01", "windows")
	other := e.NewOrg("Other")
	otherAdmin := e.Client(other, perm.All)
	readOnly := e.Client(e.Org, perm.ReadOnly)

	d, err := e.Admin.GetEndpoint(ctx, ag.ID)
	if err != nil || d.Name != "ws-01" || len(d.Disks) != 1 || len(d.Software) != 3 || len(d.MissingUpdates) != 2 || d.Type != "workstation" {
		t.Fatalf("detail: %+v %v", d, err)
	}
	for _, c := range []*client.Client{otherAdmin} {
		mustStatus(t, errOf(c.GetEndpoint(ctx, ag.ID)), 404, "other org get")
		mustStatus(t, c.PatchEndpoint(ctx, ag.ID, apiv1.EndpointPatch{Name: str("x")}), 404, "other org patch")
		mustStatus(t, c.DeleteEndpoint(ctx, ag.ID), 404, "other org delete")
	}
	mustStatus(t, errOf(e.Admin.GetEndpoint(ctx, "nope")), 404, "unknown id")
	mustStatus(t, readOnly.PatchEndpoint(ctx, ag.ID, apiv1.EndpointPatch{Name: str("x")}), 403, "read-only patch")
	mustStatus(t, readOnly.DeleteEndpoint(ctx, ag.ID), 403, "read-only delete")

	err = e.Admin.PatchEndpoint(ctx, ag.ID, apiv1.EndpointPatch{Name: str("Front desk"), Comment: str("by the door"),
		Attributes: map[string]string{"attr1": "Berlin", "attr30": "rack 4"}})
	if err != nil {
		t.Fatal(err)
	}
	d, _ = e.Admin.GetEndpoint(ctx, ag.ID)
	if d.Name != "Front desk" || d.Hostname != "ws-01" || *d.Comment != "by the door" || d.Attributes["attr1"] != "Berlin" || d.Attributes["attr30"] != "rack 4" {
		t.Fatalf("after patch: %+v", d.Endpoint)
	}
	// Attributes merge; an empty value removes one; an empty name falls back to the hostname.
	if err := e.Admin.PatchEndpoint(ctx, ag.ID, apiv1.EndpointPatch{Name: str(""), Attributes: map[string]string{"attr1": "", "attr2": "x"}}); err != nil {
		t.Fatal(err)
	}
	d, _ = e.Admin.GetEndpoint(ctx, ag.ID)
	if d.Name != "ws-01" || d.Attributes["attr1"] != "" || d.Attributes["attr2"] != "x" || d.Attributes["attr30"] != "rack 4" || *d.Comment != "by the door" {
		t.Fatalf("after second patch: %+v", d.Endpoint)
	}
	// A key beyond attr30 refuses the whole request and changes nothing.
	err = e.Admin.PatchEndpoint(ctx, ag.ID, apiv1.EndpointPatch{Name: str("changed"), Attributes: map[string]string{"attr31": "x", "attr2": "y"}})
	var apiErr *client.Error
	if !asErr(err, &apiErr) || apiErr.Status != 422 || apiErr.Code != "validation_failed" || len(apiErr.Details) != 1 || apiErr.Details[0].Field != "attributes.attr31" {
		t.Fatalf("attr31: %v", err)
	}
	for _, bad := range []string{"attr0", "attr", "ATTR1", "attr01", "custom"} {
		if err := e.Admin.PatchEndpoint(ctx, ag.ID, apiv1.EndpointPatch{Attributes: map[string]string{bad: "x"}}); !client.IsStatus(err, 422) {
			t.Errorf("attribute key %q: %v", bad, err)
		}
	}
	if d2, _ := e.Admin.GetEndpoint(ctx, ag.ID); d2.Name != "ws-01" || d2.Attributes["attr2"] != "x" {
		t.Fatalf("refused patch changed something: %+v", d2.Endpoint)
	}
	tok := tokenOf(t, e.Admin)
	for body, code := range map[string]int{`{"name":`: 400, `[1,2]`: 400, ``: 400, `{"name":5}`: 422, `{"attributes":"x"}`: 422} {
		if a := rawCall(t, e, http.MethodPatch, "/api/v1/endpoints/"+ag.ID, tok, []byte(body)); a.status != code {
			t.Errorf("body %q: %d, want %d", body, a.status, code)
		}
	}

	// The writes are in the Audit Trail under api:<credential name>.
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "endpoint.update"})
	if err != nil || len(entries) != 2 || !strings.HasPrefix(entries[0].Actor, "api:cred-") || entries[0].TargetID != ag.ID {
		t.Fatalf("audit: %+v %v", entries, err)
	}

	if err := e.Admin.DeleteEndpoint(ctx, ag.ID); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, errOf(e.Admin.GetEndpoint(ctx, ag.ID)), 404, "after delete")
	mustStatus(t, e.Admin.DeleteEndpoint(ctx, ag.ID), 404, "second delete")
	if sw, _ := e.Admin.ListSoftware(ctx, client.SoftwareQuery{}); sw.Total != 0 {
		t.Fatalf("software of a removed endpoint still listed: %d", sw.Total)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "endpoint.delete"}); len(entries) != 1 {
		t.Fatalf("delete not audited: %+v", entries)
	}
}

func TestSoftwareList(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	var agents []*apitest.Agent
	for i := 0; i < 7; i++ {
		ag := e.Enroll(fmt.Sprintf("uid-%d", i), fmt.Sprintf("ws-%02d", i), "windows")
		doc := apitest.Sample(fmt.Sprintf("ws-%02d", i), "windows")
		// Endpoint i has i extra applications, so titles have uneven counts.
		for j := 0; j < i; j++ {
			v := fmt.Sprintf("1.%d", j)
			doc.Software = append(doc.Software, struct2(fmt.Sprintf("App %c", 'A'+j), v))
		}
		ag.MustInventory(doc)
		agents = append(agents, ag)
	}
	// Expected order: by application name (case-insensitive), then endpoint.
	var want []string
	for ep, err := range e.Admin.Software(ctx, client.SoftwareQuery{PageQuery: client.PageQuery{Limit: 500}}) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ep.Name+"|"+ep.EndpointID)
	}
	if len(want) != 7*3+21 {
		t.Fatalf("all rows: %d", len(want))
	}
	// Every page size and offset agrees with the one-page listing.
	for _, limit := range []int{1, 2, 5, 7, 13} {
		var got []string
		for off := 0; off < len(want); off += limit {
			page, err := e.Admin.ListSoftware(ctx, client.SoftwareQuery{PageQuery: client.PageQuery{Limit: limit, Offset: off}})
			if err != nil || page.Total != len(want) {
				t.Fatalf("limit %d offset %d: total %d %v", limit, off, page.Total, err)
			}
			for _, r := range page.Items {
				got = append(got, r.Name+"|"+r.EndpointID)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("limit %d: paged rows differ\n got %v\nwant %v", limit, got, want)
		}
	}
	if page, _ := e.Admin.ListSoftware(ctx, client.SoftwareQuery{PageQuery: client.PageQuery{Offset: 1000}}); page.Total != len(want) || len(page.Items) != 0 {
		t.Fatalf("beyond the end: %+v", page)
	}
	if page, _ := e.Admin.ListSoftware(ctx, client.SoftwareQuery{Q: "app"}); page.Total != 21 {
		t.Fatalf("q=app: %d", page.Total)
	}
	if page, _ := e.Admin.ListSoftware(ctx, client.SoftwareQuery{Q: "chrome"}); page.Total != 7 || page.Items[0].Name != "Google Chrome" || *page.Items[0].Publisher != "Google LLC" {
		t.Fatalf("q=chrome: %+v", page)
	}
	if page, _ := e.Admin.ListSoftware(ctx, client.SoftwareQuery{EndpointID: agents[6].ID}); page.Total != 9 || page.Items[0].Endpoint != "ws-06" {
		t.Fatalf("endpointId: %+v", page)
	}
	if page, _ := e.Admin.ListSoftware(ctx, client.SoftwareQuery{EndpointID: agents[6].ID, Q: "app", PageQuery: client.PageQuery{Limit: 2, Offset: 4}}); page.Total != 6 || len(page.Items) != 2 {
		t.Fatalf("endpointId and q: %+v", page)
	}
	other := e.Client(e.NewOrg("Other"), perm.All)
	if page, _ := other.ListSoftware(ctx, client.SoftwareQuery{}); page.Total != 0 {
		t.Fatalf("other org sees software: %d", page.Total)
	}
	if page, _ := other.ListSoftware(ctx, client.SoftwareQuery{EndpointID: agents[0].ID}); page.Total != 0 {
		t.Fatalf("other org sees an endpoint's software: %d", page.Total)
	}
	mustStatus(t, errOf(e.Client(e.Org, perm.Set(perm.APIAccess|perm.UpdatesView)).ListSoftware(ctx, client.SoftwareQuery{})), 403, "without endpoints.view")
}

// TestListEndpointsFilters: the patchd-addition filters and order of GET
// /api/v1/endpoints select and sort as the console's list does, a value
// outside those listed answers 400 in the Error shape, and another
// organization's endpoints never match.
func TestListEndpointsFilters(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	e.EnrollSample("uid-w1", "WS-01", "windows")
	e.EnrollSample("uid-w2", "WS-02", "windows")
	e.Enroll("uid-l1", "db-01", "linux")
	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	names := func(q client.EndpointQuery) []string {
		t.Helper()
		page, err := e.Admin.ListEndpoints(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ep := range page.Items {
			out = append(out, ep.Hostname)
		}
		if page.Total != len(out) {
			t.Errorf("%+v: total %d for %d items", q, page.Total, len(out))
		}
		return out
	}
	for _, tc := range []struct {
		q    client.EndpointQuery
		want string
	}{
		{client.EndpointQuery{Platform: "windows"}, "WS-01 WS-02"},
		{client.EndpointQuery{Platform: "windows", Desc: true}, "WS-02 WS-01"},
		{client.EndpointQuery{Sort: "platform"}, "db-01 WS-01 WS-02"},
		{client.EndpointQuery{Missing: "any"}, "WS-01 WS-02"},
		{client.EndpointQuery{Missing: "none"}, "db-01"},
		{client.EndpointQuery{Status: "connected"}, "db-01 WS-01 WS-02"},
		{client.EndpointQuery{NotSeenDays: 1}, ""},
		{client.EndpointQuery{Search: "db-"}, "db-01"},
		{client.EndpointQuery{Q: "ws", Platform: "linux"}, ""},
		{client.EndpointQuery{UpdateKey: "KB5048685"}, "WS-01 WS-02"},
		{client.EndpointQuery{UpdateKey: "KB1"}, ""},
		{client.EndpointQuery{Software: "Google Chrome"}, "WS-01 WS-02"},
		{client.EndpointQuery{Software: "Google Chrome", SoftwareVersion: "131.0.6778.86"}, "WS-01 WS-02"},
		{client.EndpointQuery{Software: "Google Chrome", SoftwareVersion: "1.0"}, ""},
		{client.EndpointQuery{Software: "google chrome"}, ""},
		{client.EndpointQuery{CVE: "CVE-2023-4863"}, ""},
	} {
		if got := strings.Join(names(tc.q), " "); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.q, got, tc.want)
		}
	}
	for _, q := range []string{"status=asleep", "platform=plan9", "missing=some", "sort=secret", "order=up", "pendingReboot=yes", "notSeenDays=0", "softwareVersion=1.0"} {
		r, out := call(t, e, http.MethodGet, "/api/v1/endpoints?"+q, tokenOf(t, e.Admin))
		if desc, _ := out["error_description"].(string); r.StatusCode != 400 || out["error"] != "invalid_request" || desc == "" {
			t.Errorf("%s: %d %v", q, r.StatusCode, out)
		}
	}
	if page, err := oc.ListEndpoints(ctx, client.EndpointQuery{Platform: "windows"}); err != nil || page.Total != 0 {
		t.Errorf("another organization: %+v %v", page, err)
	}
}
