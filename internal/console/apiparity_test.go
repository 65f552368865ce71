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

// TestScriptFormsCallTheAPI: the Scripts page writes through the REST API's
// operations in the process, so it has their validation (every field
// problem), their fields (parameters, time limit) and their Audit Trail.
func TestScriptFormsCallTheAPI(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")
	b.get("/console/scripts")

	code, loc, _ := b.post("/console/scripts", url.Values{"name": {"cleanup"}, "language": {"bash"}, "code": {"rm -rf \"$DIR\""},
		"parameters": {"DIR=/tmp/x\nKEY!="}, "rebootExitCodes": {"3010, 1641"}, "timeoutSeconds": {"120"}})
	if code != http.StatusSeeOther || loc != "/console/scripts" {
		t.Fatalf("create: %d %s", code, loc)
	}
	list, err := e.Admin.ListScripts(ctx)
	if err != nil || list.Total != 1 {
		t.Fatalf("list: %+v %v", list, err)
	}
	sc := list.Items[0]
	if sc.Name != "cleanup" || len(sc.Parameters) != 2 || sc.Parameters[0].Default != "/tmp/x" || !sc.Parameters[1].Required ||
		len(sc.RebootExitCodes) != 2 || sc.TimeoutSeconds != 120 {
		t.Fatalf("stored script: %+v", sc)
	}
	entries, err := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "script.create"})
	if err != nil || len(entries) != 1 || entries[0].TargetID != sc.ID || !strings.Contains(entries[0].Actor, "alice@example.com") {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	_, page := b.get("/console/scripts")
	if !strings.Contains(page, "cleanup") || !strings.Contains(page, "DIR=/tmp/x") {
		t.Fatalf("the page does not list the script:\n%.2000s", page)
	}

	// The API's refusal is shown, field by field, and nothing is stored.
	b.post("/console/scripts", url.Values{"name": {"cleanup"}, "language": {"cobol"}, "code": {"x"}, "timeoutSeconds": {"-5"}})
	_, page = b.get("/console/scripts")
	for _, want := range []string{"language: must be", "timeoutSeconds: must be"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
	b.post("/console/scripts", url.Values{"name": {"cleanup"}, "language": {"sh"}, "code": {"true"}})
	if _, page = b.get("/console/scripts"); !strings.Contains(page, "name: is taken") {
		t.Error("the page does not say the name is taken")
	}
	if l, _ := e.Admin.ListScripts(ctx); l.Total != 1 {
		t.Fatalf("a refused form stored a script: %+v", l)
	}

	code, _, _ = b.post("/console/scripts/"+sc.ID+"/delete", url.Values{})
	if l, _ := e.Admin.ListScripts(ctx); code != http.StatusSeeOther || l.Total != 0 {
		t.Fatalf("delete: %d %+v", code, l)
	}
}
