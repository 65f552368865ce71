package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"time"
)

// RecordAudit writes an Audit Trail entry on its own (a sign-in, a failed
// sign-in, a sign-out: events that change no other row).
func (s *Store) RecordAudit(ctx context.Context, e *AuditEntry) error {
	return s.InTx(ctx, func(tx *Tx) error { return tx.insertAudit(ctx, e) })
}

// SessionInfo is one of a user's console sessions, as the user sees it.
type SessionInfo struct {
	// IDHash is the SHA-256 of the session's cookie: it names the session
	// without opening it.
	IDHash     string
	CreatedAt  time.Time
	LastSeenAt time.Time
	IP         string
	UserAgent  string
	Stage      string
}

// ListUserSessions lists the person's sessions (in every organization it
// belongs to), the most recently used first.
func (s *Store) ListUserSessions(ctx context.Context, orgID, userID string) ([]SessionInfo, error) {
	rows, err := s.query(ctx, `SELECT id_hash, created_at, last_seen_at, ip, user_agent, stage FROM console_sessions
		WHERE user_id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?) AND user_id = ? ORDER BY last_seen_at DESC, id_hash`, orgID, userID)
	var out []SessionInfo
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var si SessionInfo
		var created, seen int64
		if err := r.Scan(&si.IDHash, &created, &seen, &si.IP, &si.UserAgent, &si.Stage); err != nil {
			return err
		}
		si.CreatedAt, si.LastSeenAt = fromMillis(created), fromMillis(seen)
		out = append(out, si)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: list sessions: %w", err)
	}
	return out, nil
}

// EndUserSessions ends sessions of a user and records e: the one named by
// idHash, or (idHash "") all of them but keep (keep "": all). It answers
// how many ended; naming a session of another user answers dberr.ErrNotFound.
func (s *Store) EndUserSessions(ctx context.Context, e *AuditEntry, orgID, userID, idHash, keep string) (int, error) {
	var n int64
	err := s.Audited(ctx, e, func(tx *Tx) error {
		q, args := `DELETE FROM console_sessions WHERE user_id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?) AND user_id = ?`, []any{orgID, userID}
		if idHash != "" {
			q, args = q+` AND id_hash = ?`, append(args, idHash)
		} else if keep != "" {
			q, args = q+` AND id_hash <> ?`, append(args, keep)
		}
		res, err := tx.exec(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("store: end sessions: %w", err)
		}
		n, _ = res.RowsAffected()
		if idHash != "" && n == 0 {
			return fmt.Errorf("store: session: %w", dberr.ErrNotFound)
		}
		if e.Summary == nil {
			e.Summary = map[string]any{}
		}
		e.Summary["sessions"] = n
		return nil
	})
	return int(n), err
}

// SetSessionStage moves a session to another stage (StageSignedIn once
// the second factor or the new password is in) and drops its pending TOTP
// secret when it leaves enrollment.
func (s *Store) SetSessionStage(ctx context.Context, idHash, stage string) error {
	if _, err := s.exec(ctx, `UPDATE console_sessions SET stage = ? WHERE id_hash = ?`, stage, idHash); err != nil {
		return fmt.Errorf("store: session stage: %w", err)
	}
	return nil
}

// SetPendingTOTP keeps a TOTP secret being enrolled on the session.
func (s *Store) SetPendingTOTP(ctx context.Context, idHash, secret string) error {
	sealed, err := s.seal(secretPendingTOTP, idHash, secret)
	if err != nil {
		return fmt.Errorf("store: pending TOTP secret: %w", err)
	}
	if _, err := s.exec(ctx, `UPDATE console_sessions SET pending_totp = ? WHERE id_hash = ?`, sealed, idHash); err != nil {
		return fmt.Errorf("store: pending TOTP secret: %w", err)
	}
	return nil
}

// UserTOTPSecret answers the user's confirmed TOTP secret ("" when none).
func (s *Store) UserTOTPSecret(ctx context.Context, userID string) (string, error) {
	var secret string
	err := s.queryRow(ctx, `SELECT totp_secret FROM users WHERE id = ?`, userID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("store: user: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("store: read TOTP secret: %w", err)
	}
	return s.open(secretTOTP, userID, secret)
}

// UseTOTPStep records that a code of time step step was accepted for the
// user, atomically: it answers false when a code of this or a later step
// was accepted already (a replay), so that each code signs in once.
func (s *Store) UseTOTPStep(ctx context.Context, userID string, step int64) (bool, error) {
	res, err := s.exec(ctx, `UPDATE users SET totp_last_step = ? WHERE id = ? AND totp_secret <> '' AND totp_last_step < ?`, step, userID, step)
	if err != nil {
		return false, fmt.Errorf("store: use TOTP code: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// UseRecoveryCode spends one of the user's recovery codes (by its hash):
// false when the user has no such unused code.
func (s *Store) UseRecoveryCode(ctx context.Context, e *AuditEntry, userID, codeHash string) (bool, error) {
	var used bool
	err := s.InTx(ctx, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM user_recovery_codes WHERE user_id = ? AND code_hash = ?`, userID, codeHash)
		if err != nil {
			return fmt.Errorf("store: use recovery code: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		used = true
		var left int
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM user_recovery_codes WHERE user_id = ?`, userID).Scan(&left); err != nil {
			return fmt.Errorf("store: count recovery codes: %w", err)
		}
		e.Summary = map[string]any{"recoveryCodesLeft": left}
		return tx.insertAudit(ctx, e)
	})
	return used, err
}

// CountRecoveryCodes counts the user's unused recovery codes.
func (s *Store) CountRecoveryCodes(ctx context.Context, userID string) (int, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM user_recovery_codes WHERE user_id = ?`, userID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count recovery codes: %w", err)
	}
	return n, nil
}

func (tx *Tx) replaceRecoveryCodes(ctx context.Context, userID string, hashes []string) error {
	if _, err := tx.exec(ctx, `DELETE FROM user_recovery_codes WHERE user_id = ?`, userID); err != nil {
		return fmt.Errorf("store: replace recovery codes: %w", err)
	}
	now := millis(time.Now())
	for _, h := range hashes {
		if _, err := tx.exec(ctx, `INSERT INTO user_recovery_codes (user_id, code_hash, created_at) VALUES (?, ?, ?)`, userID, h, now); err != nil {
			return fmt.Errorf("store: store recovery code: %w", err)
		}
	}
	return nil
}

// EnableTOTP confirms a user's TOTP secret: step is the time step of the
// code that confirmed it (not accepted again), hashes the new recovery
// codes (any older ones end). Pending secrets on the user's sessions are
// dropped.
func (s *Store) EnableTOTP(ctx context.Context, e *AuditEntry, orgID, userID, secret string, step int64, hashes []string) error {
	sealed, err := s.seal(secretTOTP, userID, secret)
	if err != nil {
		return fmt.Errorf("store: enable TOTP: %w", err)
	}
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE users SET totp_secret = ?, totp_last_step = ? WHERE id = ?`+memberOf, sealed, step, userID, orgID)
		if err != nil {
			return fmt.Errorf("store: enable TOTP: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if _, err := tx.exec(ctx, `UPDATE console_sessions SET pending_totp = '' WHERE user_id = ?`, userID); err != nil {
			return fmt.Errorf("store: enable TOTP: %w", err)
		}
		return tx.replaceRecoveryCodes(ctx, userID, hashes)
	})
}

// ReplaceRecoveryCodes gives a user with a second factor new recovery
// codes; the old ones end.
func (s *Store) ReplaceRecoveryCodes(ctx context.Context, e *AuditEntry, orgID, userID string, hashes []string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		var secret string
		err := tx.queryRow(ctx, `SELECT totp_secret FROM users WHERE id = ?`+memberOf, userID, orgID).Scan(&secret)
		if errors.Is(err, sql.ErrNoRows) || err == nil && secret == "" {
			return fmt.Errorf("store: user with a second factor: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		return tx.replaceRecoveryCodes(ctx, userID, hashes)
	})
}

// RemoveTOTP removes a user's second factor and its recovery codes (the
// user turned it off, or an administrator reset it).
func (s *Store) RemoveTOTP(ctx context.Context, e *AuditEntry, orgID, userID string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE users SET totp_secret = '', totp_last_step = 0 WHERE id = ?`+memberOf, userID, orgID)
		if err != nil {
			return fmt.Errorf("store: remove TOTP: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		return tx.replaceRecoveryCodes(ctx, userID, nil)
	})
}

// OrgRequiresMFA tells whether the organization requires a second factor
// of its password users.
func (s *Store) OrgRequiresMFA(ctx context.Context, orgID string) (bool, error) {
	var on bool
	err := s.queryRow(ctx, `SELECT require_mfa FROM orgs WHERE id = ?`, orgID).Scan(&on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("store: organization: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("store: read organization: %w", err)
	}
	return on, nil
}

// SetOrgRequireMFA sets the organization's "require a second factor".
func (s *Store) SetOrgRequireMFA(ctx context.Context, e *AuditEntry, orgID string, on bool) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `UPDATE orgs SET require_mfa = ? WHERE id = ?`, on, orgID); err != nil {
			return fmt.Errorf("store: set require second factor: %w", err)
		}
		return nil
	})
}

// SetUserRole gives a member of the organization another role of it; the
// person's sessions in the organization see it at once.
func (s *Store) SetUserRole(ctx context.Context, e *AuditEntry, orgID, userID, roleID string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE memberships SET role_id = ? WHERE org_id = ? AND user_id = ?
			AND EXISTS (SELECT 1 FROM roles WHERE roles.id = ? AND roles.org_id = ?)`, roleID, orgID, userID, roleID, orgID)
		if err != nil {
			return fmt.Errorf("store: set user role: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user or role: %w", dberr.ErrNotFound)
		}
		return tx.syncAccountRole(ctx, userID)
	})
}

// SetUserPassword stores a new password hash for a user (the person's
// own change). mustChange sends the user to choose another at the next
// sign-in; endSessions ends the user's sessions but keep ("": all).
func (s *Store) SetUserPassword(ctx context.Context, e *AuditEntry, orgID, userID, hash string, mustChange, endSessions bool, keep string) error {
	return s.Audited(ctx, e, func(tx *Tx) error { return tx.setUserPassword(ctx, orgID, userID, hash, mustChange, endSessions, keep) })
}

// ResetUserPassword is an administrator's SetUserPassword: it ends every
// session of the user, and refuses (ErrOtherOrgs) a person who belongs to
// other organizations too.
func (s *Store) ResetUserPassword(ctx context.Context, e *AuditEntry, orgID, userID, hash string, mustChange bool) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.onlyMember(ctx, e, orgID, userID); err != nil {
			return err
		}
		return tx.setUserPassword(ctx, orgID, userID, hash, mustChange, true, "")
	})
}

func (tx *Tx) setUserPassword(ctx context.Context, orgID, userID, hash string, mustChange, endSessions bool, keep string) error {
	{
		res, err := tx.exec(ctx, `UPDATE users SET password_hash = ?, must_change_password = ? WHERE id = ?`+memberOf, hash, mustChange, userID, orgID)
		if err != nil {
			return fmt.Errorf("store: set password: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		// A password set otherwise ends a pending invitation.
		if _, err := tx.exec(ctx, `DELETE FROM user_invitations WHERE user_id = ?`, userID); err != nil {
			return fmt.Errorf("store: end invitation: %w", err)
		}
		if endSessions {
			if _, err := tx.exec(ctx, `DELETE FROM console_sessions WHERE user_id = ? AND id_hash <> ?`, userID, keep); err != nil {
				return fmt.Errorf("store: end user sessions: %w", err)
			}
		}
		return nil
	}
}
