package sso

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DiscoveryURL is the address of the issuer's discovery document (OpenID
// Connect Discovery 1.0, section 4: the issuer without a trailing slash,
// followed by /.well-known/openid-configuration).
func DiscoveryURL(issuer string) string {
	return strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration"
}

// DiscoveryError refuses an issuer whose discovery document cannot be read
// or names another issuer (sign-in would then fail for everyone).
type DiscoveryError struct {
	Issuer string
	URL    string
	// Named is the issuer the document names ("" when it was not read).
	Named string
	Err   error
}

func (e *DiscoveryError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("issuer: the provider's discovery document %s could not be read (%v): check the issuer %q", e.URL, e.Err, e.Issuer)
	}
	return fmt.Sprintf("issuer: the provider's discovery document %s names the issuer %q, not %q: give the issuer exactly as the document names it",
		e.URL, e.Named, e.Issuer)
}

func (e *DiscoveryError) Unwrap() error { return e.Err }

// CheckDiscovery reads the issuer's discovery document with client and
// answers a *DiscoveryError when it cannot be read, lacks what the sign-in
// needs, or names another issuer (a missing or extra trailing slash is
// another issuer: ID tokens carry the document's).
func CheckDiscovery(ctx context.Context, client *http.Client, issuer string) error {
	u := DiscoveryURL(issuer)
	fail := func(err error) error { return &DiscoveryError{Issuer: issuer, URL: u, Err: err} }
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("HTTP %s", resp.Status))
	}
	var doc struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		JWKSURI               string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc); err != nil {
		return fail(fmt.Errorf("not a JSON document: %w", err))
	}
	if doc.Issuer != issuer {
		return &DiscoveryError{Issuer: issuer, URL: u, Named: doc.Issuer}
	}
	if doc.AuthorizationEndpoint == "" || doc.TokenEndpoint == "" || doc.JWKSURI == "" {
		return fail(fmt.Errorf("it names no authorization_endpoint, token_endpoint or jwks_uri"))
	}
	return nil
}
