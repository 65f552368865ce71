package console

import (
	"errors"
	"net/http"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/api"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
)

// Invitations: a user invited through POST /api/v1/users (or the Users
// page) opens the single-use link, chooses its password and is signed in
// (through the second-factor setup when its organization requires one).

func (c *Console) invitationRoutes() {
	c.handleFunc("GET "+api.InvitationPath, c.invitationPage)
	c.handleFunc("POST "+api.InvitationPath, c.invitationAccept)
}

type invitationData struct {
	Email, Token, FormToken, Error string
	MinPassword                    int
}

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
	}
	if err := c.render(w, r, nil, status, "invitation", "", "Choose your password", "", d); err != nil {
		c.fail(w, r, nil, err)
	}
}

func (c *Console) invitationAccept(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Referrer-Policy", "no-referrer")
	d := invitationData{Token: r.PostFormValue("token"), FormToken: c.formToken(w, r), MinPassword: admin.MinPasswordLength}
	show := func(status int, msg string) {
		d.Error = msg
		if err := c.render(w, r, nil, status, "invitation", "", "Choose your password", "", d); err != nil {
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
