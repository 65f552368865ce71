package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// pickOrg chooses an organization in the header's switcher and submits it.
func (tb *tab) pickOrg(orgID, what string) {
	tb.t.Helper()
	tb.do("switch to "+what, func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[bool](`(function () { var s = document.querySelector("#org-pick"); s.value = "`+orgID+`";
			s.form.requestSubmit(); return true; })()`)(ctx, t)
		return chromedp.Void{}, err
	}, chromedp.WaitVisible(chromedp.CSS("main .flash")))
}

func (tb *tab) currentOrg() string {
	tb.t.Helper()
	var got string
	tb.do("the switcher's organization", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		v, err := chromedp.Evaluate[string](`document.querySelector("#org-pick").selectedOptions[0].textContent`)(ctx, t)
		got = v
		return chromedp.Void{}, err
	})
	return got
}

// TestBrowserOrgSwitcher: in Chromium, at 1440 and 390 px, Ann joins her
// Globex account on the Account page, switches between Acme and Globex
// in the header, and each organization's pages show its own endpoints
// only; the view across organizations lists both and its numbers open
// the organization's list; every page fits a phone's width.
func TestBrowserOrgSwitcher(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	globex := e.NewOrg("Globex")
	addUser(t, e, e.Org, "ann@example.com", store.RoleAdministrator)
	addUser(t, e, globex, "ann@example.com", store.RoleReadOnly)
	enrollIn(t, e, e.Org, "m-acme", "acme-secret-pc")
	enrollIn(t, e, globex, "m-globex", "globex-secret-pc")

	tb.signInWithPassword(e.URL, "ann@example.com", "/console/account", "#account-join")
	if got := tb.text("#org-name"); got != "Acme" {
		t.Fatalf("the header names %q, want Acme", got)
	}
	tb.do("join the Globex account",
		chromedp.SendKeys(chromedp.CSS("#join-password"), password),
		chromedp.Submit(chromedp.CSS("#join-password")),
		chromedp.WaitVisible(chromedp.CSS("#org-switch")))
	tb.screenshot("joined")
	for _, size := range []string{"desktop", "phone"} {
		if size == "phone" {
			tb.onPhone()
		}
		tb.visit(e.URL, "/console/endpoints", "acme-endpoints-"+size)
		tb.fitsWidth("the Acme endpoints page (" + size + ")")
		if got := tb.currentOrg(); got != "Acme (Administrator)" {
			t.Fatalf("%s: the switcher shows %q", size, got)
		}
		if body := tb.text("main"); !strings.Contains(body, "acme-secret-pc") || strings.Contains(body, "globex-secret-pc") {
			t.Fatalf("%s: Acme's endpoints page:\n%s", size, body)
		}
		tb.pickOrg(globex.ID, "Globex")
		if got := tb.currentOrg(); got != "Globex (Read-only)" {
			t.Fatalf("%s: after the switch the switcher shows %q", size, got)
		}
		tb.visit(e.URL, "/console/endpoints", "globex-endpoints-"+size)
		tb.fitsWidth("the Globex endpoints page (" + size + ")")
		if body := tb.text("main"); !strings.Contains(body, "globex-secret-pc") || strings.Contains(body, "acme-secret-pc") {
			t.Fatalf("%s: Globex's endpoints page:\n%s", size, body)
		}
		// The view across organizations; Acme's number of endpoints
		// switches back to Acme and opens its endpoints.
		tb.visit(e.URL, "/console/organizations", "organizations-"+size)
		tb.fitsWidth("the organizations page (" + size + ")")
		if got := tb.text("#orgs tbody"); !strings.Contains(got, "Acme") || !strings.Contains(got, "Globex") || !strings.Contains(got, "Read-only") {
			t.Fatalf("%s: the organizations table:\n%s", size, got)
		}
		tb.do("open Acme's endpoints from the table", chromedp.Click(chromedp.CSS("#orgs tbody tr:nth-child(1) td:nth-of-type(2) button")),
			chromedp.WaitVisible(chromedp.CSS("main .flash")))
		if p := tb.path(); p != "/console/endpoints" {
			t.Fatalf("%s: Acme's number opened %s", size, p)
		}
		if body := tb.text("main"); !strings.Contains(body, "acme-secret-pc") {
			t.Fatalf("%s: Acme's number opened:\n%s", size, body)
		}
	}
}

// TestBrowserOrgCreate: in Chromium, at 1440 and 390 px, Ann, who may
// create organizations, fills in the organizations page's New organization
// form with Acme as the template; the page passes axe-core and fits a
// phone, and the new organization is then in the header's switcher with
// Ann as its Administrator.
func TestBrowserOrgCreate(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	addUser(t, e, e.Org, "ann@example.com", store.RoleAdministrator)
	if _, err := admin.SetCreateOrgs(context.Background(), e.Store, admin.InstanceActor{Actor: "test"}, e.Org.ID, "ann@example.com", true); err != nil {
		t.Fatal(err)
	}
	tb.signInWithPassword(e.URL, "ann@example.com", "/console/organizations", "#new-org-form")
	for i, size := range []string{"desktop", "phone"} {
		if size == "phone" {
			tb.onPhone()
		}
		name := []string{"Client Desk", "Client Phone"}[i]
		tb.visit(e.URL, "/console/organizations", "new-org-"+size)
		tb.fitsWidth("the organizations page with its form (" + size + ")")
		tb.do("create "+name,
			chromedp.SendKeys(chromedp.CSS("#new-org-name"), name),
			chromedp.SetValue(chromedp.CSS("#new-org-template"), e.Org.ID),
			chromedp.Click(chromedp.CSS(`#new-org-form button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS("main .flash")))
		tb.accessible("the organizations page after a creation (" + size + ")")
		tb.screenshot("org-created-" + size)
		if got := tb.text("main .flash"); !strings.Contains(got, "Organization "+name+" created from Acme") {
			t.Fatalf("%s: the message says %q", size, got)
		}
		if got := tb.text("#orgs tbody"); !strings.Contains(got, name) || !strings.Contains(got, "Administrator") {
			t.Fatalf("%s: the organizations table:\n%s", size, got)
		}
	}
}

// TestBrowserInstancePeople: in Chromium, at 1440 and 390 px, an instance
// operator finds Ann on the people page, adds her to an organization with
// a custom role and takes her out again; both pages pass axe-core and fit
// a phone.
func TestBrowserInstancePeople(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	ctx := context.Background()
	if _, err := admin.CreateOperator(ctx, e.Store, "test", admin.InstanceActor{Actor: "test"}, e.Org.ID, "op@example.com", store.RoleAdministrator, password); err != nil {
		t.Fatal(err)
	}
	addUser(t, e, e.Org, "ann@example.com", store.RoleAdministrator)
	ann, err := admin.FindUser(ctx, e.Store, e.Org.ID, "ann@example.com")
	if err != nil {
		t.Fatal(err)
	}
	tb.signInWithPassword(e.URL, "op@example.com", "/console/instance/people", "#instance-people")
	for _, size := range []string{"desktop", "phone"} {
		if size == "phone" {
			tb.onPhone()
		}
		client := e.NewOrg("Client " + size)
		watcher, err := e.Store.CreateRole(ctx, client.ID, "Endpoints watcher", perm.Set(perm.EndpointsView))
		if err != nil {
			t.Fatal(err)
		}
		tb.visit(e.URL, "/console/instance/people?q=ann", "people-"+size)
		tb.fitsWidth("the people page (" + size + ")")
		tb.do("open Ann", chromedp.Click(chromedp.CSS(`#instance-people a[href="/console/instance/people/`+ann.ID+`"]`)),
			chromedp.WaitVisible(chromedp.CSS("#membership-add")))
		tb.visit(e.URL, "/console/instance/people/"+ann.ID, "person-"+size)
		tb.fitsWidth("the person's page (" + size + ")")
		tb.do("add Ann to "+client.Name,
			chromedp.SetValue(chromedp.CSS("#mto"), client.ID+"/"+watcher.ID),
			chromedp.Click(chromedp.CSS(`#membership-add button[type="submit"]`)),
			chromedp.WaitVisible(chromedp.CSS("main .flash")))
		tb.accessible("the person's page after the add (" + size + ")")
		tb.fitsWidth("the person's page after the add (" + size + ")")
		tb.screenshot("person-added-" + size)
		if got := tb.text("main .flash"); got != "ann@example.com is now a member of "+client.Name+" as Endpoints watcher." {
			t.Fatalf("%s: the message says %q", size, got)
		}
		if got := tb.text("#person-memberships"); !strings.Contains(got, client.Name) || !strings.Contains(got, "Endpoints watcher") {
			t.Fatalf("%s: the memberships:\n%s", size, got)
		}
		tb.visit(e.URL, "/console/instance/people/"+ann.ID, "person-member-"+size)
		tb.do("remove Ann from "+client.Name, acceptConfirms(),
			chromedp.Click(chromedp.CSS(`form[action$="/memberships/`+client.ID+`/remove"] button`)),
			chromedp.WaitVisible(chromedp.CSS("main .flash")))
		if got := tb.text("main .flash"); got != "ann@example.com is no longer a member of "+client.Name+"." {
			t.Fatalf("%s: the message says %q", size, got)
		}
		if got := tb.text("#person-memberships"); strings.Contains(got, client.Name) {
			t.Fatalf("%s: the memberships after the removal:\n%s", size, got)
		}
	}
}
