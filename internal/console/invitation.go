package console

import (
	"errors"
	"net/http"
	"strings"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// Invitations: a user invited through POST /api/v1/users (or the Users
// page) opens the single-use link, chooses its password and is signed in
// (through the second-factor setup when its organization requires one).
// A person with an account already signs in to it (the link brings it
// back) and accepts with it instead: the invitation's membership becomes
// the person's (docs/identity.md, "Memberships"). The page offers both
// whether or not the address has an account: nothing tells the inviting
// organization, nor whoever holds the link, that it has one elsewhere.

func (c *Console) invitationRoutes() {
	c.handleFunc("GET "+api.InvitationPath, c.invitationPage)
	c.handleFunc("POST "+api.InvitationPath, c.invitationAccept)
	c.page("POST "+invitationJoinPath, 0, c.invitationJoin)
}

// invitationJoinPath accepts an invitation as the signed-in person.
const invitationJoinPath = api.InvitationPath + "/accept"

type invitationData struct {
	Email, Token, FormToken, Error string
	MinPassword                    int
	// SignedIn is the address of the browser's signed-in person, if any;
	// CSRF is its session's token. Same says it is the invited address:
	// the page offers to accept with that account.
	SignedIn, CSRF string
	Same           bool
}

// signedIn fills in the browser's signed-in person.
func (d *invitationData) signedIn(s *session) {
	if s == nil || s.Stage != store.StageSignedIn {
		return
	}
	d.SignedIn, d.CSRF = s.User.Email, s.CSRFToken
	d.Same = d.Email != "" && strings.EqualFold(d.SignedIn, d.Email)
}

// SignInURL is the sign-in page that comes back to this invitation.
func (d invitationData) SignInURL() string {
	return "/console/login?next=" + urlQueryEscape(api.InvitationPath+"?token="+d.Token)
}

const invitationTitle = "Your invitation"

// invalidInvitation is the text for a link that opens nothing.
const invalidInvitation = "This invitation link does not work: it was used already, it expired, or the account was disabled or deleted. Ask an administrator for a new invitation."

func (c *Console) invitationPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	d := invitationData{Token: r.URL.Query().Get("token"), FormToken: c.formToken(w, r), MinPassword: admin.MinPasswordLength}
	status := http.StatusOK
	u, err := c.store.InvitedUser(r.Context(), auth.HashSecret(d.Token), c.now())
	switch {
	case errors.Is(err, dberr.ErrNotFound) || d.Token == "":
		status, d.Error, d.Token = http.StatusNotFound, invalidInvitation, ""
	case err != nil:
		c.fail(w, r, nil, err)
		return
	default:
		d.Email = u.Email
		s, err := c.session(w, r)
		if err != nil {
			c.fail(w, r, nil, err)
			return
		}
		d.signedIn(s)
	}
	if err := c.render(w, r, nil, status, "invitation", "", invitationTitle, "", d); err != nil {
		c.fail(w, r, nil, err)
	}
}

func (c *Console) invitationAccept(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	d := invitationData{Token: r.PostFormValue("token"), FormToken: c.formToken(w, r), MinPassword: admin.MinPasswordLength}
	show := func(status int, msg string) {
		d.Error = msg
		if err := c.render(w, r, nil, status, "invitation", "", invitationTitle, "", d); err != nil {
			c.fail(w, r, nil, err)
		}
	}
	if !checkFormToken(r) {
		show(http.StatusForbidden, "The form was stale. Open the invitation link again.")
		return
	}
	hash := auth.HashSecret(d.Token)
	u, err := c.store.InvitedUser(r.Context(), hash, c.now())
	if errors.Is(err, dberr.ErrNotFound) || d.Token == "" {
		d.Token = ""
		show(http.StatusNotFound, invalidInvitation)
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	d.Email = u.Email
	password := r.PostFormValue("password")
	if password != r.PostFormValue("password2") {
		show(http.StatusUnprocessableEntity, "The two passwords differ.")
		return
	}
	if len([]rune(password)) < admin.MinPasswordLength {
		show(http.StatusUnprocessableEntity, "The password must have at least 12 characters.")
		return
	}
	passwordHash, err := auth.HashPassword(r.Context(), password)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	// The invitation is taken in the same transaction as the password is
	// set: two forms sent at once set one password.
	u, err = c.store.AcceptInvitation(r.Context(), c.userAudit(r, u, "user.invitation_accept", map[string]any{"email": u.Email}), hash, passwordHash, c.now())
	if errors.Is(err, dberr.ErrNotFound) {
		d.Token = ""
		show(http.StatusNotFound, invalidInvitation)
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if err := c.passwordSignedIn(w, r, u, "/console/"); err != nil {
		c.fail(w, r, nil, err)
	}
}

// invitationJoin accepts an invitation as the signed-in person, whose
// e-mail address must be the invited one: the person becomes a member of
// the invitation's organization with the invited role, the pending
// invited account goes, and the session enters the organization (when
// its "require a second factor" lets it).
func (c *Console) invitationJoin(w http.ResponseWriter, r *http.Request, s *session) error {
	w.Header().Set("Referrer-Policy", "no-referrer")
	d := invitationData{Token: r.PostFormValue("token"), MinPassword: admin.MinPasswordLength}
	show := func(status int, msg string) error {
		if d.Token != "" {
			u, err := c.store.InvitedUser(r.Context(), auth.HashSecret(d.Token), c.now())
			switch {
			case errors.Is(err, dberr.ErrNotFound):
				// Taken meanwhile.
				d.Token, status, msg = "", http.StatusNotFound, invalidInvitation
			case err != nil:
				return err
			default:
				d.Email = u.Email
				d.FormToken = c.formToken(w, r)
				d.signedIn(s)
			}
		}
		d.Error = msg
		return c.render(w, r, nil, status, "invitation", "", invitationTitle, "", d)
	}
	e := &store.AuditEntry{Actor: s.actor(), Address: s.addr, Action: "user.invitation_accept", Summary: map[string]any{"email": s.User.Email}}
	m, err := c.store.AcceptInvitationAs(r.Context(), e, auth.HashSecret(d.Token), s.User.ID, c.now())
	switch {
	case errors.Is(err, dberr.ErrNotFound):
		d.Token = ""
		return show(http.StatusNotFound, invalidInvitation)
	case errors.Is(err, store.ErrInvitationEmail):
		return show(http.StatusForbidden, "You are signed in as "+s.User.Email+": this invitation is for another e-mail address. Sign out and sign in with the invited address's account, or choose a password for a new account.")
	case errors.Is(err, store.ErrAlreadyMember):
		return show(http.StatusConflict, "Your account is a member of this organization already: nothing was changed. Ask an administrator to delete the invitation.")
	case err != nil:
		return err
	}
	return c.enterOrg(w, r, s, m, "/console/", "The invitation is accepted. ")
}
