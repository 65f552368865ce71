package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestOrgCreateForm: the organizations page has the New organization form
// only for a person holding the create-organizations permission; the form
// creates the organization through the REST API's operation (its
// refusals shown as the page's message, nothing created), offers as
// templates only the organizations the person administers, and makes the
// person Administrator of the new one.
func TestOrgCreateForm(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	ctx := context.Background()
	other := e.NewOrg("Other " + apitest.NewName())
	addUser(t, e, e.Org, "alice@example.com", store.RoleAdministrator)
	u, err := admin.FindUser(ctx, e.Store, e.Org.ID, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddMembership(ctx, e.Store, admin.By{Actor: "test"}, u, other.ID, store.RoleReadOnly); err != nil {
		t.Fatal(err)
	}
	countOrgs := func() int {
		orgs, err := e.Store.ListOrgs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(orgs)
	}
	before := countOrgs()
	b := newBrowser(t, e.URL)
	b.signIn("alice@example.com")

	// Without the permission: no form, and a forged post is refused.
	if _, body := b.get("/console/organizations"); strings.Contains(body, "new-org-form") {
		t.Fatal("the form is shown to a person without the permission")
	}
	post := func(form url.Values) string {
		t.Helper()
		code, loc, _ := b.post("/console/organizations", form)
		if code != http.StatusSeeOther || loc != "/console/organizations" {
			t.Fatalf("post %v: %d %s", form, code, loc)
		}
		_, body := b.get("/console/organizations")
		return html.UnescapeString(body)
	}
	if body := post(url.Values{"name": {"Client A"}}); !strings.Contains(body, "instance-level permission") {
		t.Fatalf("without the permission:\n%s", body)
	}

	if _, err := admin.SetCreateOrgs(ctx, e.Store, admin.InstanceActor{Actor: "test"}, e.Org.ID, "alice@example.com", true); err != nil {
		t.Fatal(err)
	}
	_, body := b.get("/console/organizations")
	_, form, _ := strings.Cut(body, `id="new-org-form"`)
	if !strings.Contains(form, `<option value="`+e.Org.ID+`">`) || strings.Contains(form, `<option value="`+other.ID+`">`) {
		t.Fatalf("form and templates (only the organizations alice administers: %s, not %s):\n%.300s", e.Org.ID, other.ID, body)
	}
	for form, want := range map[string]url.Values{
		"name: is required":                           {"name": {" "}},
		"template: is no organization you administer": {"name": {"Client A"}, "template": {other.ID}},
		"timezone:": {"name": {"Client A"}, "timezone": {"Nowhere/Town"}},
	} {
		if body := post(want); !strings.Contains(body, form) {
			t.Fatalf("%v: want %q in\n%s", want, form, body)
		}
	}
	if n := countOrgs(); n != before {
		t.Fatalf("refused forms created %d organizations", n-before)
	}

	body = post(url.Values{"name": {"Client A"}, "timezone": {"Europe/Berlin"}, "template": {e.Org.ID}})
	if !strings.Contains(body, "Organization Client A created from "+e.Org.Name) {
		t.Fatalf("created:\n%s", body)
	}
	created, err := e.Store.FindOrg(ctx, "Client A")
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.Store.MemberByEmail(ctx, created.ID, "alice@example.com")
	if err != nil || m.RoleName != store.RoleAdministrator {
		t.Fatalf("alice in Client A: %+v %v", m, err)
	}
	entries, err := e.Store.ListAudit(ctx, created.ID, store.AuditFilter{Action: "org.create", Limit: 5})
	if err != nil || len(entries) != 1 || entries[0].Actor != "user:alice@example.com" {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	// The new organization is in alice's list (and its switcher).
	if _, body := b.get("/console/organizations"); !strings.Contains(body, "Client A") {
		t.Fatal("the new organization is not listed")
	}
}
