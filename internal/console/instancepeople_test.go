package console_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// takeFlash answers the message the last answer left for the next page
// ("ok" or "error" and its text; "" when none) and clears it, as the next
// page would.
func (b *browser) takeFlash() (kind, text string) {
	b.t.Helper()
	u, _ := url.Parse(b.base + "/console/")
	for _, ck := range b.c.Jar.Cookies(u) {
		if ck.Name != "patchd_flash" || ck.Value == "" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(ck.Value)
		if err != nil {
			b.t.Fatalf("flash cookie %q: %v", ck.Value, err)
		}
		b.c.Jar.SetCookies(u, []*http.Cookie{{Name: ck.Name, Value: "", Path: "/console", MaxAge: -1}})
		kind, text, _ = strings.Cut(string(raw), "\x00")
		return kind, text
	}
	return "", ""
}

// memberships answers the person's organizations with its role in each
// ("Acme:Administrator").
func memberships(t *testing.T, e *apitest.Env, email string) []string {
	t.Helper()
	users, err := e.Store.MembersByEmail(context.Background(), email)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range users {
		o, err := e.Store.FindOrg(context.Background(), u.OrgID)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, o.Name+":"+u.RoleName)
	}
	return out
}

// TestInstancePeopleOperatorsOnly: an instance operator lists people
// across the instance with their memberships, adds a person to another
// organization with a custom role of it and takes it out again, as patchd
// admin user member-add and member-remove do (each recorded in that
// organization); refusals change nothing, and nobody else reaches the
// page or its forms.
func TestInstancePeopleOperatorsOnly(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	acme := e.Org
	globex, initech := e.NewOrg("Globex"), e.NewOrg("Initech")
	if _, err := admin.CreateOperator(ctx, e.Store, "test", admin.InstanceActor{Actor: "test"}, acme.ID, "op@example.com", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	addUser(t, e, acme, "alice@example.com", store.RoleAdministrator)
	addUser(t, e, initech, "alice@example.com", store.RoleReadOnly)
	addUser(t, e, globex, "erin@globex.example", store.RoleAdministrator)
	watcher, err := e.Store.CreateRole(ctx, globex.ID, "Endpoints watcher", perm.Set(perm.EndpointsView))
	if err != nil {
		t.Fatal(err)
	}
	alice, err := admin.FindUser(ctx, e.Store, acme.ID, "alice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	person := "/console/instance/people/" + alice.ID
	// add is the form of the add (a new one each time: post sets the token).
	add := func() url.Values { return url.Values{"to": {globex.ID + "/" + watcher.ID}} }
	before := memberships(t, e, "alice@example.com")

	// An organization's Administrator: 403 for the page and every form.
	a := newBrowser(t, e.URL)
	a.signIn("alice@example.com")
	if _, body := a.get("/console/"); strings.Contains(body, "/console/instance/people") {
		t.Error("a non-operator's menu links the people page")
	}
	for _, p := range []string{"/console/instance/people", person} {
		if code, _ := a.get(p); code != http.StatusForbidden {
			t.Errorf("a non-operator's GET %s: %d, want 403", p, code)
		}
	}
	a.get("/console/")
	if code, _, _ := a.post(person+"/memberships", add()); code != http.StatusForbidden {
		t.Errorf("a non-operator's add: %d, want 403", code)
	}
	if code, _, _ := a.post(person+"/memberships/"+acme.ID+"/remove", url.Values{}); code != http.StatusForbidden {
		t.Errorf("a non-operator's remove: %d, want 403", code)
	}

	op := newBrowser(t, e.URL)
	op.signIn("op@example.com")
	if _, body := op.get("/console/"); !strings.Contains(body, `href="/console/instance/people"`) {
		t.Error("the operator's menu has no people page")
	}
	code, body := op.get("/console/instance/people")
	if code != http.StatusOK || !strings.Contains(body, "erin@globex.example") || !strings.Contains(body, "Initech <small>(Read-only)</small>") ||
		!strings.Contains(body, "Acme <small>(Administrator)</small>") {
		t.Fatalf("the people page: %d\n%.3000s", code, body)
	}
	if _, body := op.get("/console/instance/people?q=GLOBEX"); !strings.Contains(body, "erin@globex.example") || strings.Contains(body, "alice@example.com") {
		t.Errorf("the search for GLOBEX:\n%.3000s", body)
	}
	code, body = op.get(person)
	if code != http.StatusOK || !strings.Contains(body, `<option value="`+globex.ID+"/"+watcher.ID+`">Globex: Endpoints watcher</option>`) ||
		strings.Contains(body, `<optgroup label="Acme">`) {
		t.Fatalf("the person's page: %d\n%.3000s", code, body)
	}

	// Refusals: no CSRF token, an unknown organization or role, a
	// role of another organization, an organization with that address.
	refusals := []struct {
		name string
		form url.Values
		want string
	}{
		{"no organization", url.Values{"to": {""}}, "Choose an organization"},
		{"unknown organization", url.Values{"to": {"nope/" + watcher.ID}}, "No such organization"},
		{"unknown role", url.Values{"to": {globex.ID + "/nope"}}, "Globex has no such role"},
		{"another organization's role", url.Values{"to": {globex.ID + "/" + alice.RoleID}}, "Globex has no such role"},
		{"the address is a member", url.Values{"to": {initech.ID + "/" + store.RoleReadOnly}}, "Initech has a member with the address alice@example.com already"},
	}
	for _, rc := range refusals {
		if code, loc, _ := op.post(person+"/memberships", rc.form); code != http.StatusSeeOther || loc != person {
			t.Errorf("%s: %d %s", rc.name, code, loc)
		}
		if kind, text := op.takeFlash(); kind != "error" || !strings.Contains(text, rc.want) {
			t.Errorf("%s: %s %q, want an error with %q", rc.name, kind, text, rc.want)
		}
	}
	if code, _, _ := op.post(person+"/memberships", url.Values{"to": add()["to"], "csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("an add without the CSRF token: %d, want 403", code)
	}
	if got := memberships(t, e, "alice@example.com"); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Fatalf("refusals changed the memberships: %v, were %v", got, before)
	}

	// The add, recorded in Globex with who and from where.
	if code, loc, _ := op.post(person+"/memberships", add()); code != http.StatusSeeOther || loc != person {
		t.Fatalf("add: %d %s", code, loc)
	}
	if kind, text := op.takeFlash(); kind != "ok" || text != "alice@example.com is now a member of Globex as Endpoints watcher." {
		t.Errorf("add: %s %q", kind, text)
	}
	ga, err := e.Store.ListAudit(ctx, globex.ID, store.AuditFilter{Action: "user.member_add"})
	if err != nil || len(ga) != 1 || ga[0].Actor != "user:op@example.com" || ga[0].Address != "127.0.0.1" || ga[0].TargetID != alice.ID ||
		ga[0].Summary["role"] != "Endpoints watcher" {
		t.Errorf("Globex's Audit Trail of the add: %+v %v", ga, err)
	}
	if aa, _ := e.Store.ListAudit(ctx, acme.ID, store.AuditFilter{Action: "user.member_add"}); len(aa) != 0 {
		t.Errorf("Acme's Audit Trail has the add: %+v", aa)
	}
	if _, body := op.get(person); !strings.Contains(body, "Remove from Globex") || !strings.Contains(body, "Remove from Acme") {
		t.Errorf("the person's page after the add:\n%.3000s", body)
	}
	if code, loc, _ := op.post(person+"/memberships", add()); code != http.StatusSeeOther || loc != person {
		t.Errorf("a second add: %d %s", code, loc)
	}
	if kind, _ := op.takeFlash(); kind != "error" {
		t.Error("a second add to Globex was not refused")
	}

	// The removal; the person's only organization is refused.
	if code, _, _ := op.post(person+"/memberships/"+globex.ID+"/remove", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("remove: %d", code)
	}
	if kind, text := op.takeFlash(); kind != "ok" || text != "alice@example.com is no longer a member of Globex." {
		t.Errorf("remove: %s %q", kind, text)
	}
	gd, _ := e.Store.ListAudit(ctx, globex.ID, store.AuditFilter{Action: "user.delete"})
	if len(gd) != 1 || gd[0].Actor != "user:op@example.com" || gd[0].Summary["membershipOnly"] != true {
		t.Errorf("Globex's Audit Trail of the removal: %+v", gd)
	}
	op.post(person+"/memberships/"+globex.ID+"/remove", url.Values{})
	if kind, text := op.takeFlash(); kind != "error" || !strings.Contains(text, "no member of that organization") {
		t.Errorf("a second removal: %s %q", kind, text)
	}
	op.post(person+"/memberships/"+acme.ID+"/remove", url.Values{})
	if kind, text := op.takeFlash(); kind != "error" || !strings.Contains(text, "Acme is the only organization of alice@example.com") {
		t.Errorf("removing the only organization: %s %q", kind, text)
	}
	if got := memberships(t, e, "alice@example.com"); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("memberships at the end: %v, want %v", got, before)
	}
	// The operator does not take itself out of the organization it works in.
	self, err := admin.FindUser(ctx, e.Store, acme.ID, "op@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddMembership(ctx, e.Store, admin.By{Actor: "test"}, self, globex.ID, store.RoleReadOnly); err != nil {
		t.Fatal(err)
	}
	op.get("/console/")
	op.post("/console/instance/people/"+self.ID+"/memberships/"+acme.ID+"/remove", url.Values{})
	if kind, text := op.takeFlash(); kind != "error" || !strings.Contains(text, "switch to another of yours first") {
		t.Errorf("the operator leaving the organization it works in: %s %q", kind, text)
	}
	if code, _ := op.get("/console/instance/people"); code != http.StatusOK {
		t.Errorf("the operator's session after the refusal: %d", code)
	}
	if code, _ := a.get("/console/users"); code != http.StatusOK {
		t.Errorf("alice's session in Acme after the refused removal: %d", code)
	}
}
