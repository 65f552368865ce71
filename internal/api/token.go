package api

import (
	"errors"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/httpx"
)

// tokenRequest is the TokenRequest of the spec, from a form, JSON or Basic.
type tokenRequest struct {
	GrantType    string `json:"grant_type"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int    `json:"expires_in"`
}

// oauthError answers in the Error shape with an RFC 6749 error code.
func oauthError(status int, code, desc string) *httpx.Error {
	return httpx.Errorf(status, code, desc)
}

// issueToken is operation 1: POST /api/oauth/token.
func (a *API) issueToken(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	req, basic, err := readTokenRequest(w, r)
	if err != nil {
		return err
	}
	switch {
	case req.GrantType == "":
		return oauthError(http.StatusBadRequest, "invalid_request", "grant_type is required")
	case req.GrantType != "client_credentials":
		return oauthError(http.StatusBadRequest, "unsupported_grant_type", "only the client_credentials grant is supported")
	case req.ClientID == "" && req.ClientSecret == "":
		return oauthError(http.StatusBadRequest, "invalid_request", "client_id and client_secret are required")
	case req.ClientID == "":
		return oauthError(http.StatusBadRequest, "invalid_request", "client_id is required")
	case req.ClientSecret == "":
		return oauthError(http.StatusBadRequest, "invalid_request", "client_secret is required")
	}
	issued, err := a.auth.Issue(r.Context(), req.ClientID, req.ClientSecret, a.clientIP(r))
	var limited *auth.RateLimitedError
	switch {
	case errors.As(err, &limited):
		secs := int(math.Ceil(limited.RetryAfter.Seconds()))
		return oauthError(http.StatusTooManyRequests, "too_many_attempts",
			"too many failed attempts; retry after "+strconv.Itoa(secs)+" seconds").WithHeader("Retry-After", strconv.Itoa(secs))
	case errors.Is(err, auth.ErrInvalidClient):
		e := oauthError(http.StatusUnauthorized, "invalid_client", "unknown client, wrong secret or disabled credentials")
		if basic {
			e.WithHeader("WWW-Authenticate", `Basic realm="patchd"`)
		}
		return e
	case err != nil:
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, tokenResponse{AccessToken: issued.AccessToken, TokenType: "Bearer", ExpiresIn: issued.ExpiresIn})
	return nil
}

// readTokenRequest reads the TokenRequest from HTTP Basic, a JSON body or a
// form body. Credentials in both the header and the body must agree.
func readTokenRequest(w http.ResponseWriter, r *http.Request) (tokenRequest, bool, error) {
	var req tokenRequest
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		if err := httpx.DecodeJSON(w, r, &req); err != nil {
			var e *httpx.Error
			if errors.As(err, &e) && e.Status == http.StatusUnprocessableEntity {
				return req, false, oauthError(http.StatusBadRequest, "invalid_request", *e.Description)
			}
			if errors.As(err, &e) && e.Code == "invalid_json" {
				return req, false, oauthError(http.StatusBadRequest, "invalid_request", *e.Description)
			}
			return req, false, err
		}
	default:
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if err := r.ParseForm(); err != nil {
			return req, false, oauthError(http.StatusBadRequest, "invalid_request", "the form body could not be read")
		}
		req.GrantType = r.PostForm.Get("grant_type")
		req.ClientID = r.PostForm.Get("client_id")
		req.ClientSecret = r.PostForm.Get("client_secret")
		if req.GrantType == "" {
			// Some clients put grant_type in the query string.
			req.GrantType = r.URL.Query().Get("grant_type")
		}
	}
	user, pass, basic := r.BasicAuth()
	if basic {
		// RFC 6749 2.3.1: the Basic credentials are form-urlencoded.
		if u, err := url.QueryUnescape(user); err == nil {
			user = u
		}
		if p, err := url.QueryUnescape(pass); err == nil {
			pass = p
		}
		if (req.ClientID != "" && req.ClientID != user) || (req.ClientSecret != "" && req.ClientSecret != pass) {
			return req, true, oauthError(http.StatusBadRequest, "invalid_request", "client credentials given twice, and they differ")
		}
		req.ClientID, req.ClientSecret = user, pass
	}
	req.GrantType = strings.TrimSpace(req.GrantType)
	// A form or Basic value may hold a NUL (%00), which a JSON body cannot
	// (the decoder refuses it): the same 400 on both engines.
	for _, v := range []string{req.GrantType, req.ClientID, req.ClientSecret} {
		if strings.IndexByte(v, 0) >= 0 {
			return req, basic, oauthError(http.StatusBadRequest, "invalid_request", "a value holds the NUL character, which patchd does not store")
		}
	}
	return req, basic, nil
}

// openAPIDocument is operation 25.
func (a *API) openAPIDocument(w http.ResponseWriter, r *http.Request) error {
	doc, err := a.cfg.OpenAPI()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(doc)
	return nil
}
