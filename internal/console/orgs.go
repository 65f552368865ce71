package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/identity/passkey"
	"github.com/patchd/patchd/internal/store"
)

// Memberships in the console: a person signs in once and works in one
// organization at a time; the header's switcher moves the session to
// another organization of the person, and the Account page joins an
// account of the same e-mail address in other organizations, proved with
// its password and second factor (docs/identity.md, "Memberships"): a
// code with the password, or a passkey after it.

func (c *Console) orgRoutes() {
	c.page("POST /console/org", 0, c.orgSwitch)
	c.page("POST /console/account/join", 0, c.accountJoin)
	c.page("POST /console/account/join/passkey/options", 0, c.joinPasskeyOptions)
	c.page("POST /console/account/join/passkey", 0, c.joinPasskey)
	c.page("GET /console/organizations", 0, c.orgsPage)
	c.page("GET /console/organizations.csv", 0, c.orgsCSV)
	c.page("POST /console/organizations", adminOnly, c.orgCreate)
}

// orgCreate creates an organization through the REST API's operation (a
// person holding the create-organizations permission, docs/identity.md):
// the person becomes its Administrator; a template it administers gives
// it its policies, groups, automations and alert rules.
func (c *Console) orgCreate(w http.ResponseWriter, r *http.Request, s *session) error {
	if err := r.ParseForm(); err != nil {
		return badRequest("The form could not be read.")
	}
	body := apiv1.OrganizationBody{Name: r.PostForm.Get("name"), TimeZone: r.PostForm.Get("timezone"), Template: r.PostForm.Get("template")}
	var out apiv1.Organization
	err := c.callAPI(r, s, http.MethodPost, "/api/v1/organizations", body, &out)
	ok := "Organization " + out.Name + " created: you are its Administrator (switch to it in the menu at the top)."
	if err == nil && out.Copied != nil {
		ok = fmt.Sprintf("Organization %s created from %s (%d groups, %d automations, %d alert rules copied): you are its Administrator (switch to it in the menu at the top).",
			out.Name, out.Copied.Template, out.Copied.Groups, out.Copied.Automations, out.Copied.AlertRules)
		if n := len(out.Copied.DisabledAlertRules); n > 0 {
			ok += fmt.Sprintf(" %d alert rules are disabled until you give them a webhook secret.", n)
		}
	}
	return c.done(w, r, "/console/organizations", err, ok)
}

// orgSwitch moves the session to another organization of its person,
// under a new session id and CSRF token, and opens next (a console page;
// the dashboard by default): every page after it is of that
// organization, under the person's role there. An organization that
// requires a second factor is refused to a person without one.
func (c *Console) orgSwitch(w http.ResponseWriter, r *http.Request, s *session) error {
	orgID, next := r.PostFormValue("org"), safeNext(r.PostFormValue("next"))
	if orgID == s.User.OrgID {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	mems, err := c.store.Memberships(r.Context(), s.User.ID)
	if err != nil {
		return err
	}
	var to *store.Membership
	for i := range mems {
		if mems[i].OrgID == orgID {
			to = &mems[i]
		}
	}
	if to == nil {
		return c.done(w, r, "/console/", badRequest("You do not belong to that organization."), "")
	}
	return c.enterOrg(w, r, s, *to, next, "")
}

// enterOrg moves the session to the person's membership to and opens
// next, with prefix before the flash that says so; an organization that
// requires a second factor the person lacks sends it to the Account page
// instead.
func (c *Console) enterOrg(w http.ResponseWriter, r *http.Request, s *session, to store.Membership, next, prefix string) error {
	orgID := to.OrgID
	if !s.User.SecondFactor && s.User.PasswordHash != "" {
		required, err := c.store.OrgRequiresMFA(r.Context(), orgID)
		if err != nil {
			return err
		}
		if required {
			return c.done(w, r, "/console/account", badRequest(prefix+to.OrgName+" requires a second factor: set up an authenticator app or a passkey here first."), "")
		}
	}
	id := randomToken()
	err := c.store.SwitchSessionOrg(r.Context(), s.idHash, auth.HashSecret(id), randomToken(), orgID)
	if errors.Is(err, dberr.ErrNotFound) {
		return c.done(w, r, "/console/", badRequest("You do not belong to that organization."), "")
	}
	if err != nil {
		return err
	}
	http.SetCookie(w, c.cookie(cookieSession, id, int(c.cfg.MaxAge.Seconds())))
	e := &store.AuditEntry{OrgID: orgID, Actor: s.actor(), Address: s.addr, Action: "user.org_switch", TargetType: "user", TargetID: s.User.ID,
		Summary: map[string]any{"role": to.RoleName}}
	c.record(r, e)
	setFlash(w, c, "ok", prefix+"You are working in "+to.OrgName+" ("+to.RoleName+").")
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// accountJoin makes the signed-in person and another account of the same
// e-mail address one person: the other account's password, and its
// second factor when it has one, prove it. An authenticator code or a
// recovery code comes with the password; a passkey is asked for after it
// (joinPasskeyOptions, joinPasskey), the password step kept on the session
// as the pending join. Wrong answers count like wrong passwords on the
// Account page.
func (c *Console) accountJoin(w http.ResponseWriter, r *http.Request, s *session) error {
	password, code := r.PostFormValue("password"), r.PostFormValue("code")
	show := func(status int, msg string) error {
		return c.renderAccount(w, r, s, status, func(d *accountData) { d.JoinError = msg })
	}
	if password == "" {
		return show(http.StatusUnprocessableEntity, "Enter the other account's password.")
	}
	check, err := auth.BeginPasswordCheck()
	if err != nil {
		retryAfter(w, time.Second)
		return show(http.StatusServiceUnavailable, "The server is checking too many passwords at once. Try again in a few seconds.")
	}
	defer check.End()
	attempt, err := c.beginJoinAttempt(w, r, s)
	if err != nil {
		var pe *pageError
		if errors.As(err, &pe) {
			return show(pe.status, pe.msg)
		}
		return err
	}
	people, err := c.store.UsersByEmail(r.Context(), s.User.Email)
	if err != nil {
		attempt.Release(context.WithoutCancel(r.Context()))
		return err
	}
	var other *store.ConsoleUser
	for i := range people {
		if people[i].ID == s.User.ID || people[i].Disabled || people[i].PasswordHash == "" {
			continue
		}
		if ok, err := check.Matches(password, people[i].PasswordHash); err == nil && ok {
			other = &people[i]
			break
		}
	}
	check.End()
	if other == nil {
		// The attempt stays counted.
		return show(http.StatusUnauthorized, "No other account with your e-mail address has that password.")
	}
	method := "password"
	switch {
	case other.TOTP && (code != "" || other.Passkeys == 0):
		var limited *auth.RateLimitedError
		method, err = c.checkSecondFactor(r, *other, code)
		if errors.As(err, &limited) {
			retryAfter(w, limited.RetryAfter)
			return show(http.StatusTooManyRequests, "Too many wrong codes for that account. Try again in "+waitText(limited.RetryAfter)+".")
		}
		if err != nil {
			return err
		}
		if method == "" {
			c.record(r, c.userAudit(r, *other, "user.sign_in_failed", map[string]any{"reason": "second factor", "join": true}))
			return show(http.StatusUnauthorized, "That code of the other account's authenticator app is wrong or was used already.")
		}
		method = "password+" + method
	case other.Passkeys > 0:
		// The password is right: the passkey is the next step, a wrong
		// answer to which counts on its own.
		attempt.Release(context.WithoutCancel(r.Context()))
		if !passkey.Possible(c.cfg.BaseURL, r.Host) {
			msg := "The other account's second factor is a passkey, and browsers refuse passkeys at an IP address: " +
				"open the console at localhost or at the name given with --base-url to join it"
			if other.TOTP {
				msg += ", or enter a code of its authenticator app with the password"
			}
			return show(http.StatusConflict, msg+".")
		}
		if err := c.keepCeremony(r.Context(), s, passkey.PendingJoin(other.ID, c.now().Add(passkey.CeremonyTimeout))); err != nil {
			return err
		}
		return c.renderAccount(w, r, s, http.StatusOK, func(d *accountData) { d.JoinPasskey = true })
	case other.MustChangePassword:
		return show(http.StatusUnprocessableEntity, "The other account's password is a one-time password: sign in to it and choose your own first.")
	default:
		required, err := c.store.OrgRequiresMFA(r.Context(), other.OrgID)
		if err != nil {
			return err
		}
		if required {
			return show(http.StatusUnprocessableEntity, "The other account's organization requires a second factor it has not set up: sign in to it once to set one up, then join.")
		}
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	n, err := c.joinAccount(r, s, *other, method)
	if err != nil {
		return err
	}
	return c.done(w, r, "/console/account", nil, joinedText(n))
}

// beginJoinAttempt counts an attempt to prove another account of the
// person, from the request's address: a *pageError (429) when there were
// too many wrong answers.
func (c *Console) beginJoinAttempt(w http.ResponseWriter, r *http.Request, s *session) (*auth.Attempt, error) {
	attempt, err := c.throttle.Begin(r.Context(), c.now(), auth.ThrottleKeys("console-join", s.User.ID, c.clientIP(r),
		auth.Limit{Max: MaxSignInFailures, Window: SignInWindow}, auth.Limit{Max: MaxAddressSignInFailures, Window: SignInWindow})...)
	var limited *auth.RateLimitedError
	if errors.As(err, &limited) {
		retryAfter(w, limited.RetryAfter)
		return nil, &pageError{http.StatusTooManyRequests, "Too many wrong answers. Try again in " + waitText(limited.RetryAfter) + "."}
	}
	return attempt, err
}

// joinAccount joins the proved account other to the signed-in person
// (method: how it was proved) and answers the number of organizations
// joined.
func (c *Console) joinAccount(r *http.Request, s *session, other store.ConsoleUser, method string) (int, error) {
	joined, err := c.store.JoinAccounts(r.Context(), s.User.ID, other.ID, func(orgID string) *store.AuditEntry {
		return &store.AuditEntry{Actor: s.actor(), Address: s.addr, Action: "user.join", Summary: map[string]any{"method": method}}
	})
	return len(joined), err
}

// joinPasskeyOptions asks for a passkey of the account whose password the
// session's pending join proved: the options of navigator.credentials.get,
// listing that account's passkeys. Asking again (a cancelled dialog) gives
// a new challenge within the pending join's deadline.
func (c *Console) joinPasskeyOptions(w http.ResponseWriter, r *http.Request, s *session) error {
	if _, err := ceremonyBody(w, r); err != nil {
		return err
	}
	pending, err := c.takeCeremony(r.Context(), s, passkey.KindJoin)
	if err != nil {
		return err
	}
	other, err := c.joinCandidate(r, s, pending.Account)
	if err != nil {
		return err
	}
	return c.askPasskey(w, r, s, other, "The other account has no passkey any more: join it with its password and a code of its authenticator app.",
		func(rp *passkey.RelyingParty, keys []store.Passkey) (any, passkey.Ceremony, error) {
			return rp.BeginJoin(other, keys, pending)
		})
}

// joinPasskey checks the browser's assertion for the session's pending
// join (once: the ceremony is taken) and joins the account. A passkey of
// another account, or an answer for another challenge or origin, counts
// like a wrong password and ends the pending join.
func (c *Console) joinPasskey(w http.ResponseWriter, r *http.Request, s *session) error {
	b, err := ceremonyBody(w, r)
	if err != nil {
		return err
	}
	cer, err := c.takeCeremony(r.Context(), s, passkey.KindJoin)
	if err != nil {
		return err
	}
	if !cer.Asked() {
		return badRequest("No passkey request is under way (or it was answered already): start again.")
	}
	parsed, err := passkey.ParseAssertion(b)
	if err != nil {
		slog.InfoContext(r.Context(), "console: passkey join answer unreadable", "user", s.User.Email, "err", err)
		return badRequest("The browser's answer is not a passkey sign-in.")
	}
	attempt, err := c.beginJoinAttempt(w, r, s)
	if err != nil {
		return err
	}
	other, err := c.joinCandidate(r, s, cer.Account)
	if err == nil {
		var rp *passkey.RelyingParty
		if rp, err = c.relyingParty(r); err != nil {
			err = passkeyUnavailable(err)
		} else {
			_, err = rp.FinishSignIn(r.Context(), c.store, other, cer, parsed, c.now())
		}
	}
	var refused *passkey.Refused
	if errors.As(err, &refused) {
		slog.InfoContext(r.Context(), "console: passkey join refused", "user", s.User.Email, "reason", refused.Reason, "err", passkey.Detail(refused.Err))
		c.record(r, c.userAudit(r, other, "user.sign_in_failed", map[string]any{"reason": "passkey", "detail": refused.Reason, "join": true}))
		// The attempt stays counted.
		return &pageError{http.StatusUnauthorized, "That passkey did not prove the other account: it is not one of its passkeys, or its answer does not match this request or this server's address (" +
			c.originText(r) + "). Enter the other account's password again."}
	}
	attempt.Release(context.WithoutCancel(r.Context()))
	if err != nil {
		return err
	}
	n, err := c.joinAccount(r, s, other, "password+passkey")
	if err != nil {
		return err
	}
	setFlash(w, c, "ok", joinedText(n))
	return writeJSON(w, map[string]string{"next": "/console/account"})
}

// joinCandidate answers the account id of a pending join: another enabled
// account of the person's e-mail address, with a password.
func (c *Console) joinCandidate(r *http.Request, s *session, id string) (store.ConsoleUser, error) {
	people, err := c.store.UsersByEmail(r.Context(), s.User.Email)
	if err != nil {
		return store.ConsoleUser{}, err
	}
	for _, u := range people {
		if u.ID == id && u.ID != s.User.ID && !u.Disabled && u.PasswordHash != "" {
			return u, nil
		}
	}
	return store.ConsoleUser{}, badRequest("The other account is no longer there to join: start again.")
}

func joinedText(n int) string {
	if n == 1 {
		return "The accounts are joined: you now belong to one more organization (the switcher at the top)."
	}
	return "The accounts are joined: the organizations of the other account are in the switcher at the top."
}
