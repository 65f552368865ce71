package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"strings"
	"time"
)

// Passkey is a WebAuthn credential a user registered as a second factor.
// The store keeps what checking its assertions needs; the console does the
// WebAuthn ceremonies.
type Passkey struct {
	ID     string
	OrgID  string
	UserID string
	// CredentialID and PublicKey are the authenticator's credential id
	// and COSE public key.
	CredentialID []byte
	PublicKey    []byte
	// SignCount is the signature counter of the last assertion (0: the
	// authenticator keeps none).
	SignCount uint32
	// Flags is the authenticator data flags byte of the last ceremony.
	Flags             byte
	AAGUID            string
	Transports        []string
	AttestationType   string
	AttestationFormat string
	Name              string
	CreatedAt         time.Time
	// LastUsedAt is zero until the passkey signs in.
	LastUsedAt time.Time
}

// MaxPasskeys bounds the passkeys one user may register.
const MaxPasskeys = 20

var b64 = base64.RawURLEncoding

const passkeyColumns = `id, org_id, user_id, credential_id, public_key, sign_count, flags, aaguid, transports, attestation_type,
	attestation_format, name, created_at, last_used_at`

func scanPasskey(row interface{ Scan(...any) error }) (Passkey, error) {
	var p Passkey
	var credID, key, transports string
	var count int64
	var flags int
	var created, used int64
	if err := row.Scan(&p.ID, &p.OrgID, &p.UserID, &credID, &key, &count, &flags, &p.AAGUID, &transports, &p.AttestationType,
		&p.AttestationFormat, &p.Name, &created, &used); err != nil {
		return p, err
	}
	var err error
	if p.CredentialID, err = b64.DecodeString(credID); err != nil {
		return p, fmt.Errorf("credential id: %w", err)
	}
	if p.PublicKey, err = b64.DecodeString(key); err != nil {
		return p, fmt.Errorf("public key: %w", err)
	}
	p.SignCount, p.Flags = uint32(count), byte(flags)
	if transports != "" {
		p.Transports = strings.Split(transports, ",")
	}
	p.CreatedAt = fromMillis(created)
	if used != 0 {
		p.LastUsedAt = fromMillis(used)
	}
	return p, nil
}

// AddPasskey stores a passkey of the user and records e. A user has at
// most MaxPasskeys (more: dberr.ErrConflict), and a credential id belongs to one
// user (a second registration of it: dberr.ErrConflict).
func (s *Store) AddPasskey(ctx context.Context, e *AuditEntry, p Passkey) (Passkey, error) {
	p.ID = NewID()
	p.CreatedAt = time.Now().UTC().Truncate(time.Millisecond)
	p.LastUsedAt = time.Time{}
	if e.Summary == nil {
		e.Summary = map[string]any{}
	}
	e.Summary["passkeyId"], e.Summary["name"] = p.ID, p.Name
	err := s.Audited(ctx, e, func(tx *Tx) error {
		var n int
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM user_passkeys WHERE user_id = ?`, p.UserID).Scan(&n); err != nil {
			return fmt.Errorf("store: count passkeys: %w", err)
		}
		if n >= MaxPasskeys {
			return fmt.Errorf("store: a user has at most %d passkeys: %w", MaxPasskeys, dberr.ErrConflict)
		}
		var owner string
		err := tx.queryRow(ctx, `SELECT id FROM users WHERE id = ?`+memberOf, p.UserID, p.OrgID).Scan(&owner)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		_, err = tx.exec(ctx, `INSERT INTO user_passkeys (`+passkeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)`,
			p.ID, p.OrgID, p.UserID, b64.EncodeToString(p.CredentialID), b64.EncodeToString(p.PublicKey), int64(p.SignCount), int(p.Flags),
			p.AAGUID, strings.Join(p.Transports, ","), p.AttestationType, p.AttestationFormat, p.Name, millis(p.CreatedAt))
		if isUniqueViolation(err) {
			return fmt.Errorf("store: passkey registered already: %w", dberr.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("store: add passkey: %w", err)
		}
		return nil
	})
	if err != nil {
		return Passkey{}, err
	}
	return p, nil
}

// ListPasskeys lists the user's passkeys, oldest first.
func (s *Store) ListPasskeys(ctx context.Context, orgID, userID string) ([]Passkey, error) {
	rows, err := s.query(ctx, `SELECT `+passkeyColumns+` FROM user_passkeys WHERE user_id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?) AND user_id = ? ORDER BY created_at, id`, orgID, userID)
	out, err := scanRows(rows, err, scanPasskey)
	if err != nil {
		return nil, fmt.Errorf("store: list passkeys: %w", err)
	}
	return out, nil
}

// GetPasskey answers one passkey of the user (dberr.ErrNotFound when the user
// has no such passkey).
func (s *Store) GetPasskey(ctx context.Context, orgID, userID, id string) (Passkey, error) {
	p, err := scanPasskey(s.queryRow(ctx, `SELECT `+passkeyColumns+` FROM user_passkeys WHERE user_id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?) AND user_id = ? AND id = ?`, orgID, userID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, fmt.Errorf("store: passkey: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return p, fmt.Errorf("store: read passkey: %w", err)
	}
	return p, nil
}

// RenamePasskey gives one of the user's passkeys another name and records
// e (dberr.ErrNotFound when the user has no such passkey).
func (s *Store) RenamePasskey(ctx context.Context, e *AuditEntry, orgID, userID, id, name string) error {
	if e.Summary == nil {
		e.Summary = map[string]any{}
	}
	e.Summary["passkeyId"], e.Summary["name"] = id, name
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE user_passkeys SET name = ? WHERE user_id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?) AND user_id = ? AND id = ?`, name, orgID, userID, id)
		if err != nil {
			return fmt.Errorf("store: rename passkey: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: passkey: %w", dberr.ErrNotFound)
		}
		return nil
	})
}

// RemovePasskey removes one of the user's passkeys and records e (with
// the passkey's name; dberr.ErrNotFound when the user has no such passkey).
func (s *Store) RemovePasskey(ctx context.Context, e *AuditEntry, orgID, userID, id string) error {
	if e.Summary == nil {
		e.Summary = map[string]any{}
	}
	e.Summary["passkeyId"] = id
	return s.Audited(ctx, e, func(tx *Tx) error {
		var name string
		err := tx.queryRow(ctx, `SELECT name FROM user_passkeys WHERE user_id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?) AND user_id = ? AND id = ?`, orgID, userID, id).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: passkey: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read passkey: %w", err)
		}
		e.Summary["name"] = name
		if _, err := tx.exec(ctx, `DELETE FROM user_passkeys WHERE id = ?`, id); err != nil {
			return fmt.Errorf("store: remove passkey: %w", err)
		}
		return nil
	})
}

// UsePasskey records a sign-in with a passkey: its new signature counter
// and flags, and when. It is atomic against a replayed or cloned
// authenticator: a counter that does not grow past the stored one (when
// either is non-zero) answers false and changes nothing.
func (s *Store) UsePasskey(ctx context.Context, id string, signCount uint32, flags byte, at time.Time) (bool, error) {
	res, err := s.exec(ctx, `UPDATE user_passkeys SET sign_count = ?, flags = ?, last_used_at = ?
		WHERE id = ? AND (sign_count < ? OR (sign_count = 0 AND ? = 0))`,
		int64(signCount), int(flags), millis(at), id, int64(signCount), int64(signCount))
	if err != nil {
		return false, fmt.Errorf("store: use passkey: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// SetPendingWebAuthn keeps the WebAuthn ceremony under way on a session
// (its challenge and expectations, as the console encodes them).
func (s *Store) SetPendingWebAuthn(ctx context.Context, idHash, data string) error {
	if _, err := s.exec(ctx, `UPDATE console_sessions SET pending_webauthn = ? WHERE id_hash = ?`, data, idHash); err != nil {
		return fmt.Errorf("store: pending WebAuthn ceremony: %w", err)
	}
	return nil
}

// TakePendingWebAuthn answers the session's WebAuthn ceremony under way
// and empties it, atomically, so that its challenge is answered once ("":
// none, or another request took it).
func (s *Store) TakePendingWebAuthn(ctx context.Context, idHash string) (string, error) {
	var data string
	err := s.InTx(ctx, func(tx *Tx) error {
		q := `SELECT pending_webauthn FROM console_sessions WHERE id_hash = ?`
		if tx.s.engine == Postgres {
			q += ` FOR UPDATE`
		}
		err := tx.queryRow(ctx, q, idHash).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: read WebAuthn ceremony: %w", err)
		}
		if data == "" {
			return nil
		}
		if _, err := tx.exec(ctx, `UPDATE console_sessions SET pending_webauthn = '' WHERE id_hash = ?`, idHash); err != nil {
			return fmt.Errorf("store: take WebAuthn ceremony: %w", err)
		}
		return nil
	})
	return data, err
}

// ResetSecondFactor removes every second factor of a user (its TOTP
// secret, recovery codes and passkeys: an administrator's reset after a
// lost phone or key) and records e, with how many passkeys went.
func (s *Store) ResetSecondFactor(ctx context.Context, e *AuditEntry, orgID, userID string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.onlyMember(ctx, e, orgID, userID); err != nil {
			return err
		}
		res, err := tx.exec(ctx, `UPDATE users SET totp_secret = '', totp_last_step = 0 WHERE id = ?`+memberOf, userID, orgID)
		if err != nil {
			return fmt.Errorf("store: reset second factor: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err := tx.replaceRecoveryCodes(ctx, userID, nil); err != nil {
			return err
		}
		res, err = tx.exec(ctx, `DELETE FROM user_passkeys WHERE user_id = ?`, userID)
		if err != nil {
			return fmt.Errorf("store: remove passkeys: %w", err)
		}
		n, _ := res.RowsAffected()
		if e.Summary == nil {
			e.Summary = map[string]any{}
		}
		e.Summary["passkeysRemoved"] = n
		return nil
	})
}

// PasskeyUser answers the console user who owns the passkey with the
// credential id (dberr.ErrNotFound when nobody does).
func (s *Store) PasskeyUser(ctx context.Context, credentialID []byte) (ConsoleUser, Passkey, error) {
	p, err := scanPasskey(s.queryRow(ctx, `SELECT `+passkeyColumns+` FROM user_passkeys WHERE credential_id = ?`, b64.EncodeToString(credentialID)))
	if errors.Is(err, sql.ErrNoRows) {
		return ConsoleUser{}, p, fmt.Errorf("store: passkey: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return ConsoleUser{}, p, fmt.Errorf("store: read passkey: %w", err)
	}
	u, err := s.consoleUser(ctx, p.UserID, "")
	return u, p, err
}

// PutPasskeyLogin keeps a passwordless sign-in under way for the browser
// bindingHash names (replacing its earlier one), until expires; expired
// ones of every browser go.
func (s *Store) PutPasskeyLogin(ctx context.Context, bindingHash, data string, expires, now time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM passkey_logins WHERE expires_at < ?`, millis(now)); err != nil {
			return fmt.Errorf("store: expire passkey sign-ins: %w", err)
		}
		if _, err := tx.exec(ctx, `INSERT INTO passkey_logins (binding_hash, data, expires_at) VALUES (?, ?, ?)
			ON CONFLICT (binding_hash) DO UPDATE SET data = excluded.data, expires_at = excluded.expires_at`, bindingHash, data, millis(expires)); err != nil {
			return fmt.Errorf("store: keep passkey sign-in: %w", err)
		}
		return nil
	})
}

// TakePasskeyLogin answers the browser's passwordless sign-in under way
// and deletes it, atomically ("": none, expired, or taken already).
func (s *Store) TakePasskeyLogin(ctx context.Context, bindingHash string, now time.Time) (string, error) {
	var data string
	err := s.InTx(ctx, func(tx *Tx) error {
		var expires int64
		err := tx.queryRow(ctx, `DELETE FROM passkey_logins WHERE binding_hash = ? RETURNING data, expires_at`, bindingHash).Scan(&data, &expires)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("store: take passkey sign-in: %w", err)
		}
		if expires < millis(now) {
			data = ""
		}
		return nil
	})
	return data, err
}
