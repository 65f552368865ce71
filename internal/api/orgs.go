package api

import (
	"errors"
	"net/http"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// Creating organizations (a patchd addition, POST /api/v1/organizations;
// docs/identity.md, "Creating organizations"). A credential stays of one
// organization: the operation acts for the person behind the call, a
// console user, or for an API credential the person who created it (a
// member of the credential's organization), when that person holds the
// instance-level create-organizations permission. The person becomes the
// new organization's Administrator; the call's own organization does not
// change and the token reaches only it.

func errNoCreateOrgs(why string) error {
	return httpx.Errorf(http.StatusForbidden, "create_organizations", why).
		WithHeader("WWW-Authenticate", `Bearer realm="patchd", error="insufficient_scope"`)
}

// callerPerson is the person a call acts for.
func (a *API) callerPerson(r *http.Request) (store.ConsoleUser, error) {
	p := principal(r)
	var u store.ConsoleUser
	var err error
	if p.UserEmail != "" {
		u, err = a.store.MemberByEmail(r.Context(), p.OrgID, p.UserEmail)
	} else {
		u, err = a.store.CredentialPerson(r.Context(), p.OrgID, p.CredentialID)
	}
	if isNotFound(err) {
		return u, errNoCreateOrgs("creating organizations takes a person holding the create-organizations permission: this credential was not created by a member of its organization")
	}
	return u, err
}

func organizationOut(o admin.NewOrgOut) apiv1.Organization {
	return apiv1.Organization{ID: o.ID, Name: o.Name, TimeZone: o.TimeZone, CreatedAt: o.CreatedAt, Administrator: o.Administrator, Copied: o.Copied}
}

func (a *API) createOrganization(w http.ResponseWriter, r *http.Request) error {
	if err := everyPermission(r, "creating organizations"); err != nil {
		return err
	}
	var body apiv1.OrganizationBody
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		return err
	}
	u, err := a.callerPerson(r)
	if err != nil {
		return err
	}
	if !u.CreateOrgs || u.Disabled {
		return errNoCreateOrgs("creating organizations is an instance-level permission the instance operator grants (patchd admin user create-orgs grant)")
	}
	out, err := admin.CreateOrgAs(r.Context(), a.store, admin.OrgRequest{Name: body.Name, TimeZone: body.TimeZone, Template: body.Template,
		Creator: &u, Checked: true, By: a.by(r), FromOrgID: principal(r).OrgID})
	if errors.Is(err, store.ErrNoCreateOrgs) {
		return errNoCreateOrgs("creating organizations is an instance-level permission the instance operator grants (patchd admin user create-orgs grant)")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, organizationOut(out))
	return nil
}
