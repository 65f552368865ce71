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

// TestConsoleFormsRefuseNUL: a form field holding NUL (%00) is refused
// with 400 before any page reads it, on both engines; signing in with such
// an e-mail is refused the same way, and nothing is changed.
func TestConsoleFormsRefuseNUL(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	addUser(t, e, e.Org, "nul@example.com", store.RoleAdministrator)
	anon := newBrowser(t, e.URL)
	anon.get("/console/login")
	if code, _, _ := anon.post("/console/login", url.Values{"email": {"nul@example.com\x00"}, "password": {"x"}}); code != http.StatusBadRequest {
		t.Errorf("sign-in with NUL: %d", code)
	}
	b := newBrowser(t, e.URL)
	b.signIn("nul@example.com")
	b.get("/console/alerts")
	if code, _, _ := b.post("/console/alerts", url.Values{"name": {"bad\x00"}, "trigger": {"NEW_ENDPOINT"}, "emailTo": {"a@example.com"}}); code != http.StatusBadRequest {
		t.Errorf("alert rule with NUL: %d", code)
	}
	if rules, err := e.Store.ListAlertRules(context.Background(), e.Org.ID); err != nil || len(rules) != 0 {
		t.Fatalf("rules: %+v %v", rules, err)
	}
	if code, _ := b.get("/console/endpoints?q=web%00"); code != http.StatusBadRequest {
		t.Errorf("query with NUL: %d", code)
	}
}
