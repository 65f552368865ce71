package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
)

// TokenGrant is what a bearer token stands for.
type TokenGrant struct {
	OrgID          string
	CredentialID   string
	CredentialName string
	RoleID         string
	Permissions    perm.Set
	ExpiresAt      time.Time
}

// InsertAccessToken stores the hash of a newly issued bearer token.
func (s *Store) InsertAccessToken(ctx context.Context, tokenHash string, c Credential, expires time.Time) error {
	_, err := s.exec(ctx, `INSERT INTO access_tokens (token_hash, credential_id, org_id, expires_at, created_at) VALUES (?, ?, ?, ?, ?)`,
		tokenHash, c.ID, c.OrgID, millis(expires), millis(time.Now()))
	if err != nil {
		return fmt.Errorf("store: insert access token: %w", err)
	}
	return nil
}

// LookupAccessToken resolves a token hash to its grant. An expired token, or
// one of a disabled credential, is not found.
func (s *Store) LookupAccessToken(ctx context.Context, tokenHash string, now time.Time) (TokenGrant, error) {
	var g TokenGrant
	var permText string
	var expires int64
	err := s.queryRow(ctx, `SELECT t.org_id, c.id, c.name, c.role_id, r.permissions, t.expires_at
		FROM access_tokens t JOIN credentials c ON c.id = t.credential_id JOIN roles r ON r.id = c.role_id
		WHERE t.token_hash = ? AND t.expires_at > ? AND c.disabled = FALSE`, tokenHash, millis(now)).
		Scan(&g.OrgID, &g.CredentialID, &g.CredentialName, &g.RoleID, &permText, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return TokenGrant{}, fmt.Errorf("store: access token: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return TokenGrant{}, fmt.Errorf("store: lookup access token: %w", err)
	}
	if g.Permissions, err = perm.Parse(permText); err != nil {
		return TokenGrant{}, fmt.Errorf("store: access token role: %w", err)
	}
	g.ExpiresAt = fromMillis(expires)
	return g, nil
}

// AuthChange names a credential or role whose tokens must be dropped from caches.
type AuthChange struct {
	CredentialID string
	RoleID       string
}

// AuthChangesSince lists the changes recorded at or after since.
func (s *Store) AuthChangesSince(ctx context.Context, since time.Time) ([]AuthChange, error) {
	rows, err := s.query(ctx, `SELECT COALESCE(credential_id, ''), COALESCE(role_id, '') FROM auth_changes WHERE at >= ?`, millis(since))
	var out []AuthChange
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var c AuthChange
		if err := r.Scan(&c.CredentialID, &c.RoleID); err != nil {
			return err
		}
		out = append(out, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: auth changes: %w", err)
	}
	return out, nil
}

// ReserveAttempt counts one attempt for key in its current window and
// answers the attempts counted in that window, this one included, and when
// the window started. A window starts with the first attempt after the
// previous window (of the given length) ended. It is one statement, so
// concurrent attempts on any replica each see a different count.
func (s *Store) ReserveAttempt(ctx context.Context, key string, now time.Time, window time.Duration) (int, time.Time, error) {
	expired := millis(now.Add(-window))
	var n int
	var start int64
	err := s.write.QueryRowContext(ctx, s.q(`INSERT INTO auth_throttle (key, window_start, attempts) VALUES (?, ?, 1)
		ON CONFLICT (key) DO UPDATE SET
			attempts = CASE WHEN auth_throttle.window_start <= ? THEN 1 ELSE auth_throttle.attempts + 1 END,
			window_start = CASE WHEN auth_throttle.window_start <= ? THEN excluded.window_start ELSE auth_throttle.window_start END
		RETURNING attempts, window_start`), key, millis(now), expired, expired).Scan(&n, &start)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("store: reserve attempt: %w", err)
	}
	return n, fromMillis(start), nil
}

// ReleaseAttempt takes back an attempt that ReserveAttempt counted in the
// window that started at windowStart (the attempt succeeded, or was never
// made). An attempt of a window that has since ended is left alone.
func (s *Store) ReleaseAttempt(ctx context.Context, key string, windowStart time.Time) error {
	_, err := s.exec(ctx, `UPDATE auth_throttle SET attempts = attempts - 1 WHERE key = ? AND window_start = ? AND attempts > 0`,
		key, millis(windowStart))
	if err != nil {
		return fmt.Errorf("store: release attempt: %w", err)
	}
	return nil
}

// PruneAuth deletes expired tokens, attempt counters older than an hour
// (every window is shorter) and old change records.
func (s *Store) PruneAuth(ctx context.Context, now time.Time) error {
	for _, q := range []struct {
		sql string
		arg int64
	}{
		{`DELETE FROM access_tokens WHERE expires_at < ?`, millis(now)},
		{`DELETE FROM auth_throttle WHERE window_start < ?`, millis(now.Add(-time.Hour))},
		{`DELETE FROM auth_changes WHERE at < ?`, millis(now.Add(-time.Hour))},
	} {
		if _, err := s.exec(ctx, q.sql, q.arg); err != nil {
			return fmt.Errorf("store: prune auth: %w", err)
		}
	}
	return nil
}
