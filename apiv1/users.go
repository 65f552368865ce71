package apiv1

import "time"

// User is a console user of the organization (a patchd addition:
// GET /api/v1/users and the operations under it).
type User struct {
	ID                 string `json:"id"`
	Email              string `json:"email"`
	Role               string `json:"role"`
	RoleID             string `json:"roleId"`
	Disabled           bool   `json:"disabled"`
	InstanceOperator   bool   `json:"instanceOperator"`
	SecondFactor       bool   `json:"secondFactor"`
	MustChangePassword bool   `json:"mustChangePassword"`
	// InvitationExpiresAt is when the user's pending invitation ends;
	// null when it has none (the user set its password).
	InvitationExpiresAt *time.Time `json:"invitationExpiresAt"`
	CreatedAt           time.Time  `json:"createdAt"`
}

// UserCreate creates a console user with a role (id or name): either with
// an initial Password, which the user must change at its first sign-in,
// or with Invite, a single-use link through which the user sets its
// password, valid ExpiresInHours (1-720, default 72).
type UserCreate struct {
	Email          string `json:"email"`
	Role           string `json:"role"`
	Password       string `json:"password,omitempty"`
	Invite         bool   `json:"invite,omitempty"`
	ExpiresInHours int    `json:"expiresInHours,omitempty"`
}

// NewUser is a created user; Invitation is set for an invitation, and
// its token is shown only here.
type NewUser struct {
	User
	Invitation *Invitation `json:"invitation,omitempty"`
}

// Invitation is the link an invited user opens to set its password.
type Invitation struct {
	Token     string    `json:"token"`
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// UserPatch changes a user's role (id or name) or disables/enables it.
type UserPatch struct {
	Role     *string `json:"role,omitempty"`
	Disabled *bool   `json:"disabled,omitempty"`
}

// PasswordReset sets a user's password; MustChange (default true) makes it
// a one-time password.
type PasswordReset struct {
	Password   string `json:"password"`
	MustChange *bool  `json:"mustChange,omitempty"`
}
