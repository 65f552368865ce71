package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/patchd/patchd/apiv1"
)

// ListUsers lists the organization's console users (a patchd addition).
func (c *Client) ListUsers(ctx context.Context) (apiv1.List[apiv1.User], error) {
	var out apiv1.List[apiv1.User]
	err := c.Do(ctx, http.MethodGet, "/api/v1/users", nil, nil, &out)
	return out, err
}

// PatchUser changes a user's role or disables/enables it.
func (c *Client) PatchUser(ctx context.Context, id string, body apiv1.UserPatch) (apiv1.User, error) {
	var out apiv1.User
	err := c.Do(ctx, http.MethodPatch, "/api/v1/users/"+url.PathEscape(id), nil, body, &out)
	return out, err
}

// ResetUserPassword sets a user's password and ends its sessions.
func (c *Client) ResetUserPassword(ctx context.Context, id string, body apiv1.PasswordReset) (apiv1.User, error) {
	var out apiv1.User
	err := c.Do(ctx, http.MethodPost, "/api/v1/users/"+url.PathEscape(id)+"/password", nil, body, &out)
	return out, err
}

// ResetUserSecondFactor removes a user's second factors (TOTP app,
// recovery codes and passkeys).
func (c *Client) ResetUserSecondFactor(ctx context.Context, id string) (apiv1.User, error) {
	var out apiv1.User
	err := c.Do(ctx, http.MethodDelete, "/api/v1/users/"+url.PathEscape(id)+"/second-factor", nil, nil, &out)
	return out, err
}
