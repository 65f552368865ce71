package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/patchd/patchd/internal/dberr"
	"github.com/patchd/patchd/internal/perm"
)

// Memberships: a person (a row of users) belongs to one or more
// organizations, with a role of each (docs/identity.md, "Memberships").
// A ConsoleUser is always a person as a member of one organization.

// ActorCLI is the Audit Trail actor of the admin command line (whoever
// runs the server): it alone changes the account of a person who belongs
// to several organizations.
const ActorCLI = "admin:cli"

// ErrOtherOrgs refuses an organization's change to an account that
// reaches other organizations too (its password, second factor,
// disabling): an administrator of one organization must not gain the
// person's access to the others.
var ErrOtherOrgs = fmt.Errorf("the person belongs to other organizations too: only its role here and its membership (Delete) can be changed from this organization, the rest by the person or with patchd admin user: %w", dberr.ErrConflict)

// memberOf restricts a statement on users to members of an organization;
// its placeholder takes the organization id.
const memberOf = ` AND id IN (SELECT mo.user_id FROM memberships mo WHERE mo.org_id = ?)`

// otherOrgs counts the organizations other than orgID the user belongs to.
func (tx *Tx) otherOrgs(ctx context.Context, orgID, userID string) (int, error) {
	var n int
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM memberships WHERE user_id = ? AND org_id <> ?`, userID, orgID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count memberships: %w", err)
	}
	return n, nil
}

// onlyMember refuses (ErrOtherOrgs) e's change of the account when the
// person belongs to other organizations than orgID, unless it comes from
// the admin command line.
func (tx *Tx) onlyMember(ctx context.Context, e *AuditEntry, orgID, userID string) error {
	if e.Actor == ActorCLI {
		return nil
	}
	// A join committing meanwhile would add a membership.
	if err := tx.lockUsers(ctx, userID); err != nil {
		return err
	}
	var member, others int
	if err := tx.queryRow(ctx, `SELECT COUNT(CASE WHEN org_id = ? THEN 1 END), COUNT(CASE WHEN org_id <> ? THEN 1 END) FROM memberships WHERE user_id = ?`,
		orgID, orgID, userID).Scan(&member, &others); err != nil {
		return fmt.Errorf("store: count memberships: %w", err)
	}
	if member == 0 {
		return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
	}
	if others > 0 {
		return fmt.Errorf("store: %w", ErrOtherOrgs)
	}
	return nil
}

// lockUsers locks the users' rows, in id order, until the transaction
// ends (PostgreSQL; SQLite has one writer): changes of one person's
// memberships wait for each other.
func (tx *Tx) lockUsers(ctx context.Context, ids ...string) error {
	if tx.s.engine != Postgres {
		return nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	q := `SELECT id FROM users WHERE id IN (?` + strings.Repeat(", ?", len(ids)-1) + `) ORDER BY id FOR UPDATE`
	if _, err := tx.exec(ctx, q, args...); err != nil {
		return fmt.Errorf("store: lock users: %w", err)
	}
	return nil
}

// insertMembership makes the user a member of the organization with the
// role (a role of that organization).
func (tx *Tx) insertMembership(ctx context.Context, userID, orgID, roleID string, at time.Time) error {
	res, err := tx.exec(ctx, `INSERT INTO memberships (user_id, org_id, role_id, created_at)
		SELECT ?, ?, id, ? FROM roles WHERE id = ? AND org_id = ?`, userID, orgID, millis(at), roleID, orgID)
	if isUniqueViolation(err) {
		return fmt.Errorf("store: the person is a member already: %w", dberr.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("store: add membership: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: role: %w", dberr.ErrNotFound)
	}
	return nil
}

// emailFree refuses (dberr.ErrConflict) an e-mail address a member of the
// organization has already.
func (tx *Tx) emailFree(ctx context.Context, orgID, email string) error {
	var n int
	if err := tx.queryRow(ctx, `SELECT COUNT(*) FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.org_id = ? AND u.email = ?`,
		orgID, email).Scan(&n); err != nil {
		return fmt.Errorf("store: read members: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("store: user %q exists: %w", email, dberr.ErrConflict)
	}
	return nil
}

// removeMembership takes the person out of the organization: its
// sessions there end. users.role_id, the role of one membership, moves to
// the oldest membership left.
func (tx *Tx) removeMembership(ctx context.Context, orgID, userID string) error {
	if _, err := tx.exec(ctx, `DELETE FROM console_sessions WHERE user_id = ? AND org_id = ?`, userID, orgID); err != nil {
		return fmt.Errorf("store: end sessions: %w", err)
	}
	res, err := tx.exec(ctx, `DELETE FROM memberships WHERE user_id = ? AND org_id = ?`, userID, orgID)
	if err != nil {
		return fmt.Errorf("store: remove membership: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
	}
	return tx.syncAccountRole(ctx, userID)
}

// syncAccountRole keeps users.role_id (the column of the per-organization
// accounts before memberships, still a reference to a role) equal to the
// role of the person's oldest membership.
func (tx *Tx) syncAccountRole(ctx context.Context, userID string) error {
	if _, err := tx.exec(ctx, `UPDATE users SET role_id = (SELECT m.role_id FROM memberships m WHERE m.user_id = users.id
		ORDER BY m.created_at, m.org_id LIMIT 1) WHERE id = ? AND EXISTS (SELECT 1 FROM memberships m WHERE m.user_id = users.id)`, userID); err != nil {
		return fmt.Errorf("store: account role: %w", err)
	}
	return nil
}

// AddMembership makes the person a member of the organization orgID with
// the role roleID (of that organization) and records e there
// (user.member_add): the instance operator's way to give an existing
// person a further organization. An address a member of the organization
// has already answers dberr.ErrConflict.
func (s *Store) AddMembership(ctx context.Context, e *AuditEntry, userID, orgID, roleID string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		var email string
		err := tx.queryRow(ctx, `SELECT email FROM users WHERE id = ?`, userID).Scan(&email)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		if err := tx.emailFree(ctx, orgID, email); err != nil {
			return err
		}
		e.OrgID, e.TargetType, e.TargetID = orgID, "user", userID
		return tx.insertMembership(ctx, userID, orgID, roleID, time.Now())
	})
}

// Membership is one organization a person belongs to, with its role there.
type Membership struct {
	OrgID    string `json:"orgId"`
	OrgName  string `json:"orgName"`
	RoleID   string `json:"roleId"`
	RoleName string `json:"role"`
	// Permissions are the role's: whatever is shown of the organization
	// is what they allow.
	Permissions perm.Set `json:"-"`
}

// Memberships lists the organizations the person belongs to, by name.
func (s *Store) Memberships(ctx context.Context, userID string) ([]Membership, error) {
	rows, err := s.query(ctx, `SELECT m.org_id, o.name, m.role_id, r.name, r.permissions FROM memberships m JOIN orgs o ON o.id = m.org_id
		JOIN roles r ON r.id = m.role_id WHERE m.user_id = ? ORDER BY o.name, o.id`, userID)
	var out []Membership
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var m Membership
		var permText string
		if err := r.Scan(&m.OrgID, &m.OrgName, &m.RoleID, &m.RoleName, &permText); err != nil {
			return err
		}
		p, err := perm.Parse(permText)
		if err != nil {
			return err
		}
		m.Permissions = p
		out = append(out, m)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: list memberships: %w", err)
	}
	return out, nil
}

// SwitchSessionOrg moves a signed-in session to another organization of
// its person under a new id (newIDHash) and CSRF token, keeping when it
// was signed in (its lifetime does not grow), and remembers the
// organization for the next sign-in. dberr.ErrNotFound when the person
// does not belong to orgID or the session is gone or not signed in.
func (s *Store) SwitchSessionOrg(ctx context.Context, idHash, newIDHash, csrf, orgID string) error {
	return s.InTx(ctx, func(tx *Tx) error {
		var userID string
		err := tx.queryRow(ctx, `SELECT cs.user_id FROM console_sessions cs JOIN memberships m ON m.user_id = cs.user_id AND m.org_id = ?
			WHERE cs.id_hash = ? AND cs.stage = ?`, orgID, idHash, StageSignedIn).Scan(&userID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: membership: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read session: %w", err)
		}
		if _, err := tx.exec(ctx, `UPDATE console_sessions SET id_hash = ?, csrf_token = ?, org_id = ?, pending_totp = '', pending_webauthn = ''
			WHERE id_hash = ?`, newIDHash, csrf, orgID, idHash); err != nil {
			return fmt.Errorf("store: switch organization: %w", err)
		}
		if _, err := tx.exec(ctx, `UPDATE users SET last_org_id = ? WHERE id = ?`, orgID, userID); err != nil {
			return fmt.Errorf("store: remember organization: %w", err)
		}
		return nil
	})
}

// JoinAccounts makes the person keepID and the account otherID, both
// proved by the person, one person: keepID becomes a member of every
// organization otherID belongs to (with otherID's role there; where both
// belong, keepID's role stays), takes otherID's single sign-on links and
// the instance-operator attribute and the create-organizations
// permission when otherID had them, and otherID is
// deleted with its sessions, passwords and second factors. entry makes
// the Audit Trail entry (user.join) of each organization the joined
// account belonged to. It answers the organizations joined.
func (s *Store) JoinAccounts(ctx context.Context, keepID, otherID string, entry func(orgID string) *AuditEntry) ([]string, error) {
	if keepID == otherID {
		return nil, fmt.Errorf("store: an account joins another one: %w", dberr.ErrConflict)
	}
	var joined []string
	err := s.InTx(ctx, func(tx *Tx) error {
		if err := tx.lockUsers(ctx, keepID, otherID); err != nil {
			return err
		}
		var otherOp, otherSSO, otherDisabled, otherCreate bool
		err := tx.queryRow(ctx, `SELECT instance_operator, operator_sso, disabled, create_orgs FROM users WHERE id = ?`, otherID).Scan(&otherOp, &otherSSO, &otherDisabled, &otherCreate)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: user: %w", dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: read user: %w", err)
		}
		if otherDisabled {
			return fmt.Errorf("store: the account is disabled: %w", dberr.ErrNotFound)
		}
		rows, err := tx.query(ctx, `SELECT org_id, role_id, created_at FROM memberships WHERE user_id = ? ORDER BY created_at, org_id`, otherID)
		type mem struct {
			org, role string
			at        int64
		}
		var mems []mem
		if err := eachRow(rows, err, func(r *sql.Rows) error {
			var m mem
			if err := r.Scan(&m.org, &m.role, &m.at); err != nil {
				return err
			}
			mems = append(mems, m)
			return nil
		}); err != nil {
			return fmt.Errorf("store: read memberships: %w", err)
		}
		for _, m := range mems {
			res, err := tx.exec(ctx, `INSERT INTO memberships (user_id, org_id, role_id, created_at) SELECT ?, ?, ?, ?
				WHERE NOT EXISTS (SELECT 1 FROM memberships WHERE user_id = ? AND org_id = ?)`, keepID, m.org, m.role, m.at, keepID, m.org)
			if err != nil {
				return fmt.Errorf("store: add membership: %w", err)
			}
			if n, _ := res.RowsAffected(); n == 1 {
				joined = append(joined, m.org)
			}
		}
		if _, err := tx.exec(ctx, `UPDATE sso_identities SET user_id = ? WHERE user_id = ?`, keepID, otherID); err != nil {
			return fmt.Errorf("store: move single sign-on links: %w", err)
		}
		if otherOp {
			if _, err := tx.exec(ctx, `UPDATE users SET instance_operator = TRUE, operator_sso = operator_sso OR ? WHERE id = ?`, otherSSO, keepID); err != nil {
				return fmt.Errorf("store: keep instance operator: %w", err)
			}
		}
		if otherCreate {
			if _, err := tx.exec(ctx, `UPDATE users SET create_orgs = TRUE WHERE id = ?`, keepID); err != nil {
				return fmt.Errorf("store: keep create organizations: %w", err)
			}
		}
		if _, err := tx.exec(ctx, `DELETE FROM users WHERE id = ?`, otherID); err != nil {
			return fmt.Errorf("store: delete joined account: %w", err)
		}
		for _, m := range mems {
			e := entry(m.org)
			e.OrgID, e.TargetType, e.TargetID = m.org, "user", keepID
			if e.Summary == nil {
				e.Summary = map[string]any{}
			}
			e.Summary["joinedUserId"] = otherID
			if err := tx.insertAudit(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	return joined, err
}

// ErrLastMembership refuses to take a person out of its only
// organization: the account goes only with its last membership, deleted
// on that organization's Users page.
var ErrLastMembership = fmt.Errorf("the person's only organization: delete the account on that organization's Users page instead: %w", dberr.ErrConflict)

// RemoveMembership takes the person out of the organization orgID (its
// sessions there end) and records e there (user.delete with
// membershipOnly), refusing (ErrLastMembership) when it is the person's
// only organization.
func (s *Store) RemoveMembership(ctx context.Context, e *AuditEntry, orgID, userID string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		// Another removal committing meanwhile would leave none.
		if err := tx.lockUsers(ctx, userID); err != nil {
			return err
		}
		others, err := tx.otherOrgs(ctx, orgID, userID)
		if err != nil {
			return err
		}
		if others == 0 {
			return fmt.Errorf("store: %w", ErrLastMembership)
		}
		if e.Summary == nil {
			e.Summary = map[string]any{}
		}
		e.Summary["membershipOnly"] = true
		e.OrgID, e.TargetType, e.TargetID = orgID, "user", userID
		return tx.removeMembership(ctx, orgID, userID)
	})
}

// Person is an account with every organization it belongs to.
type Person struct {
	ID               string
	Email            string
	Disabled         bool
	InstanceOperator bool
	Memberships      []Membership
}

// ListPeople lists the people of the instance whose e-mail address holds
// match (every one for ""), by address, at most limit of them, each with
// its memberships by organization name.
func (s *Store) ListPeople(ctx context.Context, match string, limit int) ([]Person, error) {
	pattern := "%" + strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(match)) + "%"
	return s.people(ctx, "list people", `u.id IN (SELECT pu.id FROM users pu WHERE LOWER(pu.email) LIKE ? ESCAPE '\' AND
		EXISTS (SELECT 1 FROM memberships pm WHERE pm.user_id = pu.id) ORDER BY pu.email, pu.id LIMIT ?)`, pattern, limit)
}

// PersonByID reads one person with its memberships.
func (s *Store) PersonByID(ctx context.Context, id string) (Person, error) {
	out, err := s.people(ctx, "read person", `u.id = ?`, id)
	if err != nil {
		return Person{}, err
	}
	if len(out) == 0 {
		return Person{}, fmt.Errorf("store: person: %w", dberr.ErrNotFound)
	}
	return out[0], nil
}

func (s *Store) people(ctx context.Context, what, where string, args ...any) ([]Person, error) {
	rows, err := s.query(ctx, `SELECT u.id, u.email, u.disabled, u.instance_operator, m.org_id, o.name, m.role_id, r.name, r.permissions
		FROM users u JOIN memberships m ON m.user_id = u.id JOIN orgs o ON o.id = m.org_id JOIN roles r ON r.id = m.role_id
		WHERE `+where+` ORDER BY u.email, u.id, o.name, o.id`, args...)
	var out []Person
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var p Person
		var m Membership
		var permText string
		if err := r.Scan(&p.ID, &p.Email, &p.Disabled, &p.InstanceOperator, &m.OrgID, &m.OrgName, &m.RoleID, &m.RoleName, &permText); err != nil {
			return err
		}
		var err error
		if m.Permissions, err = perm.Parse(permText); err != nil {
			return err
		}
		if n := len(out); n > 0 && out[n-1].ID == p.ID {
			out[n-1].Memberships = append(out[n-1].Memberships, m)
			return nil
		}
		p.Memberships = []Membership{m}
		out = append(out, p)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}
