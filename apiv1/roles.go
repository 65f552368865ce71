package apiv1

import "time"

// Role is a named set of the spec's permissions (a patchd addition:
// /api/v1/roles). Built-in roles (Administrator, Read-only) cannot be
// changed or deleted.
type Role struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
	Builtin     bool     `json:"builtin"`
	// Users and Credentials count the console users and API credentials
	// with the role; SSO says the organization's single sign-on gives it.
	Users       int       `json:"users"`
	Credentials int       `json:"credentials"`
	SSO         bool      `json:"sso"`
	CreatedAt   time.Time `json:"createdAt"`
}

// RoleBody creates a custom role.
type RoleBody struct {
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
}

// RolePatch changes a custom role: the fields given.
type RolePatch struct {
	Name        *string   `json:"name,omitempty"`
	Permissions *[]string `json:"permissions,omitempty"`
}
