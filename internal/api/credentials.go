package api

import (
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/valid"
)

// API credentials and the sign-in policy (patchd additions under
// /api/v1/credentials and /api/v1/sign-in-policy), for roles holding every
// permission, as the console's Users page: a credential is a key to the
// whole API for its role, and the policy decides how people sign in.

const maxCredentialName = 200

func credentialOut(c store.Credential) apiv1.Credential {
	return apiv1.Credential{ID: c.ID, Name: c.Name, ClientID: c.ClientID, Role: c.RoleName, RoleID: c.RoleID, Disabled: c.Disabled, CreatedAt: c.CreatedAt}
}

func (a *API) listCredentials(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "managing API credentials"); err != nil {
		return err
	}
	creds, err := a.store.ListCredentials(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, listOf(creds, credentialOut))
	return nil
}

func (a *API) createCredential(w http.ResponseWriter, r *http.Request) error {
	noStore(w)
	if err := everyPermission(r, "managing API credentials"); err != nil {
		return err
	}
	var body apiv1.CredentialBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	p := principal(r)
	var errs valid.Errors
	name := strings.TrimSpace(body.Name)
	switch {
	case name == "":
		errs.Add("name", "is required")
	case utf8.RuneCountInString(name) > maxCredentialName:
		errs.Add("name", "must have at most %d characters", maxCredentialName)
	case strings.IndexFunc(name, func(c rune) bool { return c < 0x20 || c == 0x7f }) >= 0:
		errs.Add("name", "must not hold control characters")
	}
	var role store.Role
	var err error
	if strings.TrimSpace(body.Role) == "" {
		errs.Add("role", "is required (a role id or name: GET /api/v1/roles)")
	} else if role, err = a.store.FindRole(r.Context(), p.OrgID, body.Role); errors.Is(err, dberr.ErrNotFound) {
		errs.Add("role", "no such role in the organization")
	} else if err != nil {
		return err
	} else if !role.Permissions.Has(perm.APIAccess) {
		errs.Add("role", "the role %s lacks api.access, which API credentials need", role.Name)
	}
	if err := errs.Err(); err != nil {
		return err
	}
	nc, err := admin.CreateCredentialBy(r.Context(), a.store, a.by(r), p.OrgID, name, role.ID)
	if errors.Is(err, dberr.ErrConflict) {
		return httpx.Validation("name", "is taken by another credential of the organization")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.NewCredential{Credential: apiv1.Credential{ID: nc.ID, Name: nc.Name, ClientID: nc.ClientID,
		Role: role.Name, RoleID: role.ID, CreatedAt: nc.CreatedAt}, ClientSecret: nc.ClientSecret})
	return nil
}

// targetCredential finds the credential {id} (id, client id or name) of
// the caller's organization.
func (a *API) targetCredential(r *http.Request) (store.Credential, error) {
	if err := everyPermission(r, "managing API credentials"); err != nil {
		return store.Credential{}, err
	}
	c, err := a.store.FindCredential(r.Context(), principal(r).OrgID, r.PathValue("id"))
	if isNotFound(err) {
		return c, httpx.NotFound("credential")
	}
	return c, err
}

func (a *API) patchCredential(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "managing API credentials"); err != nil {
		return err
	}
	var body apiv1.CredentialPatch
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	c, err := a.targetCredential(r)
	if err != nil {
		return err
	}
	if body.Disabled == nil {
		return httpx.Validation("disabled", "is required (true or false)")
	}
	p := principal(r)
	if *body.Disabled != c.Disabled {
		if _, err := admin.SetCredentialDisabledBy(r.Context(), a.store, a.by(r), p.OrgID, c.ID, *body.Disabled); err != nil {
			return err
		}
		a.auth.Forget(store.AuthChange{CredentialID: c.ID})
		c.Disabled = *body.Disabled
	}
	httpx.WriteJSON(w, http.StatusOK, credentialOut(c))
	return nil
}

func (a *API) deleteCredential(w http.ResponseWriter, r *http.Request) error {
	c, err := a.targetCredential(r)
	if err != nil {
		return err
	}
	p := principal(r)
	if _, err := admin.DeleteCredentialBy(r.Context(), a.store, a.by(r), p.OrgID, c.ID); err != nil {
		if isNotFound(err) {
			return httpx.NotFound("credential")
		}
		return err
	}
	a.auth.Forget(store.AuthChange{CredentialID: c.ID})
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

func (a *API) getSignInPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "the sign-in policy"); err != nil {
		return err
	}
	on, err := a.store.OrgRequiresMFA(r.Context(), principal(r).OrgID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.SignInPolicy{RequireSecondFactor: &on})
	return nil
}

func (a *API) putSignInPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "the sign-in policy"); err != nil {
		return err
	}
	var body apiv1.SignInPolicy
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	if body.RequireSecondFactor == nil {
		return httpx.Validation("requireSecondFactor", "is required (true or false)")
	}
	p := principal(r)
	if err := admin.SetRequireSecondFactor(r.Context(), a.store, a.by(r), p.OrgID, *body.RequireSecondFactor); err != nil {
		return err
	}
	return a.getSignInPolicy(w, r)
}
