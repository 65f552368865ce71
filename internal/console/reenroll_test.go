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

// TestAlertFormTakesReenrolled: the console's alert-rule form offers and
// accepts the ENDPOINT_REENROLLED trigger (a patchd addition).
func TestAlertFormTakesReenrolled(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	addUser(t, e, e.Org, "rita@example.com", store.RoleAdministrator)
	b := newBrowser(t, e.URL)
	b.signIn("rita@example.com")
	if _, body := b.get("/console/alerts"); !strings.Contains(body, `<option value="ENDPOINT_REENROLLED">`) {
		t.Fatal("the trigger is not offered")
	}
	code, loc, _ := b.post("/console/alerts", url.Values{"name": {"Take-overs"}, "trigger": {"ENDPOINT_REENROLLED"},
		"emailTo": {"sec@example.com"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/console/alerts/") {
		t.Fatalf("create: %d %s", code, loc)
	}
	rules, err := e.Store.ListAlertRules(context.Background(), e.Org.ID)
	if err != nil || len(rules) != 1 || rules[0].Trigger != "ENDPOINT_REENROLLED" {
		t.Fatalf("rules: %+v %v", rules, err)
	}
}
