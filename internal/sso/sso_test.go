package sso

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/patchd/patchd/internal/store"
)

func TestCheck(t *testing.T) {
	secret := "s"
	good := Settings{ProviderName: "Okta", Issuer: "https://acme.okta.com", ClientID: "c", ClientSecret: &secret,
		AllowedDomains: []string{"acme.example"}, RoleClaim: "groups", RoleMap: []Mapping{{"admins", "Administrator"}}, JustInTime: true}
	for _, tc := range []struct {
		name string
		edit func(*Settings)
		want string // "" accepted
	}{
		{"good", func(*Settings) {}, ""},
		{"loopback http", func(s *Settings) { s.Issuer = "http://127.0.0.1:8080/realms/x" }, ""},
		{"plain http elsewhere", func(s *Settings) { s.Issuer = "http://idp.example" }, "issuer"},
		{"issuer with a query", func(s *Settings) { s.Issuer = "https://idp.example/?a=b" }, "issuer"},
		{"no name", func(s *Settings) { s.ProviderName = " " }, "providerName"},
		{"no client id", func(s *Settings) { s.ClientID = "" }, "clientId"},
		{"no domain", func(s *Settings) { s.AllowedDomains = []string{" "} }, "allowedDomains"},
		{"bad domain", func(s *Settings) { s.AllowedDomains = []string{"acme"} }, "allowedDomains"},
		{"a scope with a quote", func(s *Settings) { s.Scopes = []string{`gro"ups`} }, "scopes"},
		{"mapping without claim", func(s *Settings) { s.RoleClaim = "" }, "roleClaim"},
		{"half a mapping", func(s *Settings) { s.RoleMap = []Mapping{{"admins", ""}} }, "roleMap"},
		{"just in time without any role", func(s *Settings) { s.RoleMap = nil }, "justInTime"},
		{"invite-only without any role", func(s *Settings) { s.RoleMap, s.JustInTime = nil, false }, ""},
	} {
		s := good
		s.AllowedDomains = slices.Clone(good.AllowedDomains)
		s.RoleMap = slices.Clone(good.RoleMap)
		tc.edit(&s)
		s.Normalize()
		err := s.Check()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	s := Settings{AllowedDomains: []string{" @Acme.Example", "acme.example"}, Scopes: []string{"openid", "groups", "groups"}}
	s.Normalize()
	if !slices.Equal(s.AllowedDomains, []string{"acme.example"}) || !slices.Equal(s.Scopes, []string{"groups"}) {
		t.Errorf("Normalize: %v %v", s.AllowedDomains, s.Scopes)
	}
}

func TestClaimsDecide(t *testing.T) {
	var claims map[string]any
	json.Unmarshal([]byte(`{"groups":["staff","admins"],"roles":"reader","realm_access":{"roles":["patchd-admin"]},"weird.name":["x"],"n":3}`), &claims)
	for name, want := range map[string][]string{"groups": {"staff", "admins"}, "roles": {"reader"}, "realm_access.roles": {"patchd-admin"},
		"weird.name": {"x"}, "n": nil, "missing": nil, "": nil, "realm_access.missing": nil} {
		if got := ClaimValues(claims, name); !slices.Equal(got, want) {
			t.Errorf("ClaimValues %q = %v, want %v", name, got, want)
		}
	}
	c := store.SSOConfig{RoleMap: []store.SSORoleMapping{{Value: "readers", RoleID: "r", RoleName: "Read-only"},
		{Value: "admins", RoleID: "a", RoleName: "Administrator"}, {Value: "gone", RoleID: "g"}}}
	for _, tc := range []struct {
		values []string
		want   string
		ok     bool
	}{{[]string{"admins", "readers"}, "r", true}, {[]string{"admins"}, "a", true}, {[]string{"other"}, "", false}, {[]string{"gone"}, "g", false}} {
		if got, ok := RoleFor(tc.values, c); got != tc.want || ok != tc.ok {
			t.Errorf("RoleFor %v = %q %v, want %q %v", tc.values, got, ok, tc.want, tc.ok)
		}
	}
	c.DefaultRoleID = "d"
	if got, ok := RoleFor([]string{"other"}, c); got != "d" || !ok || Mapped([]string{"other"}, c) {
		t.Errorf("the default role: %q %v", got, ok)
	}
	for email, want := range map[string]bool{"a@acme.example": true, "a@sub.acme.example": false, "a@acme.example.evil": false, "acme.example": false, "@acme.example": false} {
		if got := DomainAllowed(email, []string{"acme.example"}); got != want {
			t.Errorf("DomainAllowed %q = %v", email, got)
		}
	}
}
