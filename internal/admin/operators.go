package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/store"
)

// Instance operators: console users who may change what every
// organization shares (the vulnerability feeds) and read the instance's
// Audit Trail. The first console user of an instance is one (first-run
// setup); the command line grants and revokes it. Each grant and
// revocation is an instance event.

// InstanceActor names who makes an instance-level change: actor and the
// client address ("" for the command line).
type InstanceActor struct {
	Actor   string
	Address string
}

func (by InstanceActor) event(action string, summary map[string]any) *store.InstanceEvent {
	return &store.InstanceEvent{Actor: by.Actor, Address: by.Address, Action: action, Summary: summary}
}

// OperatorOut is the printed form of a user's instance-operator state.
type OperatorOut struct {
	ID               string `json:"id"`
	OrgID            string `json:"orgId"`
	Org              string `json:"org"`
	Email            string `json:"email"`
	Disabled         bool   `json:"disabled"`
	InstanceOperator bool   `json:"instanceOperator"`
	// OperatorSSO: single sign-on may sign the operator in.
	OperatorSSO bool `json:"operatorSso"`
	// Changed is false when the user had the asked state already.
	Changed bool `json:"changed"`
}

// SetOperator grants (on) or revokes the instance-operator attribute of
// the console user with the e-mail address; orgRef names its organization
// when the address is a user of several. Revoking the last enabled
// operator is refused (store.ErrLastOperator).
func SetOperator(ctx context.Context, s *store.Store, by InstanceActor, orgRef, email string, on bool) (OperatorOut, error) {
	u, org, err := findUser(ctx, s, orgRef, email)
	if err != nil {
		return OperatorOut{}, err
	}
	action := "instance_operator.revoke"
	if on {
		action = "instance_operator.grant"
	}
	changed, err := s.SetInstanceOperator(ctx, by.event(action, map[string]any{"email": u.Email, "org": org.Name, "orgId": org.ID}), u.ID, on)
	if errors.Is(err, store.ErrLastOperator) {
		return OperatorOut{}, fmt.Errorf("%s is the last enabled instance operator: grant another user first (patchd admin user operator grant --email …), then revoke", u.Email)
	}
	if err != nil {
		return OperatorOut{}, err
	}
	return OperatorOut{ID: u.ID, OrgID: org.ID, Org: org.Name, Email: u.Email, Disabled: u.Disabled, InstanceOperator: on, Changed: changed}, nil
}

// SetOperatorSSO lets (on) the instance operator with the e-mail address
// sign in through its organization's single sign-on, or stops it, recorded
// in the instance's Audit Trail (instance_operator.sso_allow,
// instance_operator.sso_deny). Single sign-on never signs in or links an
// operator without it.
func SetOperatorSSO(ctx context.Context, s *store.Store, by InstanceActor, orgRef, email string, on bool) (OperatorOut, error) {
	u, org, err := findUser(ctx, s, orgRef, email)
	if err != nil {
		return OperatorOut{}, err
	}
	action := "instance_operator.sso_deny"
	if on {
		action = "instance_operator.sso_allow"
	}
	changed, err := s.SetOperatorSSO(ctx, by.event(action, map[string]any{"email": u.Email, "org": org.Name, "orgId": org.ID}), u.ID, on)
	if errors.Is(err, store.ErrNotOperator) {
		return OperatorOut{}, fmt.Errorf("%s is not an instance operator: single sign-on signs it in as any user", u.Email)
	}
	if err != nil {
		return OperatorOut{}, err
	}
	return OperatorOut{ID: u.ID, OrgID: org.ID, Org: org.Name, Email: u.Email, Disabled: u.Disabled, InstanceOperator: true,
		OperatorSSO: on, Changed: changed}, nil
}

// ListOperators lists the instance operators of every organization.
func ListOperators(ctx context.Context, s *store.Store) ([]OperatorOut, error) {
	users, err := s.ListInstanceOperators(ctx)
	if err != nil {
		return nil, err
	}
	orgs, err := s.ListOrgs(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, o := range orgs {
		names[o.ID] = o.Name
	}
	out := make([]OperatorOut, 0, len(users))
	for _, u := range users {
		out = append(out, OperatorOut{ID: u.ID, OrgID: u.OrgID, Org: names[u.OrgID], Email: u.Email, Disabled: u.Disabled, InstanceOperator: true, OperatorSSO: u.OperatorSSO})
	}
	return out, nil
}

// findUser finds the console user with an e-mail address, in the
// organization orgRef, or in the only organization that has it.
func findUser(ctx context.Context, s *store.Store, orgRef, email string) (store.ConsoleUser, store.Org, error) {
	if strings.TrimSpace(email) == "" {
		return store.ConsoleUser{}, store.Org{}, errors.New("--email is required")
	}
	address, err := CheckEmail(email)
	if err != nil {
		return store.ConsoleUser{}, store.Org{}, err
	}
	users, err := s.MembersByEmail(ctx, address)
	if err != nil {
		return store.ConsoleUser{}, store.Org{}, err
	}
	if orgRef != "" {
		o, err := s.FindOrg(ctx, orgRef)
		if err != nil {
			return store.ConsoleUser{}, store.Org{}, err
		}
		for _, u := range users {
			if u.OrgID == o.ID {
				return u, o, nil
			}
		}
		return store.ConsoleUser{}, store.Org{}, fmt.Errorf("no console user %s in organization %s: %w", address, o.Name, dberr.ErrNotFound)
	}
	switch len(users) {
	case 0:
		return store.ConsoleUser{}, store.Org{}, fmt.Errorf("no console user %s: %w", address, dberr.ErrNotFound)
	case 1:
		o, err := s.FindOrg(ctx, users[0].OrgID)
		return users[0], o, err
	}
	return store.ConsoleUser{}, store.Org{}, fmt.Errorf("%s is a console user of %d organizations: name one with --org", address, len(users))
}
