package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/patchd/patchd/apiv1"
)

// ListUsers lists the organization's console users (a patchd addition).
func (c *Client) ListUsers(ctx context.Context) (apiv1.List[apiv1.User], error) {
	return call[apiv1.List[apiv1.User]](ctx, c, http.MethodGet, "/api/v1/users", nil, nil)
}

// PatchUser changes a user's role or disables/enables it.
func (c *Client) PatchUser(ctx context.Context, id string, body apiv1.UserPatch) (apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodPatch, "/api/v1/users/"+url.PathEscape(id), nil, body)
}

// ResetUserPassword sets a user's password and ends its sessions.
func (c *Client) ResetUserPassword(ctx context.Context, id string, body apiv1.PasswordReset) (apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodPost, "/api/v1/users/"+url.PathEscape(id)+"/password", nil, body)
}

// ResetUserSecondFactor removes a user's second factors (TOTP app,
// recovery codes and passkeys).
func (c *Client) ResetUserSecondFactor(ctx context.Context, id string) (apiv1.User, error) {
	return call[apiv1.User](ctx, c, http.MethodDelete, "/api/v1/users/"+url.PathEscape(id)+"/second-factor", nil, nil)
}

// CreateUser creates a console user with a one-time password, or an
// invitation whose link the answer holds (shown once).
func (c *Client) CreateUser(ctx context.Context, body apiv1.UserCreate) (apiv1.NewUser, error) {
	return call[apiv1.NewUser](ctx, c, http.MethodPost, "/api/v1/users", nil, body)
}

// DeleteUser deletes a console user with its sessions and invitation.
func (c *Client) DeleteUser(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/users/"+url.PathEscape(id), nil, nil, nil)
}

// ListRoles lists the organization's roles with what holds them.
func (c *Client) ListRoles(ctx context.Context) (apiv1.List[apiv1.Role], error) {
	return call[apiv1.List[apiv1.Role]](ctx, c, http.MethodGet, "/api/v1/roles", nil, nil)
}

// CreateRole creates a custom role from the spec's permissions.
func (c *Client) CreateRole(ctx context.Context, body apiv1.RoleBody) (apiv1.Role, error) {
	return call[apiv1.Role](ctx, c, http.MethodPost, "/api/v1/roles", nil, body)
}

// PatchRole renames a custom role or sets its permissions.
func (c *Client) PatchRole(ctx context.Context, idOrName string, body apiv1.RolePatch) (apiv1.Role, error) {
	return call[apiv1.Role](ctx, c, http.MethodPatch, "/api/v1/roles/"+url.PathEscape(idOrName), nil, body)
}

// DeleteRole deletes a custom role nothing holds.
func (c *Client) DeleteRole(ctx context.Context, idOrName string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/roles/"+url.PathEscape(idOrName), nil, nil, nil)
}

// ListCredentials lists the organization's API credentials (never their
// secrets).
func (c *Client) ListCredentials(ctx context.Context) (apiv1.List[apiv1.Credential], error) {
	return call[apiv1.List[apiv1.Credential]](ctx, c, http.MethodGet, "/api/v1/credentials", nil, nil)
}

// CreateCredential creates an API credential; its secret is in the answer
// only.
func (c *Client) CreateCredential(ctx context.Context, body apiv1.CredentialBody) (apiv1.NewCredential, error) {
	return call[apiv1.NewCredential](ctx, c, http.MethodPost, "/api/v1/credentials", nil, body)
}

// SetCredentialDisabled disables (its tokens stop working) or enables an
// API credential.
func (c *Client) SetCredentialDisabled(ctx context.Context, id string, disabled bool) (apiv1.Credential, error) {
	return call[apiv1.Credential](ctx, c, http.MethodPatch, "/api/v1/credentials/"+url.PathEscape(id), nil, apiv1.CredentialPatch{Disabled: &disabled})
}

// DeleteCredential deletes an API credential.
func (c *Client) DeleteCredential(ctx context.Context, id string) error {
	return c.Do(ctx, http.MethodDelete, "/api/v1/credentials/"+url.PathEscape(id), nil, nil, nil)
}

// SignInPolicy reads the organization's sign-in policy.
func (c *Client) SignInPolicy(ctx context.Context) (apiv1.SignInPolicy, error) {
	return call[apiv1.SignInPolicy](ctx, c, http.MethodGet, "/api/v1/sign-in-policy", nil, nil)
}

// SetSignInPolicy sets the organization's sign-in policy.
func (c *Client) SetSignInPolicy(ctx context.Context, requireSecondFactor bool) (apiv1.SignInPolicy, error) {
	return call[apiv1.SignInPolicy](ctx, c, http.MethodPut, "/api/v1/sign-in-policy", nil, apiv1.SignInPolicy{RequireSecondFactor: &requireSecondFactor})
}

// CreateOrganization creates an organization, optionally from a template
// (the caller's person needs the create-organizations permission).
func (c *Client) CreateOrganization(ctx context.Context, body apiv1.OrganizationBody) (apiv1.Organization, error) {
	var out apiv1.Organization
	err := c.Do(ctx, http.MethodPost, "/api/v1/organizations", nil, body, &out)
	return out, err
}
