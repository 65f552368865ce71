package identity_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/identity"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// TestSignInSSO walks who an OpenID sign-in becomes against the store:
// the account's state × the claims × the organization's settings →
// signed in, linked, created (with the mapped role), or refused.
func TestSignInSSO(t *testing.T) {
	st := storetest.Open(t)
	ctx := context.Background()
	const issuer = "https://idp.example.com"
	now := time.Now()
	verified := map[string]any{"email": "Ann@Example.com", "email_verified": true}
	claims := func(edit func(map[string]any)) map[string]any {
		c := map[string]any{"email": "ann@example.com", "email_verified": true}
		edit(c)
		return c
	}
	type settings func(*store.SSOConfig, map[string]store.Role)
	jit := func(c *store.SSOConfig, roles map[string]store.Role) {
		c.JustInTime, c.DefaultRoleID, c.DefaultRoleName = true, roles[store.RoleReadOnly].ID, store.RoleReadOnly
	}
	mapping := func(c *store.SSOConfig, roles map[string]store.Role) {
		jit(c, roles)
		c.RoleMap = []store.SSORoleMapping{{Value: "admins", RoleID: roles[store.RoleAdministrator].ID, RoleName: store.RoleAdministrator}}
	}
	trusting := func(c *store.SSOConfig, _ map[string]store.Role) { c.ProviderVerifiesEmail = true }

	for i, tc := range []struct {
		name    string
		account string // none, user, linked, disabled, operator, operator-sso, totp, linked-elsewhere, other-linked
		claims  map[string]any
		set     settings
		linkFor bool
		want    string // signin, link, create, or the refusal's reason
		role    string // the user's role afterwards
	}{
		{"linked user signs in", "linked", verified, nil, false, "signin", store.RoleReadOnly},
		{"user found by address is linked", "user", verified, nil, false, "link", store.RoleReadOnly},
		{"no account, no just-in-time", "none", verified, nil, false, identity.ReasonNotInvited, ""},
		{"no account, just in time", "none", verified, jit, false, "create", store.RoleReadOnly},
		{"just in time with the mapped role", "none", claims(func(c map[string]any) { c["groups"] = []any{"admins"} }), mapping, false, "create", store.RoleAdministrator},
		{"role mapping changes a linked user's role", "linked", claims(func(c map[string]any) { c["groups"] = []any{"admins"} }), mapping, false, "signin", store.RoleAdministrator},
		{"no e-mail claim", "linked", claims(func(c map[string]any) { delete(c, "email") }), nil, false, identity.ReasonNoEmail, ""},
		{"unverified address", "linked", claims(func(c map[string]any) { c["email_verified"] = false }), nil, false, identity.ReasonEmailUnverified, ""},
		{"missing email_verified", "user", claims(func(c map[string]any) { delete(c, "email_verified") }), nil, false, identity.ReasonEmailUnverified, ""},
		{"missing email_verified, provider verifies every address", "user", claims(func(c map[string]any) { delete(c, "email_verified") }), trusting, false, "link", store.RoleReadOnly},
		{"string email_verified", "user", claims(func(c map[string]any) { c["email_verified"] = "TRUE" }), nil, false, "link", store.RoleReadOnly},
		{"address outside the allowed domains", "user", claims(func(c map[string]any) { c["email"] = "ann@elsewhere.test" }), nil, false, identity.ReasonDomainNotAllowed, ""},
		{"disabled linked user", "disabled", verified, nil, false, identity.ReasonUserDisabled, ""},
		{"instance operator", "operator", verified, nil, false, identity.ReasonOperator, ""},
		{"instance operator allowed single sign-on", "operator-sso", verified, nil, false, "link", store.RoleAdministrator},
		{"second factor is not skipped by the address", "totp", verified, nil, false, identity.ReasonSecondFactor, ""},
		{"second factor, linked from its own session", "totp", verified, nil, true, "link", store.RoleReadOnly},
		{"link from a session, another address", "user", claims(func(c map[string]any) { c["email"] = "bob@example.com" }), nil, true, identity.ReasonLinkEmailMismatch, ""},
		{"user linked to another provider account", "linked-elsewhere", verified, nil, false, identity.ReasonLinkedElsewhere, ""},
		{"provider account linked to another user", "other-linked", verified, nil, true, identity.ReasonLinkedToAnotherUser, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := st.CreateOrg(ctx, fmt.Sprintf("org-%d", i), "UTC")
			if err != nil {
				t.Fatal(err)
			}
			roles := map[string]store.Role{}
			for _, name := range []string{store.RoleReadOnly, store.RoleAdministrator} {
				if roles[name], err = st.FindRole(ctx, o.ID, name); err != nil {
					t.Fatal(err)
				}
			}
			cfg := store.SSOConfig{OrgID: o.ID, ProviderName: "IdP", Issuer: issuer, ClientID: "patchd", AllowedDomains: []string{"example.com"},
				RoleClaim: "groups", Enabled: true}
			if tc.set != nil {
				tc.set(&cfg, roles)
			}
			ident := store.SSOIdentity{OrgID: o.ID, Issuer: issuer, Subject: "sub-ann"}
			entry := func(action string) *store.AuditEntry {
				return &store.AuditEntry{OrgID: o.ID, Actor: "test", Action: action, TargetType: "user"}
			}
			link := func(u store.User, subject string) {
				id := ident
				id.Email, id.Subject = u.Email, subject
				if _, err := st.LinkSSOUser(ctx, entry("user.sso_link"), id, u.ID, now, func(store.ConsoleUser, bool) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			var pre store.User
			if tc.account != "none" {
				u := store.User{OrgID: o.ID, Email: "ann@example.com", RoleID: roles[store.RoleReadOnly].ID, PasswordHash: "x"}
				var ie *store.InstanceEvent
				if tc.account == "operator" || tc.account == "operator-sso" {
					u.RoleID, u.InstanceOperator = roles[store.RoleAdministrator].ID, true
					ie = &store.InstanceEvent{Actor: "test", Action: "instance_operator.grant"}
				}
				if pre, err = st.CreateUser(ctx, entry("user.create"), ie, u); err != nil {
					t.Fatal(err)
				}
			}
			switch tc.account {
			case "linked":
				link(pre, "sub-ann")
			case "disabled":
				link(pre, "sub-ann")
				if err := st.SetUserDisabled(ctx, entry("user.disable"), o.ID, pre.ID, true); err != nil {
					t.Fatal(err)
				}
			case "operator-sso":
				if _, err := st.SetOperatorSSO(ctx, &store.InstanceEvent{Actor: "test", Action: "instance_operator.sso_allow"}, pre.ID, true); err != nil {
					t.Fatal(err)
				}
			case "totp":
				if err := st.EnableTOTP(ctx, entry("user.mfa_enable"), o.ID, pre.ID, "JBSWY3DPEHPK3PXP", 100, []string{"h1"}); err != nil {
					t.Fatal(err)
				}
			case "linked-elsewhere":
				link(pre, "sub-other")
			case "other-linked":
				other, err := st.CreateUser(ctx, entry("user.create"), nil, store.User{OrgID: o.ID, Email: "bob@example.com", RoleID: roles[store.RoleReadOnly].ID, PasswordHash: "x"})
				if err != nil {
					t.Fatal(err)
				}
				link(other, "sub-ann")
			}
			in := identity.SSOSignIn{Config: cfg, Identity: ident, Claims: tc.claims, Address: "192.0.2.1", Now: now}
			if tc.linkFor {
				in.LinkFor = pre.ID
			}
			u, _, err := identity.SignInSSO(ctx, st, in)
			var rf *identity.Refusal
			switch {
			case errors.As(err, &rf):
				if rf.Reason != tc.want {
					t.Fatalf("refused %s, want %s", rf.Reason, tc.want)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			got := "signin"
			switch {
			case pre.ID == "":
				got = "create"
			case tc.account != "linked":
				got = "link"
			}
			if got != tc.want || pre.ID != "" && u.ID != pre.ID || u.RoleName != tc.role {
				t.Fatalf("%s as %s (%s), want %s as %s", got, u.ID, u.RoleName, tc.want, tc.role)
			}
			if linked, err := st.SSOUserByIdentity(ctx, ident); err != nil || linked.ID != u.ID {
				t.Fatalf("the provider account signs in as %+v (%v), not %s", linked, err, u.ID)
			}
		})
	}
}
