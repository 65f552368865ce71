package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// TestBrowserInvitationExistingAccount: in Chromium, at 1440 and 390 px,
// the invitation page offers a new password or signing in to an existing
// account (it passes axe-core and fits a phone); Ann of Globex signs in
// from it, comes back to it, accepts, and works in the inviting
// organization, now in her switcher.
func TestBrowserInvitationExistingAccount(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	ctx := context.Background()
	globex := e.NewOrg("Globex")
	addUser(t, e, globex, "ann@example.com", store.RoleAdministrator)
	for i, size := range []string{"desktop", "phone"} {
		org := e.Org
		if size == "phone" {
			tb.onPhone()
			tb.signOut()
			org = e.NewOrg("Initech")
		}
		role, err := e.Store.FindRole(ctx, org.ID, store.RoleReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		_, token, err := admin.InvitePerson(ctx, e.Store, admin.By{Actor: "test"}, org.ID, "ann@example.com", role, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		tb.visit(e.URL, "/console/invitation?token="+url.QueryEscape(token), "invitation-"+size)
		tb.fitsWidth("the invitation page (" + size + ")")
		if !tb.visible("#invitation-form") || !tb.visible("#invitation-sign-in") {
			t.Fatalf("%s: the invitation page does not offer both ways", size)
		}
		tb.do("sign in to accept",
			chromedp.Click(chromedp.CSS("#invitation-sign-in")),
			chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), "ann@example.com"),
			chromedp.SendKeys(chromedp.CSS("#password"), password),
			chromedp.Submit(chromedp.CSS("#password")),
			chromedp.WaitVisible(chromedp.CSS("#invitation-join-form")))
		tb.accessible("the invitation page signed in (" + size + ")")
		tb.fitsWidth("the invitation page signed in (" + size + ")")
		tb.screenshot("invitation-signed-in-" + size)
		if tb.visible("#invitation-form") {
			t.Errorf("%s: signed in as the invited address, the page still offers a new password", size)
		}
		tb.do("accept", chromedp.Click(chromedp.CSS(`#invitation-join-form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("main .flash")))
		tb.accessible("the page after accepting (" + size + ")")
		tb.screenshot("invitation-accepted-" + size)
		if got := tb.text("main .flash"); !strings.Contains(got, "The invitation is accepted") {
			t.Errorf("%s: the message says %q", size, got)
		}
		if got, want := tb.currentOrg(), org.Name+" (Read-only)"; got != want {
			t.Errorf("%s: the switcher shows %q, want %q", size, got, want)
		}
		annUser, _ := admin.FindUser(ctx, e.Store, globex.ID, "ann@example.com")
		if mems, _ := e.Store.Memberships(ctx, annUser.ID); len(mems) != i+2 {
			t.Errorf("%s: ann has %d memberships", size, len(mems))
		}
	}
}
