package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestEndpointScanNow: the endpoint page's "Scan now" asks the agent for a
// scan (the request waits for its check-in); a Read-only user sees no
// button and may not post; another organization's endpoint is not found.
func TestEndpointScanNow(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, e.Org, "reader@example.com", store.RoleReadOnly)
	ag := e.Enroll("scan-1", "scan-pc", "linux")

	r := newBrowser(t, e.URL)
	r.signIn("reader@example.com")
	if _, body := r.get("/console/endpoints/" + ag.ID); strings.Contains(body, "Scan now") {
		t.Error("a Read-only user sees Scan now")
	}
	if code, _, _ := r.post("/console/endpoints/"+ag.ID+"/scan", url.Values{}); code != http.StatusForbidden {
		t.Errorf("Read-only scan: %d, want 403", code)
	}
	if asked, _ := e.Store.TakeScanRequest(ctx, ag.ID); asked {
		t.Fatal("a refused request was recorded")
	}

	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	_, body := a.get("/console/endpoints/" + ag.ID)
	if !strings.Contains(body, `action="/console/endpoints/`+ag.ID+`/scan"`) || !strings.Contains(body, "Scan now") {
		t.Fatalf("no Scan now button on the endpoint page:\n%.2000s", body)
	}
	code, loc, _ := a.post("/console/endpoints/"+ag.ID+"/scan", url.Values{})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/endpoints/"+ag.ID) {
		t.Fatalf("scan now: %d %s", code, loc)
	}
	if _, body := a.get(loc); !strings.Contains(body, "Scan requested") {
		t.Errorf("no confirmation after scan now")
	}
	if asked, err := e.Store.TakeScanRequest(ctx, ag.ID); err != nil || !asked {
		t.Fatalf("the scan request was not recorded: %v", err)
	}

	// Another organization's administrator cannot reach this endpoint.
	other := e.NewOrg("Globex")
	addUser(t, e, other, "admin@globex.example", store.RoleAdministrator)
	g := newBrowser(t, e.URL)
	g.signIn("admin@globex.example")
	g.post("/console/endpoints/"+ag.ID+"/scan", url.Values{})
	if asked, _ := e.Store.TakeScanRequest(ctx, ag.ID); asked {
		t.Fatal("another organization asked for a scan")
	}
}
