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

// Credential is an API credential of the organization (a patchd addition:
// /api/v1/credentials); its secret is never answered after creation.
type Credential struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	ClientID  string    `json:"clientId"`
	Role      string    `json:"role"`
	RoleID    string    `json:"roleId"`
	Disabled  bool      `json:"disabled"`
	CreatedAt time.Time `json:"createdAt"`
}

// CredentialBody creates an API credential with a role (id or name) that
// holds api.access.
type CredentialBody struct {
	Name string `json:"name"`
	Role string `json:"role"`
}

// NewCredential is a created credential with its secret, shown only here.
type NewCredential struct {
	Credential
	ClientSecret string `json:"clientSecret"`
}

// CredentialPatch disables or enables a credential.
type CredentialPatch struct {
	Disabled *bool `json:"disabled"`
}

// SignInPolicy is the organization's sign-in policy: RequireSecondFactor
// makes password users without a second factor set one up at their next
// sign-in.
type SignInPolicy struct {
	RequireSecondFactor *bool `json:"requireSecondFactor"`
}
