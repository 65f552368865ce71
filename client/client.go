// Package client is the Go client of the patchd REST API v1. It fetches a
// bearer token with the client-credentials grant, renews it when a call
// answers 401 (spec section 5, rule 5), and pages through lists.
//
//	c := client.New("https://patchd.example.com", clientID, clientSecret)
//	for ep, err := range c.Endpoints(ctx, client.EndpointQuery{}) { … }
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/patchd/patchd/apiv1"
)

// Client calls one patchd server with one API credential.
type Client struct {
	base         string
	clientID     string
	clientSecret string
	http         *http.Client

	mu      sync.Mutex
	token   string
	expires time.Time
}

// Option changes a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client (timeouts, TLS, test transports).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithToken starts with a token obtained earlier (a cached one).
func WithToken(token string, expires time.Time) Option {
	return func(c *Client) { c.token, c.expires = token, expires }
}

// New makes a client of the server at baseURL (without /api/v1).
func New(baseURL, clientID, clientSecret string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), clientID: clientID, clientSecret: clientSecret,
		http: &http.Client{Timeout: 60 * time.Second}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Error is an error answer of the server in the spec's Error shape.
type Error struct {
	Status      int
	Code        string
	Description string
	Details     []apiv1.Problem
	// RetryAfter is set from the Retry-After header (a 429, or a 503 when
	// the server's database is unavailable).
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Description != "" {
		return fmt.Sprintf("patchd: %d %s: %s", e.Status, e.Code, e.Description)
	}
	return fmt.Sprintf("patchd: %d %s", e.Status, e.Code)
}

// IsStatus tells whether err is an API error with the given status.
func IsStatus(err error, status int) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == status
}

// Token answers a valid bearer token, fetching one when there is none or it
// is about to expire.
func (c *Client) Token(ctx context.Context) (string, time.Time, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token != "" && time.Until(c.expires) > 30*time.Second {
		return c.token, c.expires, nil
	}
	return c.fetchTokenLocked(ctx)
}

func (c *Client) fetchTokenLocked(ctx context.Context) (string, time.Time, error) {
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {c.clientID}, "client_secret": {c.clientSecret}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/api/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	var tr apiv1.TokenResponse
	if err := c.send(req, &tr); err != nil {
		return "", time.Time{}, err
	}
	c.token = tr.AccessToken
	c.expires = time.Now().Add(time.Duration(tr.ExpiresIn) * time.Second)
	return c.token, c.expires, nil
}

// CachedToken answers the token the client holds and its expiry, without
// fetching one: "" when it holds none. Callers that keep tokens between
// processes (patchctl) save it after their calls, since a 401 may have
// renewed it.
func (c *Client) CachedToken() (string, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token, c.expires
}

// invalidate forgets token if it is still the current one.
func (c *Client) invalidate(token string) {
	c.mu.Lock()
	if c.token == token {
		c.token = ""
	}
	c.mu.Unlock()
}

// call is Do decoding the answer into a new T.
func call[T any](ctx context.Context, c *Client, method, path string, query url.Values, body any) (T, error) {
	var out T
	err := c.Do(ctx, method, path, query, body, &out)
	return out, err
}

// Do calls the API: method and path (from /api/v1/…), query, a JSON body
// (nil for none) and the answer decoded into out (nil to drop it). A 401
// fetches a new token and tries once more.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return fmt.Errorf("patchd: encode request: %w", err)
		}
	}
	for attempt := 0; ; attempt++ {
		token, _, err := c.Token(ctx)
		if err != nil {
			return err
		}
		u := c.base + path
		if len(query) > 0 {
			u += "?" + query.Encode()
		}
		var rd io.Reader
		if payload != nil {
			rd = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		err = c.send(req, out)
		if attempt == 0 && IsStatus(err, http.StatusUnauthorized) {
			c.invalidate(token)
			continue
		}
		return err
	}
}

// Raw performs an authenticated GET and answers the response for streaming
// (CSV reports). The caller closes the body.
func (c *Client) Raw(ctx context.Context, path string, query url.Values) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		token, _, err := c.Token(ctx)
		if err != nil {
			return nil, err
		}
		u := c.base + path
		if len(query) > 0 {
			u += "?" + query.Encode()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.http.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 300 {
			return resp, nil
		}
		apiErr := readError(resp)
		resp.Body.Close()
		if attempt == 0 && resp.StatusCode == http.StatusUnauthorized {
			c.invalidate(token)
			continue
		}
		return nil, apiErr
	}
}

func (c *Client) send(req *http.Request, out any) error {
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return readError(resp)
	}
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("patchd: decode answer of %s %s: %w", req.Method, req.URL.Path, err)
	}
	return nil
}

func readError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Status: resp.StatusCode}
	var shape apiv1.Error
	if json.Unmarshal(body, &shape) == nil && shape.Error != "" {
		e.Code = shape.Error
		if shape.ErrorDescription != nil {
			e.Description = *shape.ErrorDescription
		}
		e.Details = shape.Details
	} else {
		e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		e.Description = strings.TrimSpace(string(body))
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			e.RetryAfter = time.Duration(n) * time.Second
		}
	}
	return e
}
