package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/dberr"
)

// User is a console user.
type User struct {
	ID       string `json:"id"`
	OrgID    string `json:"orgId"`
	Email    string `json:"email"`
	RoleID   string `json:"roleId"`
	Disabled bool   `json:"disabled"`
	// InstanceOperator says the user may change what every organization
	// shares (the vulnerability feeds) and read the instance's Audit
	// Trail, whatever its role in its own organization.
	InstanceOperator bool `json:"instanceOperator"`
	// OperatorSSO says an instance-level action let the instance operator
	// sign in through its organization's single sign-on (docs/sso.md).
	OperatorSSO bool `json:"-"`
	// CreateOrgs says the person may create organizations (an
	// instance-level permission whoever runs the server grants).
	CreateOrgs bool `json:"createOrgs"`
	// SecondFactor says the user has a second factor: a confirmed TOTP
	// app (TOTP) or at least one passkey (Passkeys counts them).
	SecondFactor bool `json:"secondFactor"`
	TOTP         bool `json:"-"`
	Passkeys     int  `json:"-"`
	// MustChangePassword sends the user to choose a new password at the
	// next sign-in.
	MustChangePassword bool `json:"mustChangePassword"`
	// InvitationExpiresAt is when the user's invitation ends (zero: it
	// has none pending): the user has no password until it sets one
	// through the invitation's link.
	InvitationExpiresAt time.Time `json:"-"`
	CreatedAt           time.Time `json:"createdAt"`
	PasswordHash        string    `json:"-"`
}

// ErrLastOperator refuses a change that would leave the instance without
// an enabled instance operator.
var ErrLastOperator = errors.New("the last enabled instance operator: grant another user first (patchd admin user operator grant)")

// CreateUser stores a console user with an already hashed password. A user
// created as an instance operator needs ie, the instance event of the grant,
// written in the same transaction.
func (s *Store) CreateUser(ctx context.Context, e *AuditEntry, ie *InstanceEvent, u User) (User, error) {
	if u.InstanceOperator && ie == nil {
		return User{}, errors.New("store: create user: an instance operator needs its instance event")
	}
	u.ID = NewID()
	u.CreatedAt = time.Now().UTC()
	e.TargetID = u.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		return tx.insertPerson(ctx, ie, u)
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// insertPerson stores u as insertUser does and, for an instance operator,
// ie, the instance event of the grant.
func (tx *Tx) insertPerson(ctx context.Context, ie *InstanceEvent, u User) error {
	if err := tx.insertUser(ctx, u); err != nil {
		return err
	}
	if u.InstanceOperator {
		ie.TargetType, ie.TargetID = "user", u.ID
		return tx.insertInstanceEvent(ctx, ie)
	}
	return nil
}

// insertUser stores a person with its membership of u.OrgID (role
// u.RoleID); an e-mail address a member of the organization has already
// answers dberr.ErrConflict.
func (tx *Tx) insertUser(ctx context.Context, u User) error {
	if err := tx.emailFree(ctx, u.OrgID, u.Email); err != nil {
		return err
	}
	_, err := tx.exec(ctx, `INSERT INTO users (id, org_id, email, password_hash, role_id, disabled, instance_operator, must_change_password, created_at)
		VALUES (?, ?, ?, ?, ?, FALSE, ?, ?, ?)`, u.ID, u.OrgID, u.Email, u.PasswordHash, u.RoleID, u.InstanceOperator, u.MustChangePassword, millis(u.CreatedAt))
	if isUniqueViolation(err) {
		return fmt.Errorf("store: user %q exists: %w", u.Email, dberr.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: create user: %w", err)
	}
	return tx.insertMembership(ctx, u.ID, u.OrgID, u.RoleID, u.CreatedAt)
}

// CreateInvitedUser stores a console user without a password and its
// invitation: tokenHash is the hash of the link's token, valid until
// expires. The user sets its password with AcceptInvitation.
func (s *Store) CreateInvitedUser(ctx context.Context, e *AuditEntry, u User, tokenHash string, expires time.Time) (User, error) {
	u.ID = NewID()
	u.CreatedAt = time.Now().UTC()
	u.PasswordHash, u.InstanceOperator, u.MustChangePassword = "", false, false
	u.InvitationExpiresAt = expires.UTC()
	e.TargetID = u.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.insertUser(ctx, u); err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `INSERT INTO user_invitations (user_id, org_id, token_hash, expires_at, created_at) VALUES (?, ?, ?, ?, ?)`,
			u.ID, u.OrgID, tokenHash, millis(expires), millis(u.CreatedAt)); err != nil {
			return fmt.Errorf("store: create invitation: %w", err)
		}
		return nil
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}

// InvitedUser finds the enabled user of an invitation valid at now by
// the hash of its token (dberr.ErrNotFound: no such invitation, used, expired
// or its user disabled).
func (s *Store) InvitedUser(ctx context.Context, tokenHash string, now time.Time) (ConsoleUser, error) {
	users, err := s.listConsoleUsers(ctx, "find invitation", `u.disabled = FALSE AND m.org_id = u.org_id AND u.id = (SELECT i.user_id FROM user_invitations i
		WHERE i.token_hash = ? AND i.expires_at > ?)`, tokenHash, millis(now))
	if err != nil {
		return ConsoleUser{}, err
	}
	if len(users) == 0 {
		return ConsoleUser{}, fmt.Errorf("store: invitation: %w", dberr.ErrNotFound)
	}
	return users[0], nil
}

// AcceptInvitation sets the password of the invitation's user and takes
// the invitation (a link works once); e, the Audit Trail entry, gets the
// user as its target. An invitation that is used, expired or whose user is
// disabled answers dberr.ErrNotFound and changes nothing.
func (s *Store) AcceptInvitation(ctx context.Context, e *AuditEntry, tokenHash, passwordHash string, now time.Time) (ConsoleUser, error) {
	var u ConsoleUser
	err := s.InTx(ctx, func(tx *Tx) error {
		userID, _, err := tx.takeInvitation(ctx, tokenHash, now)
		if err != nil {
			return err
		}
		if _, err := tx.exec(ctx, `UPDATE users SET password_hash = ?, must_change_password = FALSE WHERE id = ?`, passwordHash, userID); err != nil {
			return fmt.Errorf("store: set password: %w", err)
		}
		row := tx.queryRow(ctx, `SELECT `+consoleUserColumns+` FROM`+consoleUserFrom+`WHERE u.id = ? AND m.org_id = u.org_id`, userID)
		if u, err = scanConsoleUser(row); err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		e.OrgID, e.TargetType, e.TargetID = u.OrgID, "user", u.ID
		return tx.insertAudit(ctx, e)
	})
	return u, err
}

// takeInvitation deletes the invitation of tokenHash valid at now whose
// user is enabled, and answers its user and organization
// (dberr.ErrNotFound: none; of two transactions at once, one takes it).
func (tx *Tx) takeInvitation(ctx context.Context, tokenHash string, now time.Time) (userID, orgID string, err error) {
	err = tx.queryRow(ctx, `DELETE FROM user_invitations WHERE token_hash = ? AND expires_at > ?
		AND user_id IN (SELECT id FROM users WHERE disabled = FALSE) RETURNING user_id, org_id`, tokenHash, millis(now)).Scan(&userID, &orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", "", fmt.Errorf("store: invitation: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return "", "", fmt.Errorf("store: take invitation: %w", err)
	}
	return userID, orgID, nil
}

// lockOperators answers the enabled instance operators (id and
// organization); on PostgreSQL their rows stay locked until the
// transaction ends, so that two revocations at once cannot both pass the
// last-operator check (SQLite has one writer at a time).
func (tx *Tx) lockOperators(ctx context.Context) ([][2]string, error) {
	q := `SELECT id, org_id FROM users WHERE instance_operator = TRUE AND disabled = FALSE ORDER BY id`
	if tx.s.engine == Postgres {
		q += ` FOR UPDATE`
	}
	rows, err := tx.query(ctx, q)
	var out [][2]string
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var op [2]string
		err := r.Scan(&op[0], &op[1])
		out = append(out, op)
		return err
	}); err != nil {
		return nil, fmt.Errorf("store: read instance operators: %w", err)
	}
	return out, nil
}

// keepAnOperator refuses (ErrLastOperator) when the user userID of the
// organization orgID ("": any) is the only enabled instance operator:
// revoking, disabling or deleting it would leave nobody to manage the
// feeds from the console.
func (tx *Tx) keepAnOperator(ctx context.Context, orgID, userID string) error {
	ops, err := tx.lockOperators(ctx)
	if err != nil {
		return err
	}
	if len(ops) == 1 && ops[0][0] == userID && (orgID == "" || ops[0][1] == orgID) {
		return fmt.Errorf("store: %w", ErrLastOperator)
	}
	return nil
}

// SetInstanceOperator grants (on) or revokes the instance-operator
// attribute of a user and records ie in the instance's Audit Trail.
// Revoking the last enabled operator answers ErrLastOperator; a user that
// already has the asked state is left alone and answers changed=false
// (nothing is recorded).
func (s *Store) SetInstanceOperator(ctx context.Context, ie *InstanceEvent, userID string, on bool) (changed bool, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		if !on {
			if err := tx.keepAnOperator(ctx, "", userID); err != nil {
				return err
			}
		}
		var current bool
		err := tx.queryRow(ctx, `SELECT instance_operator FROM users WHERE id = ?`, userID).Scan(&current)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		if current == on {
			return nil
		}
		if _, err := tx.exec(ctx, `UPDATE users SET instance_operator = ?, operator_sso = FALSE WHERE id = ?`, on, userID); err != nil {
			return fmt.Errorf("store: set instance operator: %w", err)
		}
		changed = true
		ie.TargetType, ie.TargetID = "user", userID
		return tx.insertInstanceEvent(ctx, ie)
	})
	return changed, err
}

// ErrNotOperator refuses an operator-only change of a user that is not an
// instance operator.
var ErrNotOperator = errors.New("the user is not an instance operator")

// SetOperatorSSO lets (on) the instance operator userID sign in through its
// organization's single sign-on, or stops it, and records ie in the
// instance's Audit Trail; ErrNotOperator when the user is not an operator.
// A user that has the asked state already is left alone (changed=false,
// nothing recorded).
func (s *Store) SetOperatorSSO(ctx context.Context, ie *InstanceEvent, userID string, on bool) (changed bool, err error) {
	return s.setUserFlag(ctx, ie, userID, "operator_sso", "operator single sign-on", on, `instance_operator`)
}

// setUserFlag sets the boolean column of user userID to on and records ie
// in the instance's Audit Trail, in one transaction; a user whose column
// holds on already is left alone (changed=false, nothing recorded). A user
// for whom the boolean SQL expression required is false is ErrNotOperator
// ("TRUE": anyone).
func (s *Store) setUserFlag(ctx context.Context, ie *InstanceEvent, userID, column, what string, on bool, required string) (changed bool, err error) {
	err = s.InTx(ctx, func(tx *Tx) error {
		var ok, current bool
		err := tx.queryRow(ctx, `SELECT `+required+`, `+column+` FROM users WHERE id = ?`, userID).Scan(&ok, &current)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		if !ok {
			return fmt.Errorf("store: %w", ErrNotOperator)
		}
		if current == on {
			return nil
		}
		if _, err := tx.exec(ctx, `UPDATE users SET `+column+` = ? WHERE id = ?`, on, userID); err != nil {
			return fmt.Errorf("store: set %s: %w", what, err)
		}
		changed = true
		ie.TargetType, ie.TargetID = "user", userID
		return tx.insertInstanceEvent(ctx, ie)
	})
	return changed, err
}

// ListInstanceOperators lists the instance operators of every
// organization (disabled ones too), oldest first.
func (s *Store) ListInstanceOperators(ctx context.Context) ([]ConsoleUser, error) {
	return s.listConsoleUsers(ctx, "list instance operators", `u.instance_operator = TRUE`)
}

// ErrInvitationEmail refuses an invitation to a person whose e-mail
// address is not the invited one.
var ErrInvitationEmail = errors.New("store: the invitation is for another e-mail address")

// ErrAlreadyMember refuses an invitation to a person who is a member of
// the organization already.
var ErrAlreadyMember = fmt.Errorf("store: the person is a member of the organization already: %w", dberr.ErrConflict)

// AcceptInvitationAs accepts the invitation (tokenHash valid at now) as
// personID, an existing person proved by its own sign-in with the
// invited e-mail address: the person becomes a member of the
// invitation's organization with the invited role, and the pending
// invited account goes with its invitation (a link works once); e, the
// Audit Trail entry, is recorded there with the person as its target
// (invitedUserId in its summary). It answers the new membership. An
// invitation that is used, expired or whose user is disabled or deleted
// answers dberr.ErrNotFound; another address ErrInvitationEmail; a
// person of the organization already ErrAlreadyMember; each changes
// nothing.
func (s *Store) AcceptInvitationAs(ctx context.Context, e *AuditEntry, tokenHash, personID string, now time.Time) (Membership, error) {
	var m Membership
	err := s.InTx(ctx, func(tx *Tx) error {
		invitedID, orgID, err := tx.takeInvitation(ctx, tokenHash, now)
		if err != nil {
			return err
		}
		m.OrgID = orgID
		// A change of the person's memberships meanwhile (a join,
		// onlyMember's checks) waits for this one.
		if err := tx.lockUsers(ctx, personID, invitedID); err != nil {
			return err
		}
		var personEmail, invitedEmail string
		err = tx.queryRow(ctx, `SELECT p.email, i.email, m.role_id FROM users p, users i JOIN memberships m ON m.user_id = i.id AND m.org_id = ?
			WHERE p.id = ? AND p.disabled = FALSE AND i.id = ?`, m.OrgID, personID, invitedID).Scan(&personEmail, &invitedEmail, &m.RoleID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read users: %w", err)
		}
		if !strings.EqualFold(personEmail, invitedEmail) {
			return ErrInvitationEmail
		}
		var member int
		if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM memberships WHERE user_id = ? AND org_id = ?`, personID, m.OrgID).Scan(&member); err != nil {
			return fmt.Errorf("store: read membership: %w", err)
		}
		if member > 0 {
			return ErrAlreadyMember
		}
		// The invited account never signed in: it goes, unless whoever
		// runs the server gave it another organization meanwhile.
		others, err := tx.otherOrgs(ctx, m.OrgID, invitedID)
		if err != nil {
			return err
		}
		if others > 0 {
			err = tx.removeMembership(ctx, m.OrgID, invitedID)
		} else {
			_, err = tx.exec(ctx, `DELETE FROM users WHERE id = ?`, invitedID)
		}
		if err != nil {
			return fmt.Errorf("store: remove invited account: %w", err)
		}
		if err := tx.insertMembership(ctx, personID, m.OrgID, m.RoleID, now); err != nil {
			return err
		}
		if err := tx.queryRow(ctx, `SELECT o.name, r.name FROM orgs o JOIN roles r ON r.org_id = o.id AND r.id = ? WHERE o.id = ?`,
			m.RoleID, m.OrgID).Scan(&m.OrgName, &m.RoleName); err != nil {
			return fmt.Errorf("store: read membership: %w", err)
		}
		e.OrgID, e.TargetType, e.TargetID = m.OrgID, "user", personID
		if e.Summary == nil {
			e.Summary = map[string]any{}
		}
		e.Summary["invitedUserId"] = invitedID
		return tx.insertAudit(ctx, e)
	})
	return m, err
}
