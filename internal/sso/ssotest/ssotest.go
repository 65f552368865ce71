// Package ssotest serves an OpenID provider's discovery document for tests
// that store single sign-on settings without signing anyone in (saving
// them reads the document). Sign-in itself is tested against a real
// provider (internal/console/testdata/oidc).
package ssotest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Issuer starts a server on 127.0.0.1 that answers the discovery document
// of its own address, and answers that issuer.
func Issuer(t testing.TB) string {
	t.Helper()
	var issuer string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/openid-configuration" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"issuer": issuer, "authorization_endpoint": issuer + "/auth",
			"token_endpoint": issuer + "/token", "jwks_uri": issuer + "/jwks"})
	}))
	t.Cleanup(srv.Close)
	issuer = srv.URL
	return issuer
}
