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

// Credential is an API client (OAuth client-credentials) of an organization.
type Credential struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"orgId"`
	Name       string    `json:"name"`
	ClientID   string    `json:"client_id"`
	RoleID     string    `json:"roleId"`
	RoleName   string    `json:"role"`
	Disabled   bool      `json:"disabled"`
	CreatedAt  time.Time `json:"createdAt"`
	SecretHash string    `json:"-"`
	// Permissions of the credential's role.
	Permissions perm.Set `json:"-"`
}

// FirstStartActor is the creator of what the first start on an empty
// database makes (organization Default's bootstrap-admin credential and
// enrollment token). Nothing else creates with it, so the first-run page
// tells the first-start credential by it.
const FirstStartActor = "system:bootstrap"

// CreateCredential stores a new credential; the caller made the client id
// and hashed the secret.
func (s *Store) CreateCredential(ctx context.Context, e *AuditEntry, c Credential) (Credential, error) {
	c.ID = NewID()
	c.CreatedAt = time.Now().UTC()
	e.TargetID = c.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		_, err := tx.exec(ctx, `INSERT INTO credentials (id, org_id, name, client_id, secret_hash, role_id, disabled, created_at, created_by)
		VALUES (?, ?, ?, ?, ?, ?, FALSE, ?, ?)`,
			c.ID, c.OrgID, c.Name, c.ClientID, c.SecretHash, c.RoleID, millis(c.CreatedAt), e.Actor)
		if isUniqueViolation(err) {
			return fmt.Errorf("store: credential %q exists: %w", c.Name, dberr.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("store: create credential: %w", err)
		}
		return nil
	})
	if err != nil {
		return Credential{}, err
	}
	return c, nil
}

const credentialColumns = `c.id, c.org_id, c.name, c.client_id, c.role_id, r.name, c.disabled, c.created_at, c.secret_hash, r.permissions`

func scanCredential(row interface{ Scan(...any) error }) (Credential, error) {
	var c Credential
	var created int64
	var permText string
	if err := row.Scan(&c.ID, &c.OrgID, &c.Name, &c.ClientID, &c.RoleID, &c.RoleName, &c.Disabled, &created, &c.SecretHash, &permText); err != nil {
		return Credential{}, err
	}
	c.CreatedAt = fromMillis(created)
	p, err := perm.Parse(permText)
	if err != nil {
		return Credential{}, err
	}
	c.Permissions = p
	return c, nil
}

// CredentialByClientID finds a credential by its client id, in any
// organization (the token call does not name one).
func (s *Store) CredentialByClientID(ctx context.Context, clientID string) (Credential, error) {
	c, err := scanCredential(s.queryRow(ctx, `SELECT `+credentialColumns+` FROM credentials c JOIN roles r ON r.id = c.role_id
		WHERE c.client_id = ?`, clientID))
	if errors.Is(err, sql.ErrNoRows) {
		return Credential{}, fmt.Errorf("store: credential: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return Credential{}, fmt.Errorf("store: credential by client id: %w", err)
	}
	return c, nil
}

// FindCredential finds a credential of the organization by client id, id or name.
func (s *Store) FindCredential(ctx context.Context, orgID, ref string) (Credential, error) {
	c, err := scanCredential(s.queryRow(ctx, `SELECT `+credentialColumns+` FROM credentials c JOIN roles r ON r.id = c.role_id
		WHERE c.org_id = ? AND (c.client_id = ? OR c.id = ? OR c.name = ?) LIMIT 1`, orgID, ref, ref, ref))
	if errors.Is(err, sql.ErrNoRows) {
		return Credential{}, fmt.Errorf("store: credential %q: %w", ref, dberr.ErrNotFound)
	}
	if err != nil {
		return Credential{}, fmt.Errorf("store: find credential: %w", err)
	}
	return c, nil
}

// ListCredentials lists the organization's credentials.
func (s *Store) ListCredentials(ctx context.Context, orgID string) ([]Credential, error) {
	rows, err := s.query(ctx, `SELECT `+credentialColumns+` FROM credentials c JOIN roles r ON r.id = c.role_id
		WHERE c.org_id = ? ORDER BY c.created_at, c.id`, orgID)
	out, err := scanRows(rows, err, scanCredential)
	if err != nil {
		return nil, fmt.Errorf("store: list credentials: %w", err)
	}
	return out, nil
}

// SetCredentialDisabled disables or enables a credential. Disabling revokes
// its tokens: they are deleted and every replica is told to drop them.
func (s *Store) SetCredentialDisabled(ctx context.Context, e *AuditEntry, orgID, id string, disabled bool) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE credentials SET disabled = ? WHERE org_id = ? AND id = ?`, disabled, orgID, id)
		if err != nil {
			return fmt.Errorf("store: disable credential: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: credential: %w", dberr.ErrNotFound)
		}
		if disabled {
			return tx.revokeCredentialTokens(ctx, id)
		}
		return nil
	})
}

// DeleteCredential deletes a credential and revokes its tokens.
func (s *Store) DeleteCredential(ctx context.Context, e *AuditEntry, orgID, id string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.revokeCredentialTokens(ctx, id); err != nil {
			return err
		}
		res, err := tx.exec(ctx, `DELETE FROM credentials WHERE org_id = ? AND id = ?`, orgID, id)
		if err != nil {
			return fmt.Errorf("store: delete credential: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: credential: %w", dberr.ErrNotFound)
		}
		return nil
	})
}

func (tx *Tx) revokeCredentialTokens(ctx context.Context, credentialID string) error {
	if _, err := tx.exec(ctx, `DELETE FROM access_tokens WHERE credential_id = ?`, credentialID); err != nil {
		return fmt.Errorf("store: revoke tokens: %w", err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO auth_changes (credential_id, at) VALUES (?, ?)`, credentialID, millis(time.Now())); err != nil {
		return fmt.Errorf("store: record auth change: %w", err)
	}
	return nil
}
