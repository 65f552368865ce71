package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/valid"
)

// The organization's single sign-on provider (patchd additions): what the
// console's Single sign-on page and patchd admin sso do, for roles holding
// every permission (a provider decides who signs in, and with which role).

func (a *API) getSSO(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "single sign-on settings"); err != nil {
		return err
	}
	out, err := admin.ShowSSO(r.Context(), a.store, principal(r).OrgID)
	if errors.Is(err, dberr.ErrNotFound) {
		return httpx.NotFound("single sign-on provider")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ssoOut(out))
	return nil
}

func (a *API) setSSO(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "single sign-on settings"); err != nil {
		return err
	}
	var body apiv1.SSOBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	in := sso.Settings{ProviderName: body.ProviderName, Issuer: body.Issuer, ClientID: body.ClientID, ClientSecret: body.ClientSecret,
		AllowedDomains: body.AllowedDomains, Scopes: body.Scopes, RoleClaim: body.RoleClaim, DefaultRole: body.DefaultRole,
		JustInTime: body.JustInTime, Enabled: body.Enabled, ProviderVerifiesEmail: body.ProviderVerifiesEmail}
	for _, m := range body.RoleMap {
		in.RoleMap = append(in.RoleMap, sso.Mapping{Value: m.Value, Role: m.Role})
	}
	out, err := admin.SetSSOBy(r.Context(), a.store, a.by(r), principal(r).OrgID, in)
	var discovery *sso.DiscoveryError
	if errors.As(err, &discovery) {
		return httpx.Errorf(http.StatusBadRequest, "issuer_discovery_failed", discovery.Error())
	}
	var problems sso.Problems
	if errors.As(err, &problems) {
		var errs valid.Errors
		for _, p := range problems {
			field, msg, ok := strings.Cut(p, ": ")
			if !ok {
				field, msg = "body", p
			}
			errs.Add(field, "%s", msg)
		}
		return errs.Err()
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, ssoOut(out))
	return nil
}

func (a *API) deleteSSO(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "single sign-on settings"); err != nil {
		return err
	}
	_, err := admin.DeleteSSOBy(r.Context(), a.store, a.by(r), principal(r).OrgID)
	if errors.Is(err, dberr.ErrNotFound) {
		return httpx.NotFound("single sign-on provider")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, apiv1.OK{OK: true})
	return nil
}

// ssoOut is the stored provider as the API answers it (never the secret).
func ssoOut(o admin.SSOOut) apiv1.SSO {
	c := o.SSOConfig
	out := apiv1.SSO{ProviderName: c.ProviderName, Issuer: c.Issuer, ClientID: c.ClientID, HasClientSecret: c.HasClientSecret,
		AllowedDomains: c.AllowedDomains, Scopes: c.Scopes, RoleClaim: c.RoleClaim, RoleMap: []apiv1.SSORoleMapping{},
		DefaultRole: c.DefaultRoleName, JustInTime: c.JustInTime, ProviderVerifiesEmail: c.ProviderVerifiesEmail, Enabled: c.Enabled, UpdatedBy: c.UpdatedBy, UpdatedAt: c.UpdatedAt}
	if out.AllowedDomains == nil {
		out.AllowedDomains = []string{}
	}
	if out.Scopes == nil {
		out.Scopes = []string{}
	}
	for _, m := range c.RoleMap {
		out.RoleMap = append(out.RoleMap, apiv1.SSORoleMapping{Value: m.Value, Role: m.RoleName})
	}
	return out
}
