package console_test

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestEndpointListFiltersSortColumnsCSVAndSelectAll: the endpoints list
// filters, sorts both ways, refuses a filter value it does not offer,
// remembers the columns chosen, exports exactly what is filtered as CSV,
// and "select all N matching" acts on every match, not only the page.
func TestEndpointListFiltersSortColumnsCSVAndSelectAll(t *testing.T) {
	e := apitest.New(t)
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "rita@example.com", store.RoleReadOnly)
	var wins []*apitest.Agent
	for _, h := range []string{"win-a", "win-b", "win-c"} {
		ag := e.Enroll("m-"+h, h, "windows")
		ag.MustInventory(apitest.Sample(h, "windows"))
		wins = append(wins, ag)
	}
	lin := e.Enroll("m-lin", "lin-a", "linux")
	lin.MustInventory(inventoryWithout("lin-a"))

	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	rows := func(body string) []string {
		var names []string
		for _, part := range strings.Split(between(body, `<table class="list" id="endpoints">`, "</table>"), `<a href="/console/endpoints/`)[1:] {
			names = append(names, between(part, `">`, "</a>"))
		}
		return names
	}
	code, body := b.get("/console/endpoints?platform=windows&limit=2")
	if code != http.StatusOK || !slices.Equal(rows(body), []string{"win-a", "win-b"}) || !strings.Contains(body, "<strong>3</strong> endpoint(s) match") {
		t.Fatalf("windows, two a page (%d): %v, %q", code, rows(body), between(body, `id="endpoint-total"`, "</span>"))
	}
	if !strings.Contains(body, "Select all 3 matching") {
		t.Error("the action bar does not offer to select all 3 matching")
	}
	if _, body = b.get("/console/endpoints?sort=name&order=desc"); !slices.Equal(rows(body), []string{"win-c", "win-b", "win-a", "lin-a"}) {
		t.Errorf("by name, descending: %v", rows(body))
	}
	if _, body = b.get("/console/endpoints?missing=none"); !slices.Equal(rows(body), []string{"lin-a"}) {
		t.Errorf("fully patched: %v", rows(body))
	}
	if _, body = b.get("/console/endpoints?search=lin"); !slices.Equal(rows(body), []string{"lin-a"}) {
		t.Errorf("search: %v", rows(body))
	}
	for _, bad := range []string{"platform=solaris", "status=asleep", "sort=secret", "notSeenDays=0", "missing=some", "pendingReboot=yes"} {
		if code, _ := b.get("/console/endpoints?" + bad); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", bad, code)
		}
	}

	// Columns chosen once stay chosen.
	b.get("/console/endpoints?cols=ip&cols=agent")
	_, body = b.get("/console/endpoints")
	head := between(body, `<table class="list" id="endpoints">`, "</thead>")
	if !strings.Contains(head, "IP addresses") || !strings.Contains(head, "Agent") || strings.Contains(head, "Last seen") {
		t.Errorf("the chosen columns are not kept: %s", head)
	}

	// The CSV holds every match (no paging) with the chosen columns.
	resp, err := b.c.Get(e.URL + "/console/endpoints.csv?platform=windows&sort=name&order=desc")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(resp.Body).ReadAll()
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("CSV: %d %v", resp.StatusCode, err)
	}
	if len(recs) != 4 || !slices.Equal(recs[0], []string{"id", "name", "hostname", "IP addresses", "Agent"}) || recs[1][1] != "win-c" || recs[3][1] != "win-a" {
		t.Errorf("CSV: %v", recs)
	}

	// Select all matching: every Windows endpoint, though none is ticked
	// and the page showed two.
	b.get("/console/endpoints?platform=windows&limit=2")
	code, loc, body := b.post("/console/actions", url.Values{"all": {"1"}, "filter": {"platform=windows"}, "type": {"REBOOT"},
		"back": {"/console/endpoints?platform=windows"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/runs/") {
		t.Fatalf("select all matching: %d %s %s", code, loc, body)
	}
	cmds := commandsOf(t, e, strings.TrimPrefix(loc, "/console/runs/"))
	if len(cmds) != 3 || cmds[lin.ID] != "" {
		t.Errorf("select all matching queued on %v, want the 3 Windows endpoints", cmds)
	}
	for _, ag := range wins {
		if cmds[ag.ID] == "" {
			t.Errorf("%s has no command", ag.ID)
		}
	}
	// A filter that could not come from the list is refused; nothing runs.
	code, loc, _ = b.post("/console/actions", url.Values{"all": {"1"}, "filter": {"platform=plan9"}, "type": {"REBOOT"}, "back": {"/console/endpoints"}})
	if code != http.StatusSeeOther || loc != "/console/endpoints" {
		t.Errorf("a bad carried filter: %d %s", code, loc)
	}

	// A read-only user lists and downloads, but gets no action bar.
	ro := newBrowser(t, e.URL)
	ro.signIn("rita@example.com")
	code, body = ro.get("/console/endpoints")
	if code != http.StatusOK || len(rows(body)) != 4 || strings.Contains(body, "select-all-matching") {
		t.Errorf("read-only list (%d): %v, action bar %v", code, rows(body), strings.Contains(body, "select-all-matching"))
	}
}
