package admin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// Managing people: a user's role, disabling, password and second-factor
// resets. The console (administrators) and the command line share these;
// each change is one Audit Trail entry with who made it and from where.

// By names who makes a change to a user: the Audit Trail actor and the
// client address ("" for the command line).
type By struct {
	Actor   string
	Address string
}

func (by By) entry(u store.ConsoleUser, action string, summary map[string]any) *store.AuditEntry {
	if summary == nil {
		summary = map[string]any{}
	}
	summary["email"] = u.Email
	return &store.AuditEntry{OrgID: u.OrgID, Actor: by.Actor, Address: by.Address, Action: action, TargetType: "user", TargetID: u.ID, Summary: summary}
}

// FindUser finds the console user with the e-mail address; orgRef names
// its organization when the address is a user of several.
func FindUser(ctx context.Context, s *store.Store, orgRef, email string) (store.ConsoleUser, error) {
	u, _, err := findUser(ctx, s, orgRef, email)
	return u, err
}

// ChangeRole gives the user another role of its organization (role id or
// name).
func ChangeRole(ctx context.Context, s *store.Store, by By, u store.ConsoleUser, roleRef string) (UserOut, error) {
	r, err := s.FindRole(ctx, u.OrgID, roleRef)
	if err != nil {
		return UserOut{}, err
	}
	out := UserOut{ID: u.ID, OrgID: u.OrgID, Email: u.Email, Role: r.Name, InstanceOperator: u.InstanceOperator, CreatedAt: u.CreatedAt}
	if r.ID == u.RoleID {
		return out, nil
	}
	err = s.SetUserRole(ctx, by.entry(u, "user.role_change", map[string]any{"from": u.RoleName, "to": r.Name}), u.OrgID, u.ID, r.ID)
	return out, err
}

// AddMembership makes the person u a member of another organization
// (toOrgRef) with a role of it (roleRef), recorded there as
// user.member_add.
func AddMembership(ctx context.Context, s *store.Store, by By, u store.ConsoleUser, toOrgRef, roleRef string) (PersonOut, error) {
	o, err := s.FindOrg(ctx, toOrgRef)
	if err != nil {
		return PersonOut{}, err
	}
	r, err := s.FindRole(ctx, o.ID, roleRef)
	if err != nil {
		return PersonOut{}, err
	}
	e := &store.AuditEntry{Actor: by.Actor, Address: by.Address, Action: "user.member_add", Summary: map[string]any{"email": u.Email, "role": r.Name}}
	if err := s.AddMembership(ctx, e, u.ID, o.ID, r.ID); err != nil {
		if errors.Is(err, dberr.ErrConflict) {
			return PersonOut{}, fmt.Errorf("%s has a member with the address %s already (join the accounts instead): %w", o.Name, u.Email, err)
		}
		return PersonOut{}, err
	}
	return ListedUser(ctx, s, o.ID, u.ID)
}

// RemoveMembership takes the person u out of its organization u.OrgID
// (its sessions there end), recorded there as user.delete with
// membershipOnly; the person's only organization is refused: the account
// goes only with its last membership (DeletePerson).
func RemoveMembership(ctx context.Context, s *store.Store, by By, u store.ConsoleUser) error {
	err := s.RemoveMembership(ctx, by.entry(u, "user.delete", nil), u.OrgID, u.ID)
	if errors.Is(err, store.ErrLastMembership) {
		return fmt.Errorf("%s belongs to no other organization: delete the account on that organization's Users page instead: %w", u.Email, err)
	}
	return err
}

// DefaultInvitationTTL is how long an invitation's link works unless told.
const DefaultInvitationTTL = 72 * time.Hour

// MaxInvitationTTL bounds an invitation's life.
const MaxInvitationTTL = 30 * 24 * time.Hour

// NewPerson creates a console user of the organization with the role r:
// with password (mustChange: the user chooses its own at its first
// sign-in), recorded as user.create with who made it and from where.
func NewPerson(ctx context.Context, s *store.Store, by By, orgID, email string, r store.Role, password string, mustChange bool) (store.User, error) {
	if len([]rune(password)) < MinPasswordLength {
		return store.User{}, fmt.Errorf("the password must have at least %d characters", MinPasswordLength)
	}
	hash, err := auth.HashPassword(ctx, password)
	if err != nil {
		return store.User{}, err
	}
	e := &store.AuditEntry{OrgID: orgID, Actor: by.Actor, Address: by.Address, Action: "user.create", TargetType: "user",
		Summary: map[string]any{"email": email, "role": r.Name, "mustChangePassword": mustChange}}
	return s.CreateUser(ctx, e, nil, store.User{OrgID: orgID, Email: email, RoleID: r.ID, PasswordHash: hash, MustChangePassword: mustChange})
}

// InvitePerson creates a console user of the organization with the role r
// and no password, and its invitation valid for ttl: it answers the
// link's token, which is stored only as its hash (auth.HashSecret).
// Recorded as user.invite.
func InvitePerson(ctx context.Context, s *store.Store, by By, orgID, email string, r store.Role, ttl time.Duration) (store.User, string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return store.User{}, "", err
	}
	token := base64.RawURLEncoding.EncodeToString(b[:])
	expires := time.Now().Add(ttl).UTC()
	e := &store.AuditEntry{OrgID: orgID, Actor: by.Actor, Address: by.Address, Action: "user.invite", TargetType: "user",
		Summary: map[string]any{"email": email, "role": r.Name, "expiresAt": expires.Format(time.RFC3339)}}
	u, err := s.CreateInvitedUser(ctx, e, store.User{OrgID: orgID, Email: email, RoleID: r.ID}, auth.HashSecret(token), expires)
	if err != nil {
		return store.User{}, "", err
	}
	return u, token, nil
}

// DeletePerson deletes a console user with its sessions and invitation.
func DeletePerson(ctx context.Context, s *store.Store, by By, u store.ConsoleUser) error {
	err := s.DeleteUser(ctx, by.entry(u, "user.delete", nil), u.OrgID, u.ID)
	if errors.Is(err, store.ErrLastOperator) {
		return fmt.Errorf("%s is the server's last enabled instance operator: grant another user first (patchd admin user operator grant --email …): %w", u.Email, err)
	}
	return err
}

// SetDisabled disables or enables the user; disabling ends its sessions.
func SetDisabled(ctx context.Context, s *store.Store, by By, u store.ConsoleUser, disabled bool) error {
	action := "user.enable"
	if disabled {
		action = "user.disable"
	}
	err := s.SetUserDisabled(ctx, by.entry(u, action, nil), u.OrgID, u.ID, disabled)
	if errors.Is(err, store.ErrLastOperator) {
		return fmt.Errorf("%s is the server's last enabled instance operator: grant another user first (patchd admin user operator grant --email …): %w", u.Email, err)
	}
	return err
}

// ResetPassword sets a new password for the user and ends its sessions.
// With mustChange the password is a one-time one: the user chooses its
// own at the next sign-in.
func ResetPassword(ctx context.Context, s *store.Store, by By, u store.ConsoleUser, password string, mustChange bool) error {
	if len([]rune(password)) < MinPasswordLength {
		return fmt.Errorf("the password must have at least %d characters", MinPasswordLength)
	}
	hash, err := auth.HashPassword(ctx, password)
	if err != nil {
		return err
	}
	return s.ResetUserPassword(ctx, by.entry(u, "user.password_reset", map[string]any{"mustChange": mustChange}), u.OrgID, u.ID, hash, mustChange)
}

// ResetSecondFactor removes every second factor of the user (its
// authenticator app, recovery codes and passkeys: a lost phone or key);
// when its organization requires one, the user sets up a new one at the
// next sign-in.
func ResetSecondFactor(ctx context.Context, s *store.Store, by By, u store.ConsoleUser) error {
	return s.ResetSecondFactor(ctx, by.entry(u, "user.mfa_reset", nil), u.OrgID, u.ID)
}

// SetRequireSecondFactor sets whether the organization requires a second
// factor of its password users.
func SetRequireSecondFactor(ctx context.Context, s *store.Store, by By, orgRef string, on bool) error {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return err
	}
	return s.SetOrgRequireMFA(ctx, &store.AuditEntry{OrgID: o.ID, Actor: by.Actor, Address: by.Address, Action: "org.require_mfa",
		TargetType: "org", TargetID: o.ID, Summary: map[string]any{"requireSecondFactor": on}}, o.ID, on)
}

// PersonOut is the printed form of a console user with its sign-in state.
type PersonOut struct {
	UserOut
	Disabled     bool `json:"disabled"`
	SecondFactor bool `json:"secondFactor"`
	// Passkeys counts the user's passkeys (part of SecondFactor).
	Passkeys           int  `json:"passkeys"`
	MustChangePassword bool `json:"mustChangePassword"`
}

func personOut(u store.ConsoleUser) PersonOut {
	return PersonOut{UserOut: UserOut{ID: u.ID, OrgID: u.OrgID, Email: u.Email, Role: u.RoleName, InstanceOperator: u.InstanceOperator,
		CreatedAt: u.CreatedAt}, Disabled: u.Disabled, SecondFactor: u.SecondFactor, Passkeys: u.Passkeys, MustChangePassword: u.MustChangePassword}
}

// ListUsers lists the organization's console users.
func ListUsers(ctx context.Context, s *store.Store, orgRef string) ([]PersonOut, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return nil, err
	}
	users, err := s.ListUsers(ctx, o.ID)
	if err != nil {
		return nil, err
	}
	out := make([]PersonOut, 0, len(users))
	for _, u := range users {
		out = append(out, personOut(u))
	}
	return out, nil
}

// ListedUser answers one user of the organization as ListUsers prints it.
func ListedUser(ctx context.Context, s *store.Store, orgID, id string) (PersonOut, error) {
	users, err := s.ListUsers(ctx, orgID)
	if err != nil {
		return PersonOut{}, err
	}
	for _, u := range users {
		if u.ID == id {
			return personOut(u), nil
		}
	}
	return PersonOut{}, fmt.Errorf("user: %w", dberr.ErrNotFound)
}
