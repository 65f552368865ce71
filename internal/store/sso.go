package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"time"
)

// OpenID Connect sign-in: each organization's provider (sso_configs), the
// sign-ins under way (sso_logins, single use) and the provider accounts
// linked to console users (sso_identities). The client secret never leaves
// the store except through SSOConfig.ClientSecret, for the token exchange.

// SSORoleMapping gives the users whose role claim holds Value the role
// RoleID (RoleName when read).
type SSORoleMapping struct {
	Value    string `json:"value"`
	RoleID   string `json:"roleId"`
	RoleName string `json:"role,omitempty"`
}

// SSOConfig is an organization's OpenID provider.
type SSOConfig struct {
	OrgID          string           `json:"orgId"`
	ProviderName   string           `json:"providerName"`
	Issuer         string           `json:"issuer"`
	ClientID       string           `json:"clientId"`
	AllowedDomains []string         `json:"allowedDomains"`
	Scopes         []string         `json:"scopes"`
	RoleClaim      string           `json:"roleClaim"`
	RoleMap        []SSORoleMapping `json:"roleMap"`
	// DefaultRoleID is the role of a user no mapping matches ("": such a
	// user may not sign in).
	DefaultRoleID   string `json:"defaultRoleId,omitempty"`
	DefaultRoleName string `json:"defaultRole,omitempty"`
	JustInTime      bool   `json:"justInTime"`
	// ProviderVerifiesEmail: the provider verifies every address it
	// gives, so an ID token without email_verified counts as verified.
	ProviderVerifiesEmail bool      `json:"providerVerifiesEmail"`
	Enabled               bool      `json:"enabled"`
	HasClientSecret       bool      `json:"hasClientSecret"`
	UpdatedBy             string    `json:"updatedBy"`
	UpdatedAt             time.Time `json:"updatedAt"`
	secret                string
}

// ClientSecret is the secret patchd presents to the provider's token
// endpoint; nothing else may read it.
func (c SSOConfig) ClientSecret() string { return c.secret }

const ssoConfigColumns = `c.org_id, c.provider_name, c.issuer, c.client_id, c.client_secret, c.allowed_domains, c.scopes, c.role_claim,
	c.role_map, COALESCE(c.default_role_id, ''), COALESCE(dr.name, ''), c.just_in_time, c.enabled, c.updated_by, c.updated_at,
	c.provider_verifies_email`

const ssoConfigFrom = ` FROM sso_configs c LEFT JOIN roles dr ON dr.id = c.default_role_id`

func scanSSOConfig(row interface{ Scan(...any) error }) (SSOConfig, error) {
	var c SSOConfig
	var domains, scopes, roleMap string
	var updated int64
	if err := row.Scan(&c.OrgID, &c.ProviderName, &c.Issuer, &c.ClientID, &c.secret, &domains, &scopes, &c.RoleClaim,
		&roleMap, &c.DefaultRoleID, &c.DefaultRoleName, &c.JustInTime, &c.Enabled, &c.UpdatedBy, &updated,
		&c.ProviderVerifiesEmail); err != nil {
		return c, err
	}
	for _, f := range []struct {
		text string
		into any
	}{{domains, &c.AllowedDomains}, {scopes, &c.Scopes}, {roleMap, &c.RoleMap}} {
		if err := json.Unmarshal([]byte(f.text), f.into); err != nil {
			return c, fmt.Errorf("stored SSO configuration: %w", err)
		}
	}
	c.HasClientSecret = c.secret != ""
	c.UpdatedAt = fromMillis(updated)
	return c, nil
}

// fillRoleNames names the mapped roles (a mapping whose role is gone keeps
// an empty name, and sign-in refuses it).
func (s *Store) fillRoleNames(ctx context.Context, c *SSOConfig) error {
	for i, m := range c.RoleMap {
		err := s.queryRow(ctx, `SELECT name FROM roles WHERE org_id = ? AND id = ?`, c.OrgID, m.RoleID).Scan(&c.RoleMap[i].RoleName)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: SSO role mapping: %w", err)
		}
	}
	return nil
}

// GetSSOConfig answers the organization's provider, or dberr.ErrNotFound.
func (s *Store) GetSSOConfig(ctx context.Context, orgID string) (SSOConfig, error) {
	c, err := scanSSOConfig(s.queryRow(ctx, `SELECT `+ssoConfigColumns+ssoConfigFrom+` WHERE c.org_id = ?`, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return SSOConfig{}, fmt.Errorf("store: the organization has no single sign-on: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return SSOConfig{}, fmt.Errorf("store: read SSO configuration: %w", err)
	}
	if c.secret, err = s.open(secretSSOClient, c.OrgID, c.secret); err != nil {
		return SSOConfig{}, err
	}
	return c, s.fillRoleNames(ctx, &c)
}

// ListSSOConfigs lists the enabled providers of every organization (the
// sign-in page matches an e-mail domain against them). Their client
// secrets are not read: GetSSOConfig answers a provider with its secret.
func (s *Store) ListSSOConfigs(ctx context.Context) ([]SSOConfig, error) {
	rows, err := s.query(ctx, `SELECT `+ssoConfigColumns+ssoConfigFrom+` WHERE c.enabled = TRUE ORDER BY c.org_id`)
	var out []SSOConfig
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		c, err := scanSSOConfig(r)
		c.secret = ""
		out = append(out, c)
		return err
	}); err != nil {
		return nil, fmt.Errorf("store: list SSO configurations: %w", err)
	}
	return out, nil
}

// ErrSSOSecretRequired refuses a new provider without a client secret.
var ErrSSOSecretRequired = errors.New("the client secret is required")

// SetSSOConfig creates or replaces the organization's provider and records
// e. secret nil keeps the stored client secret (a new configuration needs
// one).
func (s *Store) SetSSOConfig(ctx context.Context, e *AuditEntry, c SSOConfig, secret *string) (SSOConfig, error) {
	enc := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	if c.AllowedDomains == nil {
		c.AllowedDomains = []string{}
	}
	if c.Scopes == nil {
		c.Scopes = []string{}
	}
	if c.RoleMap == nil {
		c.RoleMap = []SSORoleMapping{}
	}
	stored := make([]SSORoleMapping, len(c.RoleMap))
	for i, m := range c.RoleMap {
		stored[i] = SSORoleMapping{Value: m.Value, RoleID: m.RoleID}
	}
	var defaultRole any
	if c.DefaultRoleID != "" {
		defaultRole = c.DefaultRoleID
	}
	now := time.Now().UTC()
	err := s.Audited(ctx, e, func(tx *Tx) error {
		var current string
		err := tx.queryRow(ctx, `SELECT client_secret FROM sso_configs WHERE org_id = ?`, c.OrgID).Scan(&current)
		exists := err == nil
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: read SSO configuration: %w", err)
		}
		if secret != nil {
			if current, err = tx.s.seal(secretSSOClient, c.OrgID, *secret); err != nil {
				return fmt.Errorf("store: save SSO configuration: %w", err)
			}
		}
		if current == "" {
			return fmt.Errorf("store: %w", ErrSSOSecretRequired)
		}
		args := []any{c.ProviderName, c.Issuer, c.ClientID, current, enc(c.AllowedDomains), enc(c.Scopes), c.RoleClaim, enc(stored),
			defaultRole, c.JustInTime, c.Enabled, e.Actor, millis(now), c.ProviderVerifiesEmail, c.OrgID}
		if exists {
			_, err = tx.exec(ctx, `UPDATE sso_configs SET provider_name = ?, issuer = ?, client_id = ?, client_secret = ?, allowed_domains = ?,
				scopes = ?, role_claim = ?, role_map = ?, default_role_id = ?, just_in_time = ?, enabled = ?, updated_by = ?, updated_at = ?,
				provider_verifies_email = ? WHERE org_id = ?`, args...)
		} else {
			_, err = tx.exec(ctx, `INSERT INTO sso_configs (provider_name, issuer, client_id, client_secret, allowed_domains, scopes, role_claim,
				role_map, default_role_id, just_in_time, enabled, updated_by, updated_at, provider_verifies_email, org_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
		}
		if err != nil {
			return fmt.Errorf("store: save SSO configuration: %w", err)
		}
		e.TargetType, e.TargetID = "sso_config", c.OrgID
		return nil
	})
	if err != nil {
		return SSOConfig{}, err
	}
	return s.GetSSOConfig(ctx, c.OrgID)
}

// DeleteSSOConfig removes the organization's provider (and its sign-ins
// under way) and records e; dberr.ErrNotFound when it had none. The links of
// provider accounts to users stay, for a provider configured again.
func (s *Store) DeleteSSOConfig(ctx context.Context, e *AuditEntry, orgID string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM sso_configs WHERE org_id = ?`, orgID)
		if err != nil {
			return fmt.Errorf("store: delete SSO configuration: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: the organization has no single sign-on: %w", dberr.ErrNotFound)
		}
		if _, err := tx.exec(ctx, `DELETE FROM sso_logins WHERE org_id = ?`, orgID); err != nil {
			return fmt.Errorf("store: delete SSO sign-ins: %w", err)
		}
		e.TargetType, e.TargetID = "sso_config", orgID
		return nil
	})
}

// SSOLogin is a sign-in under way.
type SSOLogin struct {
	StateHash    string
	BindingHash  string
	OrgID        string
	Nonce        string
	PKCEVerifier string
	Next         string
	ExpiresAt    time.Time
	// ThrottleKey and ThrottleStart name the starting address's
	// reservation of an attempt, given back when the sign-in succeeds.
	ThrottleKey   string
	ThrottleStart time.Time
	// LinkUserID is the signed-in user that started the sign-in to link
	// the provider account to itself ("": a sign-in).
	LinkUserID string
}

// CreateSSOLogin stores a sign-in under way, and drops the expired ones.
func (s *Store) CreateSSOLogin(ctx context.Context, l SSOLogin, now time.Time) error {
	verifier, err := s.seal(secretPKCE, l.StateHash, l.PKCEVerifier)
	if err != nil {
		return fmt.Errorf("store: create SSO sign-in: %w", err)
	}
	return s.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.exec(ctx, `DELETE FROM sso_logins WHERE expires_at < ?`, millis(now)); err != nil {
			return fmt.Errorf("store: drop expired SSO sign-ins: %w", err)
		}
		if _, err := tx.exec(ctx, `INSERT INTO sso_logins (state_hash, binding_hash, org_id, nonce, pkce_verifier, next_path, expires_at,
			throttle_key, throttle_start, link_user_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, l.StateHash, l.BindingHash, l.OrgID, l.Nonce, verifier, l.Next,
			millis(l.ExpiresAt), l.ThrottleKey, millis(l.ThrottleStart), l.LinkUserID); err != nil {
			return fmt.Errorf("store: create SSO sign-in: %w", err)
		}
		return nil
	})
}

// TakeSSOLogin deletes and answers the sign-in under way with the state's
// hash: of two callbacks with one state (a replay, on any replica), one
// gets it and the other dberr.ErrNotFound. Expiry is the caller's to check.
func (s *Store) TakeSSOLogin(ctx context.Context, stateHash string) (SSOLogin, error) {
	l := SSOLogin{StateHash: stateHash}
	var expires, throttleStart int64
	err := s.InTx(ctx, func(tx *Tx) error {
		return tx.queryRow(ctx, `DELETE FROM sso_logins WHERE state_hash = ?
			RETURNING binding_hash, org_id, nonce, pkce_verifier, next_path, expires_at, throttle_key, throttle_start, link_user_id`, stateHash).
			Scan(&l.BindingHash, &l.OrgID, &l.Nonce, &l.PKCEVerifier, &l.Next, &expires, &l.ThrottleKey, &throttleStart, &l.LinkUserID)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return SSOLogin{}, fmt.Errorf("store: SSO sign-in: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return SSOLogin{}, fmt.Errorf("store: take SSO sign-in: %w", err)
	}
	if l.PKCEVerifier, err = s.open(secretPKCE, stateHash, l.PKCEVerifier); err != nil {
		return SSOLogin{}, err
	}
	l.ExpiresAt, l.ThrottleStart = fromMillis(expires), fromMillis(throttleStart)
	return l, nil
}

// SSOIdentity is a provider account as a sign-in presents it.
type SSOIdentity struct {
	OrgID, Issuer, Subject string
	Email                  string // lower case, checked against the allowed domains
}

// SSOUserByIdentity answers the console user linked to the provider
// account, or dberr.ErrNotFound.
func (s *Store) SSOUserByIdentity(ctx context.Context, id SSOIdentity) (ConsoleUser, error) {
	u, err := scanConsoleUser(s.queryRow(ctx, `SELECT `+consoleUserColumns+` FROM sso_identities i JOIN users u ON u.id = i.user_id
		JOIN memberships m ON m.user_id = u.id AND m.org_id = i.org_id JOIN roles r ON r.id = m.role_id AND r.org_id = m.org_id WHERE i.org_id = ? AND i.issuer = ? AND i.subject = ?`, id.OrgID, id.Issuer, id.Subject))
	if errors.Is(err, sql.ErrNoRows) {
		return ConsoleUser{}, fmt.Errorf("store: SSO identity: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return ConsoleUser{}, fmt.Errorf("store: read SSO identity: %w", err)
	}
	return u, nil
}

// ErrSSOLinkedElsewhere refuses to link a provider account to a user that
// another account of the same provider signs in as already.
var ErrSSOLinkedElsewhere = errors.New("the user is linked to another account of the provider")

// LinkSSOUser links the provider account to an existing user of the
// organization and records e: the user userID, or, when userID is "", the
// user with the identity's e-mail address (dberr.ErrNotFound when there is none).
// Inside the transaction, with the user's row read afresh, decide is asked
// whether the link may be made (linkedElsewhere: another account of the
// same provider is linked to the user); its error refuses the link and is
// answered as it is.
func (s *Store) LinkSSOUser(ctx context.Context, e *AuditEntry, id SSOIdentity, userID string, now time.Time,
	decide func(u ConsoleUser, linkedElsewhere bool) error) (ConsoleUser, error) {
	var u ConsoleUser
	err := s.Audited(ctx, e, func(tx *Tx) error {
		var err error
		lock := "" // SQLite runs one writer at a time
		if tx.s.engine == Postgres {
			lock = " FOR UPDATE OF u"
		}
		if userID != "" {
			u, err = scanConsoleUser(tx.queryRow(ctx, `SELECT `+consoleUserColumns+` FROM`+consoleUserFrom+`
				WHERE m.org_id = ? AND u.id = ?`+lock, id.OrgID, userID))
		} else {
			u, err = scanConsoleUser(tx.queryRow(ctx, `SELECT `+consoleUserColumns+` FROM`+consoleUserFrom+`
				WHERE m.org_id = ? AND u.email = ?`+lock, id.OrgID, id.Email))
		}
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user %q: %w", id.Email, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		var other int
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM sso_identities WHERE user_id = ? AND issuer = ?`, u.ID, id.Issuer).Scan(&other); err != nil {
			return fmt.Errorf("store: read SSO identities: %w", err)
		}
		if err := decide(u, other > 0); err != nil {
			return err
		}
		e.TargetType, e.TargetID = "user", u.ID
		return tx.insertSSOIdentity(ctx, id, u.ID, now)
	})
	return u, err
}

// SSOLinked tells whether the user is linked to an account of the
// provider with the issuer.
func (s *Store) SSOLinked(ctx context.Context, userID, issuer string) (bool, error) {
	var n int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM sso_identities WHERE user_id = ? AND issuer = ?`, userID, issuer).Scan(&n); err != nil {
		return false, fmt.Errorf("store: read SSO identities: %w", err)
	}
	return n > 0, nil
}

func (tx *Tx) insertSSOIdentity(ctx context.Context, id SSOIdentity, userID string, now time.Time) error {
	_, err := tx.exec(ctx, `INSERT INTO sso_identities (org_id, issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?, ?)`,
		id.OrgID, id.Issuer, id.Subject, userID, millis(now))
	if isUniqueViolation(err) {
		return fmt.Errorf("store: the provider account is linked already: %w", dberr.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: link SSO identity: %w", err)
	}
	return nil
}

// CreateSSOUser creates a console user for a provider account (just-in-time
// creation), linked to it, with role roleID and no password: it signs in
// through the provider only. It is never an instance operator. e records
// the creation; dberr.ErrConflict when the organization has a user with the
// address already.
func (s *Store) CreateSSOUser(ctx context.Context, e *AuditEntry, id SSOIdentity, roleID string, now time.Time) (ConsoleUser, error) {
	u := User{ID: NewID(), OrgID: id.OrgID, Email: id.Email, RoleID: roleID, CreatedAt: now.UTC()}
	e.TargetType, e.TargetID = "user", u.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.insertUser(ctx, u); err != nil {
			return err
		}
		return tx.insertSSOIdentity(ctx, id, u.ID, now)
	})
	if err != nil {
		return ConsoleUser{}, err
	}
	return s.consoleUser(ctx, u.ID, u.OrgID)
}

// SetSSOUserRole gives a user the role of its membership of the role's
// organization its provider's claims map to, and records e; it changes
// nothing (and records nothing) when the user has it.
func (s *Store) SetSSOUserRole(ctx context.Context, e *AuditEntry, userID, roleID string) (ConsoleUser, error) {
	var orgID string
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.queryRow(ctx, `SELECT org_id FROM roles WHERE id = ?`, roleID).Scan(&orgID); err != nil {
			return fmt.Errorf("store: read role: %w", err)
		}
		// Role mapping never changes an instance operator's account.
		res, err := tx.exec(ctx, `UPDATE memberships SET role_id = ? WHERE user_id = ? AND org_id = ? AND role_id <> ?
			AND user_id IN (SELECT id FROM users WHERE instance_operator = FALSE)`, roleID, userID, orgID, roleID)
		if err != nil {
			return fmt.Errorf("store: set user role: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		if err := tx.syncAccountRole(ctx, userID); err != nil {
			return err
		}
		e.TargetType, e.TargetID = "user", userID
		return tx.insertAudit(ctx, e)
	})
	if err != nil {
		return ConsoleUser{}, err
	}
	return s.consoleUser(ctx, userID, orgID)
}

// consoleUser reads a person as a member of the organization orgID, or
// ("") of the one a sign-in opens.
func (s *Store) consoleUser(ctx context.Context, id, orgID string) (ConsoleUser, error) {
	q, args := `SELECT `+consoleUserColumns+` FROM`+consoleUserFrom+`WHERE u.id = ? AND m.org_id = `+entryOrg, []any{id}
	if orgID != "" {
		q, args = `SELECT `+consoleUserColumns+` FROM`+consoleUserFrom+`WHERE u.id = ? AND m.org_id = ?`, []any{id, orgID}
	}
	u, err := scanConsoleUser(s.queryRow(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return ConsoleUser{}, fmt.Errorf("store: user: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return ConsoleUser{}, fmt.Errorf("store: read user: %w", err)
	}
	return u, nil
}
