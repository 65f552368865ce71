// Package api serves the REST API v1 (docs/design/api-contract.md):
// the token call, authentication and authorization of every /api/v1 call,
// and one file of handlers per resource. routes.go is the one route table.
package api

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/auth"
	"github.com/patchd/patchd/internal/clock"
	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// Config holds what the API needs.
type Config struct {
	Store *store.Store
	Auth  *auth.Authenticator
	// TrustedProxies are the peers whose X-Forwarded-For is believed.
	TrustedProxies []netip.Prefix
	// OpenAPI answers the machine-readable description as JSON.
	OpenAPI func() ([]byte, error)
	// CheckinInterval is the agents' check-in interval: an endpoint seen
	// within three of them is connected.
	CheckinInterval time.Duration
	// EndpointRemoved is told of a removed endpoint (the agent API drops its
	// cached secret).
	EndpointRemoved func(endpointID string)
	// Queued is told, after the commit, which endpoints got new commands
	// (presence.Hub.QueuedSoon: it wakes their long polls on every replica,
	// this one's before it returns, so that a check-in after the answer
	// finds the commands).
	Queued func(ctx context.Context, endpointIDs []string)
	// Releases answers the signed agent releases the server publishes
	// (GET /api/v1/agent-versions); nil: none.
	Releases func(ctx context.Context) ([]agentproto.Release, error)
	// BaseURL is the server's public address (--base-url), for the links
	// the API answers (an invitation's); "": the request's.
	BaseURL string
}

// API is the REST API v1.
type API struct {
	cfg   Config
	store *store.Store
	auth  *auth.Authenticator
	mux   *http.ServeMux
	// routed lists the patterns of the route table, in order, and
	// handlers their handlers.
	routed   []string
	handlers []http.Handler
	// clock is the time of staged agent updates (tests move it).
	clock clock.Clock
}

// SetClock replaces the clock of staged agent updates (tests).
func (a *API) SetClock(now func() time.Time) { a.clock.Set(now) }

// New builds the API and its route table.
func New(cfg Config) *API {
	a := &API{cfg: cfg, store: cfg.Store, auth: cfg.Auth, mux: http.NewServeMux()}
	a.routes()
	return a
}

// ServeHTTP serves /api/.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

// Routes lists the method and path of every routed operation (tests compare
// it with the OpenAPI document).
func (a *API) Routes() []string { return append([]string(nil), a.routed...) }

// Register routes the API on the server's mux: every operation's pattern
// and "/api/" for the paths none matches (404 or 405 in the Error shape,
// as ServeHTTP answers). A request is then matched once, by the server's
// mux, instead of once there ("/api/") and once by the API's: the second
// match cost a cached GET about a twentieth of its CPU. The API's own mux
// still serves ServeHTTP and ServeAs (the console).
func (a *API) Register(mux *http.ServeMux) {
	for i, pattern := range a.routed {
		mux.Handle(pattern, a.handlers[i])
	}
	mux.Handle("/api/", a)
}

// handle adds an operation to the route table.
func (a *API) handle(pattern string, h http.Handler) {
	a.mux.Handle(pattern, h)
	a.routed = append(a.routed, pattern)
	a.handlers = append(a.handlers, h)
}

// public routes an operation that needs no token.
func (a *API) public(pattern string, h httpx.HandlerFunc) {
	a.handle(pattern, httpx.Handle(h))
}

// route routes an operation that needs api.access and the permission p.
func (a *API) route(pattern string, p perm.Permission, h httpx.HandlerFunc) {
	a.handle(pattern, httpx.Handle(func(w http.ResponseWriter, r *http.Request) error {
		principal, err := a.authenticate(r)
		if err != nil {
			return err
		}
		if !principal.Can(p) {
			missing := p.String()
			if !principal.Permissions.Has(perm.APIAccess) {
				missing = perm.APIAccess.String()
			}
			return httpx.Errorf(http.StatusForbidden, "insufficient_scope", "the credentials' role lacks the permission "+missing).
				WithHeader("WWW-Authenticate", `Bearer realm="patchd", error="insufficient_scope", scope="`+missing+`"`)
		}
		if httpx.SetCaller(r.Context(), principal) {
			return h(w, r)
		}
		return h(w, r.WithContext(context.WithValue(r.Context(), principalKey, principal)))
	}))
}

// ServeAs serves an /api/ request for a caller the process authenticated
// itself (a console user): the same route table, validation, permission
// checks, errors and Audit Trail as a bearer token's request.
func (a *API) ServeAs(w http.ResponseWriter, r *http.Request, p *auth.Principal) {
	a.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), inProcessKey, p)))
}

func (a *API) authenticate(r *http.Request) (*auth.Principal, error) {
	if p, ok := r.Context().Value(inProcessKey).(*auth.Principal); ok {
		return p, nil
	}
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		// RFC 6750 section 3.1: a request without authentication gets
		// the challenge without an error code.
		return nil, httpx.Errorf(http.StatusUnauthorized, "invalid_token", "a bearer token is required in the Authorization header").
			WithHeader("WWW-Authenticate", `Bearer realm="patchd"`)
	}
	p, err := a.auth.Authenticate(r.Context(), strings.TrimSpace(token))
	if err == auth.ErrInvalidToken {
		return nil, errInvalidToken("the token is invalid, expired or revoked; request a new one")
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func errInvalidToken(desc string) *httpx.Error {
	return httpx.Errorf(http.StatusUnauthorized, "invalid_token", desc).
		WithHeader("WWW-Authenticate", `Bearer realm="patchd", error="invalid_token"`)
}

type ctxKey int

const (
	principalKey ctxKey = iota
	inProcessKey
)

// principal is the authenticated caller of a routed operation.
// noStore marks an answer that carries a secret (a client secret, an
// enrollment token, an invitation): no cache, shared or the browser's, may
// keep it.
func noStore(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
}

func principal(r *http.Request) *auth.Principal {
	if p, ok := httpx.Caller(r.Context()).(*auth.Principal); ok {
		return p
	}
	return r.Context().Value(principalKey).(*auth.Principal)
}

// auditEntry starts the Audit Trail entry of a write by the caller.
func (a *API) auditEntry(r *http.Request, action, targetType, targetID string) *store.AuditEntry {
	p := principal(r)
	return &store.AuditEntry{OrgID: p.OrgID, Actor: p.Actor(), Action: action, TargetType: targetType, TargetID: targetID, Address: a.callerAddress(r)}
}

// by is the caller of a write the admin package records.
func (a *API) by(r *http.Request) admin.By {
	return admin.By{Actor: principal(r).Actor(), Address: a.callerAddress(r)}
}

// callerAddress is the caller's client address for the Audit Trail: the
// one a console user's principal carries, else the request's. It is read
// when a write records it, not for every call.
func (a *API) callerAddress(r *http.Request) string {
	if p := principal(r); p.Address != "" {
		return p.Address
	}
	return a.clientIP(r)
}

// ClientIP is the caller's address as the API reads it (the agent
// protocol records it on re-enrollments).
func (a *API) ClientIP(r *http.Request) string { return a.clientIP(r) }

// clientIP is the caller's address (httpx.ClientIP with the trusted proxies).
func (a *API) clientIP(r *http.Request) string { return httpx.ClientIP(r, a.cfg.TrustedProxies) }

// notFound answers every /api/ path that no route matches: 405 with Allow
// when the path exists for other methods, else 404, both in the Error shape.
func (a *API) notFound(w http.ResponseWriter, r *http.Request) error {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := a.mux.Handler(probe); pattern != "" && pattern != "/api/" {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		return httpx.Errorf(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; allowed: "+strings.Join(allow, ", ")).
			WithHeader("Allow", strings.Join(allow, ", "))
	}
	return httpx.Errorf(http.StatusNotFound, "not_found", "no operation at "+r.URL.Path)
}
