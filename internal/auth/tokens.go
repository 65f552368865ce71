package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/patchd/patchd/internal/clock"
	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
	"github.com/patchd/patchd/internal/store"
)

// TokenLifetime is how long a bearer token is valid (spec section 5).
const TokenLifetime = time.Hour

// Failed-secret limits of the token call, within FailureWindow: MaxFailures
// failed attempts per client id from one source address, and
// MaxAddressFailures per source address whatever the client ids. Past
// either, the call answers 429 (even with the right secret) until the
// window ends; the right secret from another address still works.
const (
	MaxFailures        = 10
	MaxAddressFailures = 50
	FailureWindow      = 5 * time.Minute
)

// ThrottleKeys are the keys of an attempt to prove knowledge of account's
// secret from the address addr, kind naming the sort of secret
// ("client" for the token call): per address, and per account and address.
// The account is hashed: it comes from the request, of any length.
func ThrottleKeys(kind, account, addr string, perPair, perAddr Limit) []Key {
	return []Key{
		{Name: kind + "-ip:" + addr, Limit: perAddr},
		{Name: kind + ":" + HashSecret(account)[:32] + "@" + addr, Limit: perPair},
	}
}

// How often each replica looks for revoked credentials; a disabled
// credential's tokens stop working within this interval plus a query.
const revocationPoll = time.Second

// Errors of Authenticate and Issue.
var (
	ErrInvalidToken  = errors.New("auth: invalid or expired token")
	ErrInvalidClient = errors.New("auth: invalid client credentials")
)

// RateLimitedError answers a token request made after too many failures.
type RateLimitedError struct{ RetryAfter time.Duration }

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("auth: too many failed attempts, retry after %s", e.RetryAfter)
}

// Principal is who is calling: an API credential of one organization.
type Principal struct {
	OrgID          string
	CredentialID   string
	CredentialName string
	RoleID         string
	Permissions    perm.Set
	ExpiresAt      time.Time
	// UserEmail is set when a console user acts (through API.ServeAs).
	UserEmail string
	// Address is the caller's client address, for the Audit Trail.
	Address string
}

// Actor is the Audit Trail name of the caller (spec: api:<credential name>;
// user:<e-mail> for a console user).
func (p *Principal) Actor() string {
	if p.UserEmail != "" {
		return "user:" + p.UserEmail
	}
	return "api:" + p.CredentialName
}

// Can tells whether the caller holds api.access and the permission.
func (p *Principal) Can(x perm.Permission) bool {
	return p.Permissions.Has(perm.APIAccess) && p.Permissions.Has(x)
}

// Authenticator issues bearer tokens and resolves them. Resolved tokens are
// cached in memory so that a request costs a hash and a map lookup; a
// background loop drops the tokens of credentials and roles that another
// process or replica changed.
type Authenticator struct {
	store    *store.Store
	clock    clock.Clock
	throttle *Throttle

	mu     sync.RWMutex
	tokens map[[32]byte]*Principal
}

// NewAuthenticator makes an Authenticator on the store.
func NewAuthenticator(s *store.Store) *Authenticator {
	return &Authenticator{store: s, throttle: NewThrottle(s), tokens: make(map[[32]byte]*Principal)}
}

// SetClock replaces the clock (tests).
func (a *Authenticator) SetClock(now func() time.Time) { a.clock.Set(now) }

func (a *Authenticator) now() time.Time { return a.clock.Now() }

// Authenticate resolves a bearer token to its principal.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (*Principal, error) {
	if token == "" {
		return nil, ErrInvalidToken
	}
	key := sha256.Sum256([]byte(token))
	now := a.now()
	a.mu.RLock()
	p, ok := a.tokens[key]
	a.mu.RUnlock()
	if ok {
		if now.Before(p.ExpiresAt) {
			return p, nil
		}
		a.mu.Lock()
		delete(a.tokens, key)
		a.mu.Unlock()
		return nil, ErrInvalidToken
	}
	g, err := a.store.LookupAccessToken(ctx, hexHash(key), now)
	if errors.Is(err, dberr.ErrNotFound) {
		return nil, ErrInvalidToken
	}
	if err != nil {
		return nil, err
	}
	p = &Principal{OrgID: g.OrgID, CredentialID: g.CredentialID, CredentialName: g.CredentialName,
		RoleID: g.RoleID, Permissions: g.Permissions, ExpiresAt: g.ExpiresAt}
	a.mu.Lock()
	a.tokens[key] = p
	a.mu.Unlock()
	return p, nil
}

// Issued is a new bearer token.
type Issued struct {
	AccessToken string
	ExpiresIn   int
	Principal   *Principal
}

// Issue checks client credentials and issues a token. remoteIP is the
// caller's address for the failed-secret limits, which are checked (and
// the attempt counted) before the secret is.
func (a *Authenticator) Issue(ctx context.Context, clientID, secret, remoteIP string) (Issued, error) {
	now := a.now()
	attempt, err := a.throttle.Begin(ctx, now, ThrottleKeys("client", clientID, remoteIP,
		Limit{Max: MaxFailures, Window: FailureWindow}, Limit{Max: MaxAddressFailures, Window: FailureWindow})...)
	if err != nil {
		return Issued{}, err
	}
	c, err := a.store.CredentialByClientID(ctx, clientID)
	if err != nil && !errors.Is(err, dberr.ErrNotFound) {
		attempt.Release(context.WithoutCancel(ctx))
		return Issued{}, err
	}
	if err != nil || !SecretMatches(secret, c.SecretHash) {
		return Issued{}, ErrInvalidClient // the attempt stays counted
	}
	attempt.Release(context.WithoutCancel(ctx))
	if c.Disabled {
		return Issued{}, ErrInvalidClient
	}
	token := NewSecret(PrefixAccessToken)
	key := sha256.Sum256([]byte(token))
	expires := now.Add(TokenLifetime)
	if err := a.store.InsertAccessToken(ctx, hexHash(key), c, expires); err != nil {
		return Issued{}, err
	}
	p := &Principal{OrgID: c.OrgID, CredentialID: c.ID, CredentialName: c.Name, RoleID: c.RoleID,
		Permissions: c.Permissions, ExpiresAt: expires}
	a.mu.Lock()
	a.tokens[key] = p
	a.mu.Unlock()
	return Issued{AccessToken: token, ExpiresIn: int(TokenLifetime / time.Second), Principal: p}, nil
}

// Forget drops the cached tokens of a credential or role at once (this
// process changed it; other replicas learn it from the store).
func (a *Authenticator) Forget(ch store.AuthChange) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, p := range a.tokens {
		if (ch.CredentialID != "" && p.CredentialID == ch.CredentialID) || (ch.RoleID != "" && p.RoleID == ch.RoleID) {
			delete(a.tokens, k)
		}
	}
}

// Run follows revocations recorded by any process until ctx ends, and prunes
// expired tokens and old failure records.
func (a *Authenticator) Run(ctx context.Context) {
	tick := time.NewTicker(revocationPoll)
	defer tick.Stop()
	since := a.now().Add(-5 * time.Second)
	lastPrune := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := a.now()
		// Read back a few seconds: a change committed late with an earlier
		// time is still seen; forgetting twice is harmless.
		changes, err := a.store.AuthChangesSince(ctx, since.Add(-5*time.Second))
		if err != nil {
			if ctx.Err() == nil {
				slog.Warn("auth: read revocations", "err", err)
			}
			continue
		}
		since = now
		for _, ch := range changes {
			a.Forget(ch)
		}
		a.dropExpired(now)
		if now.Sub(lastPrune) > 5*time.Minute {
			lastPrune = now
			if err := a.store.PruneAuth(ctx, now); err != nil && ctx.Err() == nil {
				slog.Warn("auth: prune", "err", err)
			}
		}
	}
}

func (a *Authenticator) dropExpired(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, p := range a.tokens {
		if !now.Before(p.ExpiresAt) {
			delete(a.tokens, k)
		}
	}
}

func hexHash(sum [32]byte) string {
	const digits = "0123456789abcdef"
	var out [64]byte
	for i, b := range sum {
		out[i*2], out[i*2+1] = digits[b>>4], digits[b&0xf]
	}
	return string(out[:])
}
