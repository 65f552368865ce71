package identity

import "strings"

// The linking rules: which console account a provider account signs in
// as, decided from the account's state, the ID token's claims and the
// organization's settings alone (docs/sso.md, "Linking rules"). SignInSSO
// reads the state, asks Decide, and does what it answers; it asks Decide
// again inside the store's transaction that links, so that a change
// between the two (an operator granted, a second factor set up) cannot
// slip through.

// Account is the console account a sign-in found, as far as the rules
// look at it.
type Account struct {
	// Found: there is one. Linked: it is found by the provider account
	// (issuer and subject); otherwise by the e-mail address, and
	// LinkedElsewhere says another account of the same provider is
	// linked to it already.
	Found, Linked, LinkedElsewhere bool
	Disabled                       bool
	// Operator is an instance operator; OperatorSSO says an instance-level
	// action let it sign in through single sign-on.
	Operator, OperatorSSO bool
	// SecondFactor: the account has a TOTP app or a passkey.
	SecondFactor bool
	// Email is the account's address (lower case).
	Email string
}

// Claims is what the ID token (and UserInfo) say of the provider account.
type Claims struct {
	Email string // lower case
	// EmailVerified is the email_verified claim: "true", "false", or ""
	// when the provider sent none.
	EmailVerified string
	// DomainAllowed: the address is in one of the allowed domains.
	DomainAllowed bool
}

// Policy is what the organization's settings (and the sign-in) add.
type Policy struct {
	// ProviderVerifiesEmail: the organization says its provider verifies
	// every address it gives, so a missing email_verified counts as
	// verified.
	ProviderVerifiesEmail bool
	JustInTime            bool
	// RoleFound: the role mapping or the default role gives a new user a
	// role.
	RoleFound bool
	// LinkFor is set when the signed-in account with this id started the
	// sign-in to link the provider account to itself (after its password
	// and second factor): Account is that account.
	LinkFor string
}

// Outcome is what a sign-in does.
type Outcome int

const (
	// Refuse: the sign-in is refused (Decision.Reason says why).
	Refuse Outcome = iota
	// SignIn the linked account.
	SignIn
	// Link the provider account to the account found by its address, then
	// sign it in.
	Link
	// Create a user (just in time), linked, and sign it in.
	Create
)

// Decision is Decide's answer. Reason is the Audit Trail's word for a
// refusal.
type Decision struct {
	Outcome Outcome
	Reason  string
}

func refused(reason string) Decision { return Decision{Outcome: Refuse, Reason: reason} }

// Refusal reasons of Decide.
const (
	ReasonEmailUnverified   = "email_unverified"
	ReasonDomainNotAllowed  = "domain_not_allowed"
	ReasonOperator          = "instance_operator"
	ReasonUserDisabled      = "user_disabled"
	ReasonLinkedElsewhere   = "linked_elsewhere"
	ReasonSecondFactor      = "second_factor_link"
	ReasonNotInvited        = "not_invited"
	ReasonNoRole            = "no_role"
	ReasonLinkEmailMismatch = "link_email_mismatch"
)

// EmailVerified tells whether the claims' address counts as verified: the
// provider said true, or said nothing and the organization says this
// provider verifies every address.
func EmailVerified(c Claims, p Policy) bool {
	switch strings.ToLower(c.EmailVerified) {
	case "true":
		return true
	case "":
		return p.ProviderVerifiesEmail
	}
	return false
}

// Decide applies the linking rules.
func Decide(a Account, c Claims, p Policy) Decision {
	if !EmailVerified(c, p) {
		return refused(ReasonEmailUnverified)
	}
	if !c.DomainAllowed {
		return refused(ReasonDomainNotAllowed)
	}
	if !a.Found {
		if p.LinkFor != "" {
			return refused(ReasonLinkEmailMismatch)
		}
		if !p.JustInTime {
			return refused(ReasonNotInvited)
		}
		if !p.RoleFound {
			return refused(ReasonNoRole)
		}
		return Decision{Outcome: Create}
	}
	// An instance operator is never signed in or linked by single sign-on
	// unless an instance-level action allowed it: an organization's
	// administrator chooses the provider, and the operator's power reaches
	// every organization.
	if a.Operator && !a.OperatorSSO {
		return refused(ReasonOperator)
	}
	if a.Disabled {
		return refused(ReasonUserDisabled)
	}
	if a.Linked {
		return Decision{Outcome: SignIn}
	}
	if a.LinkedElsewhere {
		return refused(ReasonLinkedElsewhere)
	}
	if p.LinkFor != "" {
		// The account proved its password and second factor in this
		// browser; the provider account must carry its address too.
		if a.Email != c.Email {
			return refused(ReasonLinkEmailMismatch)
		}
		return Decision{Outcome: Link}
	}
	// Linking by address alone would skip the account's second factor.
	if a.SecondFactor {
		return refused(ReasonSecondFactor)
	}
	return Decision{Outcome: Link}
}
