package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// joinPasswordStep enters the other account's password on the Account
// page and waits for the passkey step.
func (tb *tab) joinPasswordStep(base, pw, name string) {
	tb.t.Helper()
	tb.visit(base, "/console/account", name)
	tb.do("enter the other account's password",
		chromedp.SendKeys(chromedp.CSS("#join-password"), pw),
		chromedp.Submit(chromedp.CSS("#join-password")),
		chromedp.WaitVisible(chromedp.CSS("#join-passkey")))
	tb.accessible("the join's passkey step")
	tb.screenshot(name + "-passkey-step")
}

// TestBrowserJoinPasskeyAccount: in Chromium with a virtual authenticator,
// ann's accounts of Globex and Initech have a passkey as their only second
// factor; signed in to Acme, she joins each with its password and then its
// passkey: Globex at 1440 px (after a join no longer pending shows its
// refusal beside the button), Initech at 390 px.
func TestBrowserJoinPasskeyAccount(t *testing.T) {
	tb := newTab(t)
	e := apitest.New(t)
	ctx := context.Background()
	globex, initech := e.NewOrg("Globex"), e.NewOrg("Initech")
	base := localhost(e)
	tb.virtualAuthenticator()

	others := map[string]store.ConsoleUser{}
	for _, org := range []store.Org{globex, initech} {
		addUser(t, e, org, "ann@example.com", store.RoleReadOnly)
		tb.signInWithPassword(base, "ann@example.com", "/console/account", "#h-passkeys")
		tb.registerPasskey(base, org.Name+" laptop")
		tb.signOut()
		u, err := admin.FindUser(ctx, e.Store, org.ID, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		// Each its own password: sign-in and the join take the account the
		// password matches.
		if err := admin.ResetPassword(ctx, e.Store, admin.By{Actor: "test"}, u, org.Name+"'s own password", false); err != nil {
			t.Fatal(err)
		}
		others[org.ID] = u
	}
	addUser(t, e, e.Org, "ann@example.com", store.RoleAdministrator)
	tb.signInWithPassword(base, "ann@example.com", "/console/account", "#account-join")
	accounts := func() int {
		people, err := e.Store.UsersByEmail(ctx, "ann@example.com")
		if err != nil {
			t.Fatal(err)
		}
		return len(people)
	}
	joined := func(org store.Org) {
		t.Helper()
		if got := tb.text("main .flash"); !strings.Contains(got, "The accounts are joined") {
			t.Errorf("after the join of %s the page says %q", org.Name, got)
		}
		if joins := audited(t, e, org.ID, "user.join"); len(joins) != 1 || joins[0].Summary["method"] != "password+passkey" ||
			joins[0].Summary["joinedUserId"] != others[org.ID].ID || joins[0].Address == "" {
			t.Errorf("the join of %s audited: %+v", org.Name, joins)
		}
	}

	// The pending join is answered elsewhere (another tab): the button's
	// request is refused, and the refusal is shown beside it.
	tb.joinPasswordStep(base, "Globex's own password", "join-desktop")
	tb.mu.Lock()
	tb.expect = map[int]bool{http.StatusBadRequest: true}
	tb.mu.Unlock()
	tb.do("answer the pending join elsewhere", func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := chromedp.Evaluate[int](`window.fetch("/console/account/join/passkey", {method: "POST", credentials: "same-origin",
			headers: {"Content-Type": "application/json", "X-CSRF-Token": document.body.getAttribute("data-csrf")}, body: "{}"}).then(function (r) { return r.status; })`,
			chromedp.EvalAwaitPromise)(ctx, t)
		return chromedp.Void{}, err
	}, chromedp.Click(chromedp.CSS(`#join-passkey button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#join-passkey-error")))
	tb.accessible("the join's refused passkey step")
	tb.screenshot("join-desktop-refused")
	if got := tb.text("#join-passkey-error"); !strings.Contains(got, "start again") {
		t.Errorf("the refusal says %q", got)
	}
	if tb.visible("#passkey-error") {
		t.Error("the join's refusal is shown at the passkey registration form")
	}
	tb.mu.Lock()
	tb.expect = nil
	tb.mu.Unlock()
	if n := accounts(); n != 3 {
		t.Fatalf("ann's accounts after the refusal: %d", n)
	}

	tb.joinPasswordStep(base, "Globex's own password", "join-desktop-again")
	tb.do("use the Globex passkey", chromedp.Click(chromedp.CSS(`#join-passkey button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#org-switch")))
	tb.accessible("the Account page after the join")
	tb.screenshot("join-desktop-joined")
	joined(globex)

	tb.onPhone()
	tb.joinPasswordStep(base, "Initech's own password", "join-phone")
	tb.fitsWidth("the join's passkey step (phone)")
	tb.do("use the Initech passkey", chromedp.Click(chromedp.CSS(`#join-passkey button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("main .flash.ok")))
	tb.accessible("the Account page after the join (phone)")
	tb.fitsWidth("the Account page after the join (phone)")
	tb.screenshot("join-phone-joined")
	joined(initech)
	if n := accounts(); n != 1 {
		t.Fatalf("ann's accounts after both joins: %d", n)
	}
}
