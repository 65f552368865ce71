// Package admin holds the administration use cases shared by the command
// line (patchd admin …), the first-start bootstrap and the console: creating
// organizations, roles, API credentials, enrollment tokens and users. Each
// answers a value that prints as the command's one JSON object.
package admin

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// ActorCLI is the Audit Trail actor of the admin command line.
const ActorCLI = store.ActorCLI

// DefaultOrg is the organization the first start creates.
const DefaultOrg = "Default"

// CreateOrg creates an organization with its built-in roles.
func CreateOrg(ctx context.Context, s *store.Store, name, timeZone string) (store.Org, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return store.Org{}, errors.New("--name is required")
	}
	if timeZone == "" {
		timeZone = "UTC"
	}
	if _, err := time.LoadLocation(timeZone); err != nil {
		return store.Org{}, fmt.Errorf("--timezone %q is not a known IANA time zone", timeZone)
	}
	return s.CreateOrg(ctx, name, timeZone)
}

// RoleOut is the printed form of a role.
type RoleOut struct {
	ID          string   `json:"id"`
	OrgID       string   `json:"orgId"`
	Name        string   `json:"name"`
	Permissions []string `json:"permissions"`
	Builtin     bool     `json:"builtin"`
}

// CreateRole creates a custom role from a comma-separated permission list.
func CreateRole(ctx context.Context, s *store.Store, orgRef, name, permissions string) (RoleOut, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return RoleOut{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return RoleOut{}, errors.New("--name is required")
	}
	set, err := perm.Parse(permissions)
	if err != nil {
		return RoleOut{}, err
	}
	if set == 0 {
		return RoleOut{}, errors.New("--permissions is required (for example api.access,endpoints.view)")
	}
	r, err := s.CreateRole(ctx, o.ID, name, set)
	if err != nil {
		return RoleOut{}, err
	}
	return RoleOut{ID: r.ID, OrgID: o.ID, Name: r.Name, Permissions: set.Names(), Builtin: false}, nil
}

// NewCredential is a created API credential; the secret is shown only here.
type NewCredential struct {
	ID           string    `json:"id"`
	OrgID        string    `json:"orgId"`
	Name         string    `json:"name"`
	Role         string    `json:"role"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret"`
	CreatedAt    time.Time `json:"createdAt"`
}

// CreateCredential creates an API credential with a role of the organization.
func CreateCredential(ctx context.Context, s *store.Store, actor, orgRef, name, roleRef string) (NewCredential, error) {
	return CreateCredentialBy(ctx, s, By{Actor: actor}, orgRef, name, roleRef)
}

// CreateCredentialBy is CreateCredential with the client address of who
// makes it (the console and the API).
func CreateCredentialBy(ctx context.Context, s *store.Store, by By, orgRef, name, roleRef string) (NewCredential, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return NewCredential{}, err
	}
	name = strings.TrimSpace(name)
	if name == "" {
		return NewCredential{}, errors.New("--name is required")
	}
	r, err := s.FindRole(ctx, o.ID, roleRef)
	if err != nil {
		return NewCredential{}, err
	}
	secret := auth.NewSecret(auth.PrefixClientSecret)
	c, err := s.CreateCredential(ctx, &store.AuditEntry{OrgID: o.ID, Actor: by.Actor, Address: by.Address, Action: "credential.create", TargetType: "credential",
		Summary: map[string]any{"name": name, "role": r.Name}},
		store.Credential{OrgID: o.ID, Name: name, ClientID: auth.NewClientID(), SecretHash: auth.HashSecret(secret), RoleID: r.ID})
	if err != nil {
		return NewCredential{}, err
	}
	return NewCredential{ID: c.ID, OrgID: o.ID, Name: c.Name, Role: r.Name, ClientID: c.ClientID, ClientSecret: secret, CreatedAt: c.CreatedAt}, nil
}

// CredentialState is the printed form of a credential after a change.
type CredentialState struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id"`
	Name     string `json:"name"`
	Disabled bool   `json:"disabled"`
	Deleted  bool   `json:"deleted"`
}

// SetCredentialDisabled disables or enables a credential; disabling revokes
// its tokens at once on every replica.
func SetCredentialDisabled(ctx context.Context, s *store.Store, actor, orgRef, clientID string, disabled bool) (CredentialState, error) {
	return SetCredentialDisabledBy(ctx, s, By{Actor: actor}, orgRef, clientID, disabled)
}

// SetCredentialDisabledBy is SetCredentialDisabled with the client address
// of who makes the change.
func SetCredentialDisabledBy(ctx context.Context, s *store.Store, by By, orgRef, clientID string, disabled bool) (CredentialState, error) {
	o, c, err := findCredential(ctx, s, orgRef, clientID)
	if err != nil {
		return CredentialState{}, err
	}
	action := "credential.enable"
	if disabled {
		action = "credential.disable"
	}
	e := &store.AuditEntry{OrgID: o.ID, Actor: by.Actor, Address: by.Address, Action: action, TargetType: "credential", TargetID: c.ID,
		Summary: map[string]any{"name": c.Name}}
	if err := s.SetCredentialDisabled(ctx, e, o.ID, c.ID, disabled); err != nil {
		return CredentialState{}, err
	}
	return CredentialState{ID: c.ID, ClientID: c.ClientID, Name: c.Name, Disabled: disabled}, nil
}

// DeleteCredential deletes a credential and revokes its tokens.
func DeleteCredential(ctx context.Context, s *store.Store, actor, orgRef, clientID string) (CredentialState, error) {
	return DeleteCredentialBy(ctx, s, By{Actor: actor}, orgRef, clientID)
}

// DeleteCredentialBy is DeleteCredential with the client address of who
// deletes it.
func DeleteCredentialBy(ctx context.Context, s *store.Store, by By, orgRef, clientID string) (CredentialState, error) {
	o, c, err := findCredential(ctx, s, orgRef, clientID)
	if err != nil {
		return CredentialState{}, err
	}
	e := &store.AuditEntry{OrgID: o.ID, Actor: by.Actor, Address: by.Address, Action: "credential.delete", TargetType: "credential", TargetID: c.ID,
		Summary: map[string]any{"name": c.Name}}
	if err := s.DeleteCredential(ctx, e, o.ID, c.ID); err != nil {
		return CredentialState{}, err
	}
	return CredentialState{ID: c.ID, ClientID: c.ClientID, Name: c.Name, Disabled: c.Disabled, Deleted: true}, nil
}

func findCredential(ctx context.Context, s *store.Store, orgRef, clientID string) (store.Org, store.Credential, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return store.Org{}, store.Credential{}, err
	}
	if clientID == "" {
		return store.Org{}, store.Credential{}, errors.New("--client-id is required")
	}
	c, err := s.FindCredential(ctx, o.ID, clientID)
	return o, c, err
}

// NewEnrollToken is a created enrollment token, as the API answers it
// (the token, pinned "<secret>.<caSha256>" when the server has a CA for
// agents to pin; Secret is the token without the pin), with its
// organization; the token is shown only here.
type NewEnrollToken struct {
	apiv1.NewEnrollToken
	OrgID string `json:"orgId"`
}

// CreateEnrollToken creates an enrollment token valid for the given time
// (0: it never expires).
func CreateEnrollToken(ctx context.Context, s *store.Store, actor, orgRef string, valid time.Duration) (NewEnrollToken, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return NewEnrollToken{}, err
	}
	if valid < 0 {
		return NewEnrollToken{}, errors.New("--expires must not be negative")
	}
	var expires *time.Time
	if valid > 0 {
		t := time.Now().UTC().Add(valid).Truncate(time.Millisecond)
		expires = &t
	}
	token := auth.NewSecret(auth.PrefixEnrollToken)
	t, err := s.CreateEnrollToken(ctx, &store.AuditEntry{OrgID: o.ID, Actor: actor, Action: "enroll_token.create", TargetType: "enroll_token"},
		o.ID, auth.HashSecret(token), expires)
	if err != nil {
		return NewEnrollToken{}, err
	}
	out := NewEnrollToken{NewEnrollToken: apiv1.NewEnrollToken{ID: t.ID, Token: token, ExpiresAt: expires}, OrgID: o.ID}
	if out.CASHA256, err = s.EnrollPin(ctx); err != nil {
		return NewEnrollToken{}, err
	}
	if out.CASHA256 != "" {
		out.Token += "." + out.CASHA256
	}
	return out, nil
}

// UserOut is the printed form of a console user.
type UserOut struct {
	ID               string    `json:"id"`
	OrgID            string    `json:"orgId"`
	Email            string    `json:"email"`
	Role             string    `json:"role"`
	InstanceOperator bool      `json:"instanceOperator"`
	CreatedAt        time.Time `json:"createdAt"`
}

// MinPasswordLength is the shortest console password accepted.
const MinPasswordLength = 12

// CreateUser creates a console user with an argon2id password hash.
func CreateUser(ctx context.Context, s *store.Store, actor, orgRef, email, roleRef, password string) (UserOut, error) {
	return createUser(ctx, s, actor, nil, orgRef, email, roleRef, password)
}

// CreateOperator creates a console user who is an instance operator; the
// grant is recorded in the instance's Audit Trail as by.
func CreateOperator(ctx context.Context, s *store.Store, actor string, by InstanceActor, orgRef, email, roleRef, password string) (UserOut, error) {
	return createUser(ctx, s, actor, &by, orgRef, email, roleRef, password)
}

func createUser(ctx context.Context, s *store.Store, actor string, operatorBy *InstanceActor, orgRef, email, roleRef, password string) (UserOut, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return UserOut{}, err
	}
	address, err := CheckEmail(email)
	if err != nil {
		return UserOut{}, err
	}
	r, err := s.FindRole(ctx, o.ID, roleRef)
	if err != nil {
		return UserOut{}, err
	}
	if len([]rune(password)) < MinPasswordLength {
		return UserOut{}, fmt.Errorf("the password must have at least %d characters", MinPasswordLength)
	}
	hash, err := auth.HashPassword(ctx, password)
	if err != nil {
		return UserOut{}, err
	}
	summary := map[string]any{"email": address, "role": r.Name}
	var ie *store.InstanceEvent
	if operatorBy != nil {
		summary["instanceOperator"] = true
		ie = operatorBy.event("instance_operator.grant", map[string]any{"email": address, "org": o.Name, "orgId": o.ID, "newUser": true})
	}
	u, err := s.CreateUser(ctx, &store.AuditEntry{OrgID: o.ID, Actor: actor, Action: "user.create", TargetType: "user", Summary: summary}, ie,
		store.User{OrgID: o.ID, Email: address, RoleID: r.ID, PasswordHash: hash, InstanceOperator: operatorBy != nil})
	if err != nil {
		return UserOut{}, err
	}
	return UserOut{ID: u.ID, OrgID: o.ID, Email: u.Email, Role: r.Name, InstanceOperator: u.InstanceOperator, CreatedAt: u.CreatedAt}, nil
}

// CheckEmail answers a console user's e-mail address in its stored form
// (lower case), or an error when it is not a bare address.
func CheckEmail(email string) (string, error) {
	addr, err := mail.ParseAddress(strings.TrimSpace(email))
	if err != nil || addr.Name != "" {
		return "", fmt.Errorf("%q is not an e-mail address", email)
	}
	return strings.ToLower(addr.Address), nil
}

// Bootstrap is what the first start on an empty database made.
type Bootstrap struct {
	Org         store.Org
	Credential  NewCredential
	EnrollToken NewEnrollToken
}

// BootstrapIfEmpty creates organization Default with an Administrator API
// credential and an enrollment token when the database has no organization.
// It answers ok=false when there was something already (or another replica
// bootstrapped at the same moment).
func BootstrapIfEmpty(ctx context.Context, s *store.Store) (Bootstrap, bool, error) {
	orgs, err := s.ListOrgs(ctx)
	if err != nil {
		return Bootstrap{}, false, err
	}
	if len(orgs) > 0 {
		return Bootstrap{}, false, nil
	}
	o, err := s.CreateOrg(ctx, DefaultOrg, "UTC")
	if errors.Is(err, dberr.ErrConflict) {
		return Bootstrap{}, false, nil
	}
	if err != nil {
		return Bootstrap{}, false, err
	}
	c, err := CreateCredential(ctx, s, store.FirstStartActor, o.ID, "bootstrap-admin", store.RoleAdministrator)
	if err != nil {
		return Bootstrap{}, false, err
	}
	t, err := CreateEnrollToken(ctx, s, store.FirstStartActor, o.ID, 0)
	if err != nil {
		return Bootstrap{}, false, err
	}
	return Bootstrap{Org: o, Credential: c, EnrollToken: t}, true, nil
}
