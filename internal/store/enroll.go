package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"time"
)

// EnrollToken lets agents join an organization.
type EnrollToken struct {
	ID        string     `json:"id"`
	OrgID     string     `json:"orgId"`
	ExpiresAt *time.Time `json:"expiresAt"`
	Revoked   bool       `json:"revoked"`
	Uses      int        `json:"uses"`
	CreatedAt time.Time  `json:"createdAt"`
}

// CreateEnrollToken stores the hash of a new enrollment token.
func (s *Store) CreateEnrollToken(ctx context.Context, e *AuditEntry, orgID, tokenHash string, expires *time.Time) (EnrollToken, error) {
	t := EnrollToken{ID: NewID(), OrgID: orgID, ExpiresAt: expires, CreatedAt: time.Now().UTC()}
	e.TargetID = t.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		_, err := tx.exec(ctx, `INSERT INTO enroll_tokens (id, org_id, token_hash, expires_at, revoked, uses, created_at, created_by)
		VALUES (?, ?, ?, ?, FALSE, 0, ?, ?)`, t.ID, orgID, tokenHash, nullMillis(expires), millis(t.CreatedAt), e.Actor)
		if err != nil {
			return fmt.Errorf("store: create enroll token: %w", err)
		}
		return nil
	})
	if err != nil {
		return EnrollToken{}, err
	}
	return t, nil
}

// EnrollTokenOrg resolves a valid (known, not revoked, not expired)
// enrollment token hash to its organization.
func (s *Store) EnrollTokenOrg(ctx context.Context, tokenHash string, now time.Time) (string, error) {
	_, orgID, err := s.ValidEnrollToken(ctx, tokenHash, now)
	return orgID, err
}

// ValidEnrollToken resolves a valid (known, not revoked, not expired)
// enrollment token hash to its id and organization.
func (s *Store) ValidEnrollToken(ctx context.Context, tokenHash string, now time.Time) (tokenID, orgID string, err error) {
	err = s.queryRow(ctx, `SELECT id, org_id FROM enroll_tokens WHERE token_hash = ? AND revoked = FALSE
		AND (expires_at IS NULL OR expires_at > ?)`, tokenHash, millis(now)).Scan(&tokenID, &orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("store: enroll token: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return "", "", fmt.Errorf("store: enroll token: %w", err)
	}
	return tokenID, orgID, nil
}

// useEnrollToken checks, in the enrollment's transaction, that the token
// is still valid and counts the enrollment on it. On PostgreSQL the check
// takes a share lock on the token's row: a revocation waits for the
// enrollments in progress, and one revoked since it was looked up enrolls
// nothing (dberr.ErrNotFound). Enrollments do not wait for each other: the use
// is counted just before the commit in one of the token's slots (see
// counts.tokenUses), an increment in the database, never a value read
// before, so that parallel enrollments on any replica are each counted.
func (tx *Tx) useEnrollToken(ctx context.Context, en Enrollment, now time.Time) error {
	q := `SELECT id FROM enroll_tokens WHERE id = ? AND org_id = ? AND revoked = FALSE AND (expires_at IS NULL OR expires_at > ?)`
	if tx.s.engine == Postgres {
		q += ` FOR SHARE`
	}
	var id string
	err := tx.queryRow(ctx, q, en.TokenID, en.OrgID, millis(now)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: enroll token: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: enroll token: %w", err)
	}
	tx.countTokenUse(id)
	return nil
}

// EnrollTokenActor names an enrollment token as the actor of the Audit
// Trail entries of the enrollments made with it.
func EnrollTokenActor(tokenID string) string { return "enroll_token:" + tokenID }

// RevokeEnrollToken revokes an enrollment token.
func (s *Store) RevokeEnrollToken(ctx context.Context, e *AuditEntry, orgID, id string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE enroll_tokens SET revoked = TRUE WHERE org_id = ? AND id = ?`, orgID, id)
		if err != nil {
			return fmt.Errorf("store: revoke enroll token: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: enroll token: %w", dberr.ErrNotFound)
		}
		return nil
	})
}

// ListEnrollTokens lists the organization's enrollment tokens.
func (s *Store) ListEnrollTokens(ctx context.Context, orgID string) ([]EnrollToken, error) {
	rows, err := s.query(ctx, `SELECT t.id, t.org_id, t.expires_at, t.revoked,
		t.uses + COALESCE((SELECT SUM(u.uses) FROM enroll_token_uses u WHERE u.token_id = t.id), 0), t.created_at
		FROM enroll_tokens t WHERE t.org_id = ? ORDER BY t.created_at`, orgID)
	var out []EnrollToken
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var t EnrollToken
		var exp sql.NullInt64
		var created int64
		if err := r.Scan(&t.ID, &t.OrgID, &exp, &t.Revoked, &t.Uses, &created); err != nil {
			return err
		}
		t.ExpiresAt, t.CreatedAt = nullTime(exp), fromMillis(created)
		out = append(out, t)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: list enroll tokens: %w", err)
	}
	return out, nil
}
