package api

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// People (a patchd addition under /api/v1/users): list the organization's
// console users, change a user's role, disable or enable it, reset its
// password or second factor. As in the console they belong to roles
// holding every permission (Administrator), and an instance operator's
// account is changed only by an instance operator (console or command
// line): an organization's credential must not take over the instance.

// adminOnly refuses a caller whose role lacks any permission.
func adminOnly(r *http.Request) error { return everyPermission(r, "managing console users") }

// everyPermission refuses a caller whose role lacks any permission; what
// names the operation in the error's description.
func everyPermission(r *http.Request, what string) error {
	if principal(r).Permissions&perm.All != perm.All {
		return httpx.Errorf(http.StatusForbidden, "insufficient_scope", what+" takes a role holding every permission (Administrator)").
			WithHeader("WWW-Authenticate", `Bearer realm="patchd", error="insufficient_scope"`)
	}
	return nil
}

func userOut(u store.ConsoleUser) apiv1.User {
	out := apiv1.User{ID: u.ID, Email: u.Email, Role: u.RoleName, RoleID: u.RoleID, Disabled: u.Disabled, InstanceOperator: u.InstanceOperator,
		SecondFactor: u.SecondFactor, MustChangePassword: u.MustChangePassword, CreatedAt: u.CreatedAt}
	if !u.InvitationExpiresAt.IsZero() {
		out.InvitationExpiresAt = &u.InvitationExpiresAt
	}
	return out
}

// createUser creates a console user with an initial password (changed at
// the first sign-in) or an invitation (patchd addition).
func (a *API) createUser(w http.ResponseWriter, r *http.Request) error {
	noStore(w)
	if err := adminOnly(r); err != nil {
		return err
	}
	var body apiv1.UserCreate
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	p := principal(r)
	var errs valid.Errors
	email, err := admin.CheckEmail(body.Email)
	if err != nil {
		errs.Add("email", "must be an e-mail address (name@example.com)")
	}
	var role store.Role
	if strings.TrimSpace(body.Role) == "" {
		errs.Add("role", "is required (a role id or name: GET /api/v1/roles)")
	} else if role, err = a.store.FindRole(r.Context(), p.OrgID, body.Role); errors.Is(err, dberr.ErrNotFound) {
		errs.Add("role", "no such role in the organization")
	} else if err != nil {
		return err
	}
	switch {
	case body.Invite && body.Password != "":
		errs.Add("password", "give a password or invite: true, not both")
	case !body.Invite && body.Password == "":
		errs.Add("password", "is required unless invite is true")
	case !body.Invite && len([]rune(body.Password)) < admin.MinPasswordLength:
		errs.Add("password", "must have at least %d characters", admin.MinPasswordLength)
	}
	ttl := admin.DefaultInvitationTTL
	switch {
	case body.ExpiresInHours != 0 && !body.Invite:
		errs.Add("expiresInHours", "goes with invite: true")
	case body.ExpiresInHours < 0 || time.Duration(body.ExpiresInHours)*time.Hour > admin.MaxInvitationTTL:
		errs.Add("expiresInHours", "must be 1 to %d", int(admin.MaxInvitationTTL/time.Hour))
	case body.ExpiresInHours > 0:
		ttl = time.Duration(body.ExpiresInHours) * time.Hour
	}
	if err := errs.Err(); err != nil {
		return err
	}
	by := a.by(r)
	var u store.User
	var token string
	if body.Invite {
		u, token, err = admin.InvitePerson(r.Context(), a.store, by, p.OrgID, email, role, ttl)
	} else {
		u, err = admin.NewPerson(r.Context(), a.store, by, p.OrgID, email, role, body.Password, true)
	}
	if errors.Is(err, dberr.ErrConflict) {
		return httpx.Validation("email", "a user of the organization has this e-mail address")
	}
	if err != nil {
		return err
	}
	out := apiv1.NewUser{User: userOut(store.ConsoleUser{User: u, RoleName: role.Name})}
	if token != "" {
		out.Invitation = &apiv1.Invitation{Token: token, URL: a.baseURL(r) + InvitationPath + "?token=" + url.QueryEscape(token), ExpiresAt: u.InvitationExpiresAt}
	}
	httpx.WriteJSON(w, http.StatusOK, out)
	return nil
}

// InvitationPath is the console page an invitation's link opens.
const InvitationPath = "/console/invitation"

// baseURL is the server's public address: --base-url, else the request's.
func (a *API) baseURL(r *http.Request) string {
	if a.cfg.BaseURL != "" {
		return strings.TrimRight(a.cfg.BaseURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// deleteUser deletes a console user with its sessions and invitation
// (patchd addition).
func (a *API) deleteUser(w http.ResponseWriter, r *http.Request) error {
	u, by, err := a.targetUser(r)
	if err != nil {
		return err
	}
	if err := admin.DeletePerson(r.Context(), a.store, by, u); err != nil {
		if isNotFound(err) {
			return httpx.NotFound("user")
		}
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

func (a *API) listUsers(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnly(r); err != nil {
		return err
	}
	users, err := a.store.ListUsers(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(users, userOut))
	return nil
}

// targetUser finds the user {id} of the caller's organization that the
// caller may change.
func (a *API) targetUser(r *http.Request) (store.ConsoleUser, admin.By, error) {
	if err := adminOnly(r); err != nil {
		return store.ConsoleUser{}, admin.By{}, err
	}
	p := principal(r)
	users, err := a.store.ListUsers(r.Context(), p.OrgID)
	if err != nil {
		return store.ConsoleUser{}, admin.By{}, err
	}
	for _, u := range users {
		if u.ID != r.PathValue("id") {
			continue
		}
		if u.InstanceOperator {
			return u, admin.By{}, httpx.Errorf(http.StatusForbidden, "instance_operator",
				u.Email+" is an instance operator: only an instance operator changes that account (console, or patchd admin user …)")
		}
		return u, a.by(r), nil
	}
	return store.ConsoleUser{}, admin.By{}, httpx.NotFound("user")
}

// reread answers the user as it is now.
func (a *API) reread(w http.ResponseWriter, r *http.Request, id string) error {
	users, err := a.store.ListUsers(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	for _, u := range users {
		if u.ID == id {
			httpx.WriteJSON(w, http.StatusOK, userOut(u))
			return nil
		}
	}
	return httpx.NotFound("user")
}

func (a *API) patchUser(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnly(r); err != nil {
		return err
	}
	var body apiv1.UserPatch
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	u, by, err := a.targetUser(r)
	if err != nil {
		return err
	}
	if body.Role == nil && body.Disabled == nil {
		return httpx.Validation("role", "give role, disabled or both")
	}
	if body.Role != nil {
		if _, err := a.store.FindRole(r.Context(), u.OrgID, *body.Role); errors.Is(err, dberr.ErrNotFound) {
			return httpx.Validation("role", "no such role in the organization")
		} else if err != nil {
			return err
		}
	}
	if body.Role != nil {
		if _, err := admin.ChangeRole(r.Context(), a.store, by, u, *body.Role); err != nil {
			return err
		}
	}
	if body.Disabled != nil && *body.Disabled != u.Disabled {
		if err := admin.SetDisabled(r.Context(), a.store, by, u, *body.Disabled); err != nil {
			return accountOfOthers(err)
		}
	}
	return a.reread(w, r, u.ID)
}

func (a *API) resetUserPassword(w http.ResponseWriter, r *http.Request) error {
	if err := adminOnly(r); err != nil {
		return err
	}
	var body apiv1.PasswordReset
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	u, by, err := a.targetUser(r)
	if err != nil {
		return err
	}
	if len([]rune(body.Password)) < admin.MinPasswordLength {
		return httpx.Validation("password", "must have at least 12 characters")
	}
	mustChange := body.MustChange == nil || *body.MustChange
	if err := admin.ResetPassword(r.Context(), a.store, by, u, body.Password, mustChange); err != nil {
		return accountOfOthers(err)
	}
	return a.reread(w, r, u.ID)
}

func (a *API) resetUserSecondFactor(w http.ResponseWriter, r *http.Request) error {
	u, by, err := a.targetUser(r)
	if err != nil {
		return err
	}
	if err := admin.ResetSecondFactor(r.Context(), a.store, by, u); err != nil {
		return accountOfOthers(err)
	}
	return a.reread(w, r, u.ID)
}

// accountOfOthers answers 409 other_organizations for a change of the
// account of a person who belongs to other organizations too
// (store.ErrOtherOrgs): an organization changes only its role and its
// membership.
func accountOfOthers(err error) error {
	if errors.Is(err, store.ErrOtherOrgs) {
		return httpx.Errorf(http.StatusConflict, "other_organizations",
			"the person belongs to other organizations too: this organization changes only its role and its membership (DELETE removes it from this organization)")
	}
	return err
}
