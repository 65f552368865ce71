package identity

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
)

// SSOSignIn is an OpenID Connect sign-in whose ID token (and UserInfo)
// the console has validated.
type SSOSignIn struct {
	Config store.SSOConfig
	// Identity is the provider account: organization, issuer and subject
	// (SignInSSO fills in the e-mail address from the claims).
	Identity store.SSOIdentity
	// Claims are the ID token's claims, completed by UserInfo.
	Claims map[string]any
	// LinkFor is the id of the signed-in user that started the sign-in to
	// link the provider account to itself ("": a sign-in).
	LinkFor string
	// Address is the client's address, for the Audit Trail.
	Address string
	Now     time.Time
}

// Refusal reasons of SignInSSO beyond Decide's.
const (
	// ReasonNoEmail: the claims hold no usable e-mail address.
	ReasonNoEmail = "no_email"
	// ReasonLinkedToAnotherUser: a link found the provider account linked
	// to another user.
	ReasonLinkedToAnotherUser = "linked_to_another_user"
	// ReasonLinkUserGone: the user that started a link is gone.
	ReasonLinkUserGone = "link_session_mismatch"
)

// Refusal is a sign-in the rules refuse; Reason is the Audit Trail's word.
type Refusal struct{ Reason string }

func (r *Refusal) Error() string { return "identity: single sign-on refused: " + r.Reason }

func refusal(reason string) *Refusal { return &Refusal{Reason: reason} }

// SignInSSO answers the console user the provider account signs in as, by
// the linking rules (Decide): the linked one, else the organization's user
// with its e-mail address (or, for a link, the signed-in user), linked
// now, else a new one when the organization creates users at sign-in. It
// gives the user the role the role mapping answers. A refusal is a
// *Refusal. email is the claims' address, lower case ("" when they have
// none or it is unusable), for the Audit Trail.
func SignInSSO(ctx context.Context, st *store.Store, in SSOSignIn) (u store.ConsoleUser, email string, err error) {
	cfg := in.Config
	email, _ = in.Claims["email"].(string)
	email = strings.ToLower(strings.TrimSpace(email))
	if _, err := admin.CheckEmail(email); err != nil {
		return u, "", refusal(ReasonNoEmail)
	}
	ident := in.Identity
	ident.Email = email
	values := sso.ClaimValues(in.Claims, cfg.RoleClaim)
	roleID, roleOK := sso.RoleFor(values, cfg)
	sc := Claims{Email: email, EmailVerified: ClaimText(in.Claims["email_verified"]), DomainAllowed: sso.DomainAllowed(email, cfg.AllowedDomains)}
	pol := Policy{ProviderVerifiesEmail: cfg.ProviderVerifiesEmail, JustInTime: cfg.JustInTime, RoleFound: roleOK, LinkFor: in.LinkFor}
	// The claims alone may refuse (an unverified address, another domain).
	if d := Decide(Account{Found: true, Linked: true}, sc, pol); d.Outcome == Refuse {
		return u, email, refusal(d.Reason)
	}
	u, err = ssoUser(ctx, st, in, ident, sc, pol, roleID)
	if err != nil {
		return u, email, err
	}
	// Role mapping never changes an instance operator's account.
	if sso.Mapped(values, cfg) && !u.InstanceOperator && roleOK && roleID != u.RoleID {
		e := &store.AuditEntry{OrgID: cfg.OrgID, Actor: "sso:" + cfg.ProviderName, Action: "user.role_change",
			Summary: map[string]any{"email": u.Email, "from": u.RoleName, "to": RoleName(cfg, roleID), "by": "role mapping of claim " + cfg.RoleClaim}}
		if u, err = st.SetSSOUserRole(ctx, e, u.ID, roleID); err != nil {
			return u, email, err
		}
	}
	return u, email, nil
}

// errLinkRefused carries a linking rule's refusal out of the store's
// transaction.
type errLinkRefused struct{ d Decision }

func (e errLinkRefused) Error() string { return "identity: single sign-on link refused: " + e.d.Reason }

func ssoUser(ctx context.Context, st *store.Store, in SSOSignIn, ident store.SSOIdentity, sc Claims, pol Policy, roleID string) (store.ConsoleUser, error) {
	cfg := in.Config
	u, err := st.SSOUserByIdentity(ctx, ident)
	switch {
	case err == nil && pol.LinkFor != "" && u.ID != pol.LinkFor:
		return u, refusal(ReasonLinkedToAnotherUser)
	case err == nil:
		if d := Decide(accountOf(u, true, false), sc, pol); d.Outcome != SignIn {
			return u, refusal(d.Reason)
		}
		return u, nil
	case !errors.Is(err, dberr.ErrNotFound):
		return u, err
	}
	how := "e-mail address"
	if pol.LinkFor != "" {
		how = "the user's own session (password and second factor)"
	}
	link := &store.AuditEntry{OrgID: cfg.OrgID, Actor: "sso:" + ident.Email, Action: "user.sso_link",
		Summary: map[string]any{"email": ident.Email, "issuer": ident.Issuer, "subject": ident.Subject, "address": in.Address, "by": how}}
	u, err = st.LinkSSOUser(ctx, link, ident, pol.LinkFor, in.Now, func(u store.ConsoleUser, linkedElsewhere bool) error {
		if d := Decide(accountOf(u, false, linkedElsewhere), sc, pol); d.Outcome != Link {
			return errLinkRefused{d}
		}
		return nil
	})
	var lr errLinkRefused
	switch {
	case errors.As(err, &lr):
		return u, refusal(lr.d.Reason)
	case err == nil:
		return u, nil
	case !errors.Is(err, dberr.ErrNotFound):
		return u, err
	case pol.LinkFor != "":
		return u, refusal(ReasonLinkUserGone)
	}
	if d := Decide(Account{}, sc, pol); d.Outcome != Create {
		return u, refusal(d.Reason)
	}
	e := &store.AuditEntry{OrgID: cfg.OrgID, Actor: "sso:" + ident.Email, Action: "user.create",
		Summary: map[string]any{"email": ident.Email, "role": RoleName(cfg, roleID), "justInTime": true, "issuer": ident.Issuer, "address": in.Address}}
	u, err = st.CreateSSOUser(ctx, e, ident, roleID, in.Now)
	if errors.Is(err, dberr.ErrConflict) { // a sign-in at the same moment made it, or the address is taken
		if u, err := st.SSOUserByIdentity(ctx, ident); err == nil {
			if d := Decide(accountOf(u, true, false), sc, pol); d.Outcome != SignIn {
				return u, refusal(d.Reason)
			}
			return u, nil
		}
	}
	return u, err
}

// accountOf is a console user as the linking rules see it.
func accountOf(u store.ConsoleUser, linked, linkedElsewhere bool) Account {
	return Account{Found: true, Linked: linked, LinkedElsewhere: linkedElsewhere, Disabled: u.Disabled, Operator: u.InstanceOperator,
		OperatorSSO: u.OperatorSSO, SecondFactor: u.SecondFactor, Email: u.Email}
}

// RoleName is the name of the role roleID as the configuration names it
// (its id when it names none).
func RoleName(cfg store.SSOConfig, roleID string) string {
	for _, m := range cfg.RoleMap {
		if m.RoleID == roleID {
			return m.RoleName
		}
	}
	if roleID == cfg.DefaultRoleID {
		return cfg.DefaultRoleName
	}
	return roleID
}

// ClaimText is a boolean claim as text: "true", "false", or "" when it is
// absent (a string claim is taken as it is).
func ClaimText(v any) string {
	switch v := v.(type) {
	case bool:
		return strconv.FormatBool(v)
	case string:
		return strings.ToLower(strings.TrimSpace(v))
	case nil:
		return ""
	}
	return "unreadable"
}
