package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/sso"
	"github.com/patchd/patchd/internal/store"
)

// SSOOut is the printed form of an organization's provider: never the
// client secret, only whether one is stored.
type SSOOut struct {
	store.SSOConfig
	OrgName     string `json:"org"`
	RedirectURI string `json:"redirectUri,omitempty"`
	SignInURL   string `json:"signInUrl,omitempty"`
}

// SSOLinks fills in the addresses an administrator registers at the
// provider and gives its users, under the server's public address baseURL
// ("": left out).
func SSOLinks(out *SSOOut, baseURL string) {
	if baseURL == "" {
		return
	}
	out.RedirectURI = baseURL + sso.CallbackPath
	out.SignInURL = baseURL + "/console/sso/" + out.OrgID
}

// SSOSettingsOf answers a stored configuration as settings (the client
// secret kept), for a change of some of its fields.
func SSOSettingsOf(c store.SSOConfig) sso.Settings {
	s := sso.Settings{ProviderName: c.ProviderName, Issuer: c.Issuer, ClientID: c.ClientID, AllowedDomains: c.AllowedDomains,
		Scopes: c.Scopes, RoleClaim: c.RoleClaim, DefaultRole: c.DefaultRoleName, JustInTime: c.JustInTime, Enabled: c.Enabled,
		ProviderVerifiesEmail: c.ProviderVerifiesEmail}
	for _, m := range c.RoleMap {
		role := m.RoleName
		if role == "" {
			role = m.RoleID
		}
		s.RoleMap = append(s.RoleMap, sso.Mapping{Value: m.Value, Role: role})
	}
	return s
}

// ShowSSO answers the organization's provider (ErrNotFound when none).
func ShowSSO(ctx context.Context, s *store.Store, orgRef string) (SSOOut, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return SSOOut{}, err
	}
	c, err := s.GetSSOConfig(ctx, o.ID)
	if err != nil {
		return SSOOut{}, err
	}
	return SSOOut{SSOConfig: c, OrgName: o.Name}, nil
}

// SSODiscoveryClient reads the providers' discovery documents when
// settings are saved.
var SSODiscoveryClient = &http.Client{Timeout: 15 * time.Second}

// SetSSO checks and stores the organization's provider, audited as
// sso_config.set by actor (the summary names what changed, never the
// secret). A new provider needs a client secret.
func SetSSO(ctx context.Context, s *store.Store, actor, orgRef string, in sso.Settings) (SSOOut, error) {
	return SetSSOBy(ctx, s, By{Actor: actor}, orgRef, in)
}

// SetSSOBy is SetSSO audited with the caller's address too. An enabled
// provider's discovery document must name the issuer as given (a
// *sso.DiscoveryError otherwise); a disabled one is stored without asking
// the provider, so that it can be turned off while unreachable.
func SetSSOBy(ctx context.Context, s *store.Store, by By, orgRef string, in sso.Settings) (SSOOut, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return SSOOut{}, err
	}
	in.Normalize()
	var problems sso.Problems
	if err := in.Check(); err != nil {
		problems = append(problems, err.(sso.Problems)...)
	}
	c := store.SSOConfig{OrgID: o.ID, ProviderName: in.ProviderName, Issuer: in.Issuer, ClientID: in.ClientID, AllowedDomains: in.AllowedDomains,
		Scopes: in.Scopes, RoleClaim: in.RoleClaim, JustInTime: in.JustInTime, Enabled: in.Enabled, ProviderVerifiesEmail: in.ProviderVerifiesEmail}
	for _, m := range in.RoleMap {
		if m.Role == "" {
			continue
		}
		r, err := s.FindRole(ctx, o.ID, m.Role)
		if errors.Is(err, dberr.ErrNotFound) {
			problems = append(problems, fmt.Sprintf("roleMap: the organization has no role %q", m.Role))
			continue
		}
		if err != nil {
			return SSOOut{}, err
		}
		c.RoleMap = append(c.RoleMap, store.SSORoleMapping{Value: m.Value, RoleID: r.ID, RoleName: r.Name})
	}
	if in.DefaultRole != "" {
		r, err := s.FindRole(ctx, o.ID, in.DefaultRole)
		switch {
		case errors.Is(err, dberr.ErrNotFound):
			problems = append(problems, fmt.Sprintf("defaultRole: the organization has no role %q", in.DefaultRole))
		case err != nil:
			return SSOOut{}, err
		default:
			c.DefaultRoleID = r.ID
		}
	}
	if len(problems) > 0 {
		return SSOOut{}, problems
	}
	if c.Enabled {
		if err := sso.CheckDiscovery(ctx, SSODiscoveryClient, c.Issuer); err != nil {
			return SSOOut{}, err
		}
	}
	mapping := map[string]string{}
	for _, m := range c.RoleMap {
		mapping[m.Value] = m.RoleName
	}
	e := &store.AuditEntry{OrgID: o.ID, Actor: by.Actor, Address: by.Address, Action: "sso_config.set", Summary: map[string]any{
		"providerName": c.ProviderName, "issuer": c.Issuer, "clientId": c.ClientID, "allowedDomains": c.AllowedDomains,
		"scopes": c.Scopes, "roleClaim": c.RoleClaim, "roleMap": mapping, "defaultRole": in.DefaultRole, "justInTime": c.JustInTime,
		"enabled": c.Enabled, "providerVerifiesEmail": c.ProviderVerifiesEmail, "clientSecretChanged": in.ClientSecret != nil}}
	saved, err := s.SetSSOConfig(ctx, e, c, in.ClientSecret)
	if errors.Is(err, store.ErrSSOSecretRequired) {
		return SSOOut{}, sso.Problems{"clientSecret: a new provider needs the client secret the provider made for patchd"}
	}
	if err != nil {
		return SSOOut{}, err
	}
	return SSOOut{SSOConfig: saved, OrgName: o.Name}, nil
}

// DeleteSSO removes the organization's provider, audited as
// sso_config.delete by actor.
func DeleteSSO(ctx context.Context, s *store.Store, actor, orgRef string) (map[string]any, error) {
	return DeleteSSOBy(ctx, s, By{Actor: actor}, orgRef)
}

// DeleteSSOBy is DeleteSSO audited with the caller's address too.
func DeleteSSOBy(ctx context.Context, s *store.Store, by By, orgRef string) (map[string]any, error) {
	o, err := s.FindOrg(ctx, orgRef)
	if err != nil {
		return nil, err
	}
	e := &store.AuditEntry{OrgID: o.ID, Actor: by.Actor, Address: by.Address, Action: "sso_config.delete"}
	if err := s.DeleteSSOConfig(ctx, e, o.ID); err != nil {
		return nil, err
	}
	return map[string]any{"orgId": o.ID, "org": o.Name, "deleted": true}, nil
}
