package apiv1

import "time"

// User is a console user of the organization (a patchd addition:
// GET /api/v1/users and the operations under it).
type User struct {
	ID                 string    `json:"id"`
	Email              string    `json:"email"`
	Role               string    `json:"role"`
	RoleID             string    `json:"roleId"`
	Disabled           bool      `json:"disabled"`
	InstanceOperator   bool      `json:"instanceOperator"`
	SecondFactor       bool      `json:"secondFactor"`
	MustChangePassword bool      `json:"mustChangePassword"`
	CreatedAt          time.Time `json:"createdAt"`
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
