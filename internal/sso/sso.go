// Package sso owns the rules of OpenID Connect sign-in that do not depend on
// HTTP: what an organization's provider configuration must hold, and what
// a signed-in account's claims decide (whether its e-mail domain may sign
// in, which role it gets). The console runs the Authorization Code flow
// itself (internal/console/sso.go), and internal/identity decides which
// account a sign-in becomes; the admin package stores what Check accepts.
package sso

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/patchd/patchd/internal/store"
)

// BaseScopes are asked of every provider: the ID token (openid), the
// e-mail address and whether the provider verified it (email), and the
// name (profile).
var BaseScopes = []string{"openid", "email", "profile"}

// CallbackPath is where every provider sends the browser back (the redirect
// URI to register is the server's public address followed by it).
const CallbackPath = "/console/sso/callback"

// Mapping gives the users whose role claim holds Value the role Role (a
// role name or id of the organization).
type Mapping struct {
	Value string `json:"value"`
	Role  string `json:"role"`
}

// Settings is a provider configuration as an administrator gives it.
type Settings struct {
	ProviderName string
	Issuer       string
	ClientID     string
	// ClientSecret nil keeps the stored secret.
	ClientSecret   *string
	AllowedDomains []string
	Scopes         []string
	RoleClaim      string
	RoleMap        []Mapping
	DefaultRole    string
	JustInTime     bool
	// ProviderVerifiesEmail says the provider verifies every address it
	// gives: an ID token without email_verified then counts as verified
	// (Entra ID sends none). Without it a missing claim is unverified.
	ProviderVerifiesEmail bool
	Enabled               bool
}

// Problems lists what is wrong with a configuration, one text per field.
type Problems []string

func (p Problems) Error() string { return strings.Join(p, "; ") }

// Normalize trims and lower-cases what Check compares, and drops empty
// list entries.
func (s *Settings) Normalize() {
	s.ProviderName = strings.TrimSpace(s.ProviderName)
	s.Issuer = strings.TrimSpace(s.Issuer)
	s.ClientID = strings.TrimSpace(s.ClientID)
	s.RoleClaim = strings.TrimSpace(s.RoleClaim)
	s.DefaultRole = strings.TrimSpace(s.DefaultRole)
	if s.ClientSecret != nil {
		v := strings.TrimSpace(*s.ClientSecret)
		s.ClientSecret = &v
		if v == "" {
			s.ClientSecret = nil
		}
	}
	clean := func(list []string, lower bool) []string {
		out := []string{}
		for _, v := range list {
			v = strings.TrimSpace(v)
			if lower {
				v = strings.ToLower(strings.TrimPrefix(v, "@"))
			}
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	s.AllowedDomains = clean(s.AllowedDomains, true)
	s.Scopes = slices.DeleteFunc(clean(s.Scopes, false), func(v string) bool { return slices.Contains(BaseScopes, v) })
	var m []Mapping
	for _, x := range s.RoleMap {
		x.Value, x.Role = strings.TrimSpace(x.Value), strings.TrimSpace(x.Role)
		if x.Value != "" || x.Role != "" {
			m = append(m, x)
		}
	}
	s.RoleMap = m
}

// Check answers the problems of normalized settings (nil when none).
// Roles are checked by the caller, which knows the organization's.
func (s Settings) Check() error {
	var p Problems
	if s.ProviderName == "" || len(s.ProviderName) > 60 {
		p = append(p, "providerName: give the provider's name as the sign-in button shows it (at most 60 characters)")
	}
	if err := CheckIssuer(s.Issuer); err != nil {
		p = append(p, "issuer: "+err.Error())
	}
	if s.ClientID == "" || len(s.ClientID) > 500 {
		p = append(p, "clientId: give the client (application) id the provider made for patchd")
	}
	if s.ClientSecret != nil && len(*s.ClientSecret) > 2000 {
		p = append(p, "clientSecret: at most 2000 characters")
	}
	if len(s.AllowedDomains) == 0 {
		p = append(p, "allowedDomains: give at least one e-mail domain whose users may sign in (for example example.com)")
	}
	for _, d := range s.AllowedDomains {
		if !validDomain(d) {
			p = append(p, fmt.Sprintf("allowedDomains: %q is not a domain name", d))
		}
	}
	for _, sc := range s.Scopes {
		if strings.ContainsAny(sc, " \t\r\n\"\\") || len(sc) > 200 {
			p = append(p, fmt.Sprintf("scopes: %q is not a scope", sc))
		}
	}
	if len(s.RoleMap) > 0 && s.RoleClaim == "" {
		p = append(p, "roleClaim: role mappings need the claim they read (for example groups)")
	}
	for _, m := range s.RoleMap {
		if m.Value == "" || m.Role == "" {
			p = append(p, fmt.Sprintf("roleMap: %q = %q needs both a claim value and a role", m.Value, m.Role))
		}
	}
	if s.JustInTime && s.DefaultRole == "" && len(s.RoleMap) == 0 {
		p = append(p, "justInTime: a user created at sign-in needs a role: give role mappings or a default role")
	}
	if len(p) > 0 {
		return p
	}
	return nil
}

// CheckIssuer accepts an https issuer URL without query or fragment, or
// plain http to this machine only (a provider under test or development).
func CheckIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return fmt.Errorf("%q is not an issuer URL (https://…, as the provider's discovery document names it)", issuer)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%q must use https (plain http only to this machine)", issuer)
}

func validDomain(d string) bool {
	if len(d) > 253 || !strings.Contains(d, ".") {
		return false
	}
	for _, label := range strings.Split(d, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
				return false
			}
		}
	}
	return true
}

// DomainAllowed tells whether the e-mail address (lower case) is in one of
// the allowed domains (exactly: a subdomain is another domain).
func DomainAllowed(email string, domains []string) bool {
	at := strings.LastIndexByte(email, '@')
	return at > 0 && slices.Contains(domains, email[at+1:])
}

// ClaimValues reads the role claim from the claims: a string or an array
// of strings, at a dotted path for nested claims (Keycloak's
// realm_access.roles). A claim whose name itself holds dots is found too.
func ClaimValues(claims map[string]any, name string) []string {
	if name == "" {
		return nil
	}
	v, ok := claims[name]
	if !ok {
		if head, rest, found := strings.Cut(name, "."); found {
			if sub, ok := claims[head].(map[string]any); ok {
				return ClaimValues(sub, rest)
			}
		}
		return nil
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// RoleFor answers the role the claim values map to: the first mapping (in
// the configuration's order) whose value the claim holds, else the default
// role. ok is false when neither gives one.
func RoleFor(values []string, c store.SSOConfig) (roleID string, ok bool) {
	for _, m := range c.RoleMap {
		if slices.Contains(values, m.Value) {
			return m.RoleID, m.RoleName != ""
		}
	}
	return c.DefaultRoleID, c.DefaultRoleID != ""
}

// Mapped tells whether a mapping (not the default role) gave the role.
func Mapped(values []string, c store.SSOConfig) bool {
	for _, m := range c.RoleMap {
		if slices.Contains(values, m.Value) {
			return true
		}
	}
	return false
}
