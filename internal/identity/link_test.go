package identity

import "testing"

// TestDecide walks the linking rules: account state × claims × settings.
func TestDecide(t *testing.T) {
	verified := Claims{Email: "ann@example.com", EmailVerified: "true", DomainAllowed: true}
	missing := Claims{Email: "ann@example.com", DomainAllowed: true}
	unverified := Claims{Email: "ann@example.com", EmailVerified: "false", DomainAllowed: true}
	otherDomain := Claims{Email: "ann@elsewhere.test", EmailVerified: "true"}
	user := Account{Found: true, Email: "ann@example.com"}
	linked := Account{Found: true, Linked: true, Email: "ann@example.com"}
	with := func(a Account, edit func(*Account)) Account { edit(&a); return a }
	jit := Policy{JustInTime: true, RoleFound: true}
	trusting := Policy{ProviderVerifiesEmail: true}
	link := Policy{LinkFor: "u1"}

	for _, tc := range []struct {
		name   string
		a      Account
		c      Claims
		p      Policy
		want   Outcome
		reason string
	}{
		{"linked user signs in", linked, verified, Policy{}, SignIn, ""},
		{"user found by address is linked", user, verified, Policy{}, Link, ""},
		{"missing email_verified is unverified", user, missing, Policy{}, Refuse, ReasonEmailUnverified},
		{"missing email_verified, provider verifies every address", user, missing, trusting, Link, ""},
		{"false email_verified even when the provider is trusted", user, unverified, trusting, Refuse, ReasonEmailUnverified},
		{"unverified address never creates a user", Account{}, missing, jit, Refuse, ReasonEmailUnverified},
		{"unverified address of a linked user", linked, unverified, Policy{}, Refuse, ReasonEmailUnverified},
		{"address outside the allowed domains", user, otherDomain, Policy{}, Refuse, ReasonDomainNotAllowed},
		{"operator found by address", with(user, func(a *Account) { a.Operator = true }), verified, Policy{}, Refuse, ReasonOperator},
		{"operator linked earlier", with(linked, func(a *Account) { a.Operator = true }), verified, Policy{}, Refuse, ReasonOperator},
		{"operator, even linking from its own session", with(user, func(a *Account) { a.Operator = true }), verified, link, Refuse, ReasonOperator},
		{"operator who opted in", with(user, func(a *Account) { a.Operator, a.OperatorSSO = true, true }), verified, Policy{}, Link, ""},
		{"operator who opted in, linked", with(linked, func(a *Account) { a.Operator, a.OperatorSSO = true, true }), verified, Policy{}, SignIn, ""},
		{"second factor: no link by address", with(user, func(a *Account) { a.SecondFactor = true }), verified, Policy{}, Refuse, ReasonSecondFactor},
		{"second factor: link from its own session", with(user, func(a *Account) { a.SecondFactor = true }), verified, link, Link, ""},
		{"second factor, linked already", with(linked, func(a *Account) { a.SecondFactor = true }), verified, Policy{}, SignIn, ""},
		{"own-session link with another address", with(user, func(a *Account) { a.Email = "bob@example.com" }), verified, link, Refuse, ReasonLinkEmailMismatch},
		{"own-session link, unverified", user, missing, link, Refuse, ReasonEmailUnverified},
		{"linked to another provider account", with(user, func(a *Account) { a.LinkedElsewhere = true }), verified, Policy{}, Refuse, ReasonLinkedElsewhere},
		{"disabled user", with(user, func(a *Account) { a.Disabled = true }), verified, Policy{}, Refuse, ReasonUserDisabled},
		{"disabled linked user", with(linked, func(a *Account) { a.Disabled = true }), verified, Policy{}, Refuse, ReasonUserDisabled},
		{"no user, invite-only", Account{}, verified, Policy{}, Refuse, ReasonNotInvited},
		{"no user, just in time", Account{}, verified, jit, Create, ""},
		{"no user, just in time, no role", Account{}, verified, Policy{JustInTime: true}, Refuse, ReasonNoRole},
		{"no user, just in time, trusted provider", Account{}, missing, Policy{JustInTime: true, RoleFound: true, ProviderVerifiesEmail: true}, Create, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.a, tc.c, tc.p)
			if got.Outcome != tc.want || got.Reason != tc.reason {
				t.Fatalf("Decide(%+v, %+v, %+v) = %+v, want %v %q", tc.a, tc.c, tc.p, got, tc.want, tc.reason)
			}
		})
	}
}
