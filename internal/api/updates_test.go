package api_test

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/client"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/updates"
)

func sp(s string) *string { return &s }

func kbUpdate(kb, severity, source string) agentproto.Update {
	return agentproto.Update{Title: "Windows update " + kb, KB: sp(kb), Severity: sp(severity), Source: source, Categories: []string{"Security Updates"}}
}

func appUpdate(winget, installed, latest, severity string) agentproto.Update {
	return agentproto.Update{Title: winget, WingetID: sp(winget), Source: updates.SourceApps, Severity: sp(severity), InstalledVersion: sp(installed),
		LatestVersion: sp(latest), Categories: []string{"Application Updates"}}
}

func linuxUpdate(pkg, latest, severity, source string) agentproto.Update {
	return agentproto.Update{Title: pkg + " " + latest, PackageName: sp(pkg), Distro: sp("debian"), LatestVersion: sp(latest),
		InstalledVersion: sp("0.1"), Severity: sp(severity), Source: source}
}

// sendUpdates sends an inventory whose missing updates are ups.
func sendUpdates(ag *apitest.Agent, hostname string, ups ...agentproto.Update) {
	ag.T.Helper()
	doc := apitest.Sample(hostname, ag.Platform)
	doc.Updates = ups
	ag.MustInventory(doc)
}

type updFleet struct {
	win1, win2, lin1 *apitest.Agent
}

func newUpdFleet(t *testing.T, e *apitest.Env) updFleet {
	f := updFleet{win1: e.Enroll("u-win1", "win1", "windows"), win2: e.Enroll("u-win2", "win2", "windows"), lin1: e.Enroll("u-lin1", "lin1", "linux")}
	sendUpdates(f.win1, "win1",
		kbUpdate("KB5048685", "Critical", updates.SourceOSMandatory),
		kbUpdate("KB5050000", "Important", updates.SourceOSOptional),
		kbUpdate("KB5040001", "Low", updates.SourceOSOptional),
		appUpdate("Mozilla.Firefox", "132.0", "133.0.3", "Unspecified"),
		appUpdate("Google.Chrome", "130.0", "131.0.6778.86", "Important"))
	sendUpdates(f.win2, "win2",
		kbUpdate("KB5048685", "Critical", updates.SourceOSMandatory),
		kbUpdate("KB5041111", "Moderate", updates.SourceOSMandatory),
		appUpdate("Mozilla.Firefox", "131.0", "133.0.3", "Unspecified"))
	sendUpdates(f.lin1, "lin1",
		linuxUpdate("openssl", "3.0.15-1~deb12u1", "Important", updates.SourceOSMandatory),
		linuxUpdate("curl", "7.88.1-10+deb12u8", "Moderate", updates.SourceOSOptional))
	return f
}

// allUpdates walks the whole list with the spec's client loop.
func allUpdates(t *testing.T, c *client.Client, q client.UpdateQuery) []apiv1.Update {
	t.Helper()
	var out []apiv1.Update
	for u, err := range c.Updates(context.Background(), q) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func TestUpdatesListFilters(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	f := newUpdFleet(t, e)

	all := allUpdates(t, e.Admin, client.UpdateQuery{})
	if len(all) != 10 {
		t.Fatalf("%d rows, want 10: %+v", len(all), all)
	}
	byKey := map[string]int{}
	for i, u := range all {
		byKey[u.Key]++
		if i > 0 && (all[i-1].Key > u.Key || (all[i-1].Key == u.Key && all[i-1].EndpointID >= u.EndpointID)) {
			t.Fatalf("rows not ordered by key then endpoint at %d: %s/%s after %s/%s", i, u.Key, u.EndpointID, all[i-1].Key, all[i-1].EndpointID)
		}
		if u.Approval != updates.StatusNew || u.DetectedAt == nil || u.ID == "" || u.Endpoint == "" || u.Categories == nil {
			t.Fatalf("row %+v", u)
		}
	}
	for key, n := range map[string]int{"KB5048685": 2, "KB5050000": 1, "Mozilla.Firefox@133.0.3": 2, "Google.Chrome@131.0.6778.86": 1,
		"debian:openssl@3.0.15-1~deb12u1": 1, "debian:curl@7.88.1-10+deb12u8": 1} {
		if byKey[key] != n {
			t.Errorf("key %s: %d rows, want %d (%v)", key, byKey[key], n, byKey)
		}
	}

	// Every combination of the three filters, against the unfiltered rows.
	for _, ep := range []string{"", f.win1.ID, f.win2.ID, f.lin1.ID, "no-such-endpoint"} {
		for _, sev := range append([]string{""}, updates.Severities...) {
			for _, src := range []string{"", "OS", "THIRD_PARTY"} {
				var want []apiv1.Update
				for _, u := range all {
					if (ep == "" || u.EndpointID == ep) && (sev == "" || u.Severity == sev) &&
						(src == "" || (src == "OS") == (u.Source != updates.SourceApps)) {
						want = append(want, u)
					}
				}
				name := fmt.Sprintf("endpoint=%q severity=%q source=%q", ep, sev, src)
				q := client.UpdateQuery{EndpointID: ep, Severity: sev, Source: src}
				page, err := e.Admin.ListUpdates(ctx, q)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if page.Total != len(want) || len(page.Items) != len(want) {
					t.Fatalf("%s: total %d, %d items, want %d", name, page.Total, len(page.Items), len(want))
				}
				for i := range want {
					if page.Items[i].ID != want[i].ID {
						t.Fatalf("%s: row %d is %s, want %s", name, i, page.Items[i].Key, want[i].Key)
					}
				}
				// Paged one row at a time, the rows and the total agree.
				q.Limit = 1
				walked := allUpdates(t, e.Admin, q)
				if len(walked) != len(want) {
					t.Fatalf("%s: walked %d rows, want %d", name, len(walked), len(want))
				}
				for i := range want {
					if walked[i].ID != want[i].ID {
						t.Fatalf("%s: walked row %d differs", name, i)
					}
				}
			}
		}
	}

	// Deep offsets: every window of two rows.
	for off := 0; off <= len(all); off++ {
		page, err := e.Admin.ListUpdates(ctx, client.UpdateQuery{PageQuery: client.PageQuery{Limit: 2, Offset: off}})
		if err != nil {
			t.Fatal(err)
		}
		wantN := min(2, len(all)-off)
		if page.Total != len(all) || len(page.Items) != wantN || page.Offset != off {
			t.Fatalf("offset %d: %+v", off, page)
		}
		for i := range page.Items {
			if page.Items[i].ID != all[off+i].ID {
				t.Fatalf("offset %d row %d differs", off, i)
			}
		}
	}

	// Filter values are checked.
	for _, bad := range []url.Values{{"severity": {"urgent"}}, {"source": {"APPS"}}, {"source": {"Applications"}}, {"limit": {"x"}}} {
		var out apiv1.Page[apiv1.Update]
		if err := e.Admin.Do(ctx, http.MethodGet, "/api/v1/updates", bad, nil, &out); !client.IsStatus(err, http.StatusBadRequest) {
			t.Errorf("%v: %v, want 400", bad, err)
		}
	}
	// Lower-case filter values are accepted.
	if page, err := e.Admin.ListUpdates(ctx, client.UpdateQuery{Severity: "critical", Source: "os"}); err != nil || page.Total != 2 {
		t.Fatalf("lower-case filters: %+v %v", page, err)
	}
}

func TestUpdatesDetectedAtAndFields(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	ag := e.Enroll("d-1", "det1", "windows")
	rel := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	kb := kbUpdate("KB5048685", "Critical", updates.SourceOSMandatory)
	kb.ReleaseDate, kb.RebootRequired = &rel, true
	sendUpdates(ag, "det1", kb)
	first, err := e.Admin.ListUpdates(ctx, client.UpdateQuery{EndpointID: ag.ID})
	if err != nil || len(first.Items) != 1 {
		t.Fatalf("%+v %v", first, err)
	}
	u := first.Items[0]
	if u.Key != "KB5048685" || u.KB == nil || *u.KB != "KB5048685" || !u.RebootRequired || u.ReleaseDate == nil || !u.ReleaseDate.Equal(rel) ||
		u.Severity != "Critical" || u.Source != updates.SourceOSMandatory || u.Endpoint != "det1" || u.EndpointID != ag.ID {
		t.Fatalf("row %+v", u)
	}
	time.Sleep(5 * time.Millisecond)
	sendUpdates(ag, "det1", kb, kbUpdate("KB5050000", "Low", updates.SourceOSOptional))
	again, err := e.Admin.ListUpdates(ctx, client.UpdateQuery{EndpointID: ag.ID})
	if err != nil || len(again.Items) != 2 {
		t.Fatalf("%+v %v", again, err)
	}
	if !again.Items[0].DetectedAt.Equal(*u.DetectedAt) || !again.Items[1].DetectedAt.After(*u.DetectedAt) {
		t.Fatalf("detectedAt moved: %v then %v / %v", u.DetectedAt, again.Items[0].DetectedAt, again.Items[1].DetectedAt)
	}
}

func approve(t *testing.T, c *client.Client, status string, keys ...string) apiv1.ApprovalResult {
	t.Helper()
	body := apiv1.ApprovalBody{Status: status}
	for _, k := range keys {
		body.Keys = append(body.Keys, apiv1.ApprovalKey{Key: k})
	}
	out, err := c.SetApproval(context.Background(), body)
	if err != nil {
		t.Fatalf("%s %v: %v", status, keys, err)
	}
	return out
}

// approvals answers the approval shown on the rows of each key, failing
// when rows of one key disagree.
func approvals(t *testing.T, c *client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, u := range allUpdates(t, c, client.UpdateQuery{}) {
		if prev, ok := out[u.Key]; ok && prev != u.Approval {
			t.Fatalf("rows of %s disagree: %s and %s", u.Key, prev, u.Approval)
		}
		out[u.Key] = u.Approval
	}
	return out
}

// wantValidation fails unless err is a 422 validation_failed whose
// details name every one of fields.
func wantValidation(t *testing.T, err error, fields ...string) {
	t.Helper()
	got := sortedProblems(t, err)
	for _, f := range fields {
		if !slices.Contains(got, f) {
			t.Fatalf("details %v lack %s", got, f)
		}
	}
}

func TestApprovalKeySpellings(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	newUpdFleet(t, e)

	for _, c := range []struct {
		status, key, stored string
		changed             int
	}{
		{"APPROVED", "kb5048685", "KB5048685", 1},
		{"APPROVED", "KB5048685", "KB5048685", 0}, // unchanged is not a change
		{"DECLINED", "KB5048685-x64", "KB5048685", 1},
		{"APPROVED", "KB5048685_arm64", "KB5048685", 1},
		{"APPROVED", "mozilla.firefox.x64@133.0.3", "Mozilla.Firefox@133.0.3", 1},
		{"DECLINED", "MOZILLA.FIREFOX@133.0.3", "Mozilla.Firefox@133.0.3", 1},
		{"APPROVED", "Google.Chrome.arm64@131.0.6778.86", "Google.Chrome@131.0.6778.86", 1},
		{"APPROVED", "Debian:openssl@3.0.15-1~deb12u1", "debian:openssl@3.0.15-1~deb12u1", 1},
		{"DECLINED", "debian:curl@7.88.1-10+deb12u8", "debian:curl@7.88.1-10+deb12u8", 1},
	} {
		out := approve(t, e.Admin, c.status, c.key)
		if !out.OK || out.Count != 1 || out.Status != c.status || out.Changed != c.changed {
			t.Fatalf("%s %s: %+v, want changed %d", c.status, c.key, out, c.changed)
		}
		if got := approvals(t, e.Admin)[c.stored]; got != c.status {
			t.Fatalf("%s %s: rows of %s show %s", c.status, c.key, c.stored, got)
		}
	}
	if got := approvals(t, e.Admin); got["KB5050000"] != "NEW" || got["KB5040001"] != "NEW" {
		t.Fatalf("undecided keys: %v", got)
	}

	// A third-party key without @<version> is refused for APPROVED and
	// DECLINED, and the whole request with it: nothing is stored.
	before := approvals(t, e.Admin)
	for _, status := range []string{"APPROVED", "DECLINED"} {
		for _, bad := range []string{"Mozilla.Firefox", "mozilla.firefox.x64", "Mozilla.Firefox@", "Google.Chrome", "Contoso.NewTool"} {
			_, err := e.Admin.SetApproval(ctx, apiv1.ApprovalBody{Status: status, Keys: []apiv1.ApprovalKey{{Key: "KB5050000"}, {Key: bad}}})
			wantValidation(t, err, "keys[1].key")
		}
	}
	if after := approvals(t, e.Admin); !maps.Equal(before, after) {
		t.Fatalf("a refused request stored decisions: %v, then %v", before, after)
	}

	// NEW deletes the decision stored under each key, in any spelling, and
	// counts what it deleted.
	out := approve(t, e.Admin, "NEW", "kb5048685", "Mozilla.Firefox@133.0.3", "KB5050000", "Mozilla.Firefox")
	if out.Count != 4 || out.Changed != 2 || out.Status != "NEW" {
		t.Fatalf("NEW: %+v", out)
	}
	if got := approvals(t, e.Admin); got["KB5048685"] != "NEW" || got["Mozilla.Firefox@133.0.3"] != "NEW" {
		t.Fatalf("after NEW: %v", got)
	}
	if out := approve(t, e.Admin, "NEW", "KB5048685"); out.Changed != 0 {
		t.Fatalf("NEW twice: %+v", out)
	}

	// Several keys in one request; changed counts the ones written.
	out = approve(t, e.Admin, "APPROVED", "KB5048685", "KB5050000", "kb5050000", "Google.Chrome@131.0.6778.86")
	if out.Count != 4 || out.Changed != 2 {
		t.Fatalf("batch: %+v", out)
	}

	// Malformed bodies.
	for _, c := range []struct {
		body   apiv1.ApprovalBody
		fields []string
	}{
		{apiv1.ApprovalBody{Status: "MAYBE", Keys: []apiv1.ApprovalKey{{Key: "KB5048685"}}}, []string{"status"}},
		{apiv1.ApprovalBody{Status: "APPROVED"}, []string{"keys"}},
		{apiv1.ApprovalBody{Status: "APPROVED", Keys: []apiv1.ApprovalKey{{Key: "  "}}}, []string{"keys[0].key"}},
	} {
		_, err := e.Admin.SetApproval(ctx, c.body)
		wantValidation(t, err, c.fields...)
	}
	// Every write is audited in the Audit Trail.
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "update.approve"})
	if err != nil || len(entries) == 0 || !strings.HasPrefix(entries[0].Actor, "api:") {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "update.reset"}); len(entries) == 0 {
		t.Fatal("NEW not audited")
	}
}

func TestApprovalExactVersionAndUnseenKeys(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ag := e.Enroll("x-1", "exact1", "windows")
	sendUpdates(ag, "exact1", appUpdate("Mozilla.Firefox", "132.0", "133.0.3", "Unspecified"))
	approve(t, e.Admin, "APPROVED", "Mozilla.Firefox@133.0.3")

	// Keys approved before any endpoint reports them, in another spelling.
	approve(t, e.Admin, "APPROVED", "kb5099999", "contoso.tool.x64@2.0")
	sendUpdates(ag, "exact1", appUpdate("Mozilla.Firefox", "133.0.3", "134.0", "Unspecified"),
		kbUpdate("KB5099999", "Critical", updates.SourceOSMandatory), appUpdate("Contoso.Tool", "1.0", "2.0", "Low"))
	got := approvals(t, e.Admin)
	if got["Mozilla.Firefox@134.0"] != "NEW" {
		t.Fatalf("approving 133.0.3 approved 134.0: %v", got)
	}
	if got["KB5099999"] != "APPROVED" || got["Contoso.Tool@2.0"] != "APPROVED" {
		t.Fatalf("decisions on unseen keys: %v", got)
	}
}

func TestUpdatesPermissionsAndIsolation(t *testing.T) {
	e, ctx := apitest.NewParallel(t)
	newUpdFleet(t, e)
	viewer := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.UpdatesView))
	if _, err := viewer.ListUpdates(ctx, client.UpdateQuery{}); err != nil {
		t.Fatal(err)
	}
	mustStatus(t, errOf(viewer.SetApproval(ctx, apiv1.ApprovalBody{Status: "APPROVED", Keys: []apiv1.ApprovalKey{{Key: "KB5048685"}}})), http.StatusForbidden, "approve without updates.manage")
	blind := e.Client(e.Org, perm.Set(perm.APIAccess)|perm.Set(perm.EndpointsView))
	mustStatus(t, errOf(blind.ListUpdates(ctx, client.UpdateQuery{})), http.StatusForbidden, "list without updates.view")

	other := e.NewOrg("Other")
	oc := e.Client(other, perm.All)
	page, err := oc.ListUpdates(ctx, client.UpdateQuery{})
	if err != nil || page.Total != 0 || len(page.Items) != 0 {
		t.Fatalf("other organization sees updates: %+v %v", page, err)
	}
	// The other organization's decisions do not touch this one.
	if out := approve(t, oc, "DECLINED", "KB5048685"); out.Changed != 1 {
		t.Fatalf("%+v", out)
	}
	if got := approvals(t, e.Admin); got["KB5048685"] != "NEW" {
		t.Fatalf("decision leaked between organizations: %v", got)
	}
	// Nor does its key catalog: Firefox is third-party here only.
	if out := approve(t, oc, "APPROVED", "KB5048685"); out.Changed != 1 {
		t.Fatalf("%+v", out)
	}
}
