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

// Role is a named set of permissions in an organization.
type Role struct {
	ID          string    `json:"id"`
	OrgID       string    `json:"orgId"`
	Name        string    `json:"name"`
	Permissions perm.Set  `json:"-"`
	Builtin     bool      `json:"builtin"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CreateRole creates a custom role.
func (s *Store) CreateRole(ctx context.Context, orgID, name string, perms perm.Set) (Role, error) {
	var r Role
	err := s.InTx(ctx, func(tx *Tx) error {
		var err error
		r, err = tx.insertRole(ctx, orgID, name, perms, false)
		return err
	})
	return r, err
}

func (tx *Tx) insertRole(ctx context.Context, orgID, name string, perms perm.Set, builtin bool) (Role, error) {
	r := Role{ID: NewID(), OrgID: orgID, Name: name, Permissions: perms, Builtin: builtin, CreatedAt: time.Now().UTC()}
	_, err := tx.exec(ctx, `INSERT INTO roles (id, org_id, name, permissions, builtin, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		r.ID, orgID, name, perms.String(), builtin, millis(r.CreatedAt))
	if isUniqueViolation(err) {
		return Role{}, fmt.Errorf("store: role %q exists: %w", name, dberr.ErrConflict)
	}
	if err != nil {
		return Role{}, fmt.Errorf("store: create role: %w", err)
	}
	return r, nil
}

// FindRole finds a role of the organization by id or name.
func (s *Store) FindRole(ctx context.Context, orgID, idOrName string) (Role, error) {
	var r Role
	var permText string
	var created int64
	err := s.queryRow(ctx, `SELECT id, org_id, name, permissions, builtin, created_at FROM roles
		WHERE org_id = ? AND (id = ? OR name = ?) ORDER BY (id = ?) DESC LIMIT 1`,
		orgID, idOrName, idOrName, idOrName).Scan(&r.ID, &r.OrgID, &r.Name, &permText, &r.Builtin, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Role{}, fmt.Errorf("store: role %q: %w", idOrName, dberr.ErrNotFound)
	}
	if err != nil {
		return Role{}, fmt.Errorf("store: find role: %w", err)
	}
	if r.Permissions, err = perm.Parse(permText); err != nil {
		return Role{}, fmt.Errorf("store: role %s: %w", r.Name, err)
	}
	r.CreatedAt = fromMillis(created)
	return r, nil
}

// ErrBuiltinRole refuses a change to a built-in role.
var ErrBuiltinRole = errors.New("a built-in role cannot be changed or deleted")

// ErrRoleInUse refuses deleting a role that users, API credentials or the
// organization's single sign-on still use.
var ErrRoleInUse = errors.New("the role is in use")

// RoleUse counts what holds a role.
type RoleUse struct {
	Users, Credentials int
	// SSO: the organization's single sign-on maps a claim to the role or
	// gives it by default.
	SSO bool
}

// InUse tells whether anything holds the role.
func (u RoleUse) InUse() bool { return u.Users > 0 || u.Credentials > 0 || u.SSO }

// roleUse counts what holds the role id of the organization.
func roleUse(ctx context.Context, q interface {
	queryRow(context.Context, string, ...any) *sql.Row
}, orgID, id string) (RoleUse, error) {
	var u RoleUse
	var sso int
	err := q.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM memberships WHERE org_id = ? AND role_id = ?),
		(SELECT COUNT(*) FROM credentials WHERE org_id = ? AND role_id = ?),
		(SELECT COUNT(*) FROM sso_configs WHERE org_id = ? AND (default_role_id = ? OR role_map LIKE ?))`,
		orgID, id, orgID, id, orgID, id, `%"`+id+`"%`).Scan(&u.Users, &u.Credentials, &sso)
	if err != nil {
		return u, fmt.Errorf("store: role use: %w", err)
	}
	u.SSO = sso > 0
	return u, nil
}

// RoleUses answers what holds each role of the organization, by role id.
func (s *Store) RoleUses(ctx context.Context, orgID string) (map[string]RoleUse, error) {
	roles, err := s.ListRoles(ctx, orgID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]RoleUse, len(roles))
	for _, r := range roles {
		if out[r.ID], err = roleUse(ctx, s, orgID, r.ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CreateRoleAudited creates a custom role and records e.
func (s *Store) CreateRoleAudited(ctx context.Context, e *AuditEntry, orgID, name string, perms perm.Set) (Role, error) {
	var r Role
	err := s.Audited(ctx, e, func(tx *Tx) error {
		var err error
		r, err = tx.insertRole(ctx, orgID, name, perms, false)
		e.TargetType, e.TargetID = "role", r.ID
		return err
	})
	return r, err
}

// UpdateRole renames a custom role and sets its permissions, records e
// and tells every replica to drop the cached tokens of the role (its
// credentials get the new permissions within seconds; console sessions
// read them at each request). A built-in role answers ErrBuiltinRole, a
// taken name dberr.ErrConflict.
func (s *Store) UpdateRole(ctx context.Context, e *AuditEntry, orgID, id, name string, perms perm.Set) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		if err := tx.customRole(ctx, orgID, id); err != nil {
			return err
		}
		_, err := tx.exec(ctx, `UPDATE roles SET name = ?, permissions = ? WHERE org_id = ? AND id = ?`, name, perms.String(), orgID, id)
		if isUniqueViolation(err) {
			return fmt.Errorf("store: role %q exists: %w", name, dberr.ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("store: update role: %w", err)
		}
		if _, err := tx.exec(ctx, `INSERT INTO auth_changes (role_id, at) VALUES (?, ?)`, id, millis(time.Now())); err != nil {
			return fmt.Errorf("store: record auth change: %w", err)
		}
		return nil
	})
}

// customRole answers dberr.ErrNotFound for a role the organization does
// not have, and ErrBuiltinRole for a built-in one, which cannot be changed.
func (tx *Tx) customRole(ctx context.Context, orgID, id string) error {
	var builtin bool
	err := tx.queryRow(ctx, `SELECT builtin FROM roles WHERE org_id = ? AND id = ?`, orgID, id).Scan(&builtin)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: role: %w", dberr.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("store: read role: %w", err)
	}
	if builtin {
		return fmt.Errorf("store: %w", ErrBuiltinRole)
	}
	return nil
}

// DeleteRole deletes a custom role nothing holds and records e. A
// built-in role answers ErrBuiltinRole; a role in use ErrRoleInUse with
// its use.
func (s *Store) DeleteRole(ctx context.Context, e *AuditEntry, orgID, id string) (RoleUse, error) {
	var use RoleUse
	err := s.Audited(ctx, e, func(tx *Tx) error {
		if tx.s.engine == Postgres {
			// A user or credential given the role meanwhile would make
			// the delete fail on its foreign key: lock the role first.
			if _, err := tx.exec(ctx, `SELECT id FROM roles WHERE id = ? FOR UPDATE`, id); err != nil {
				return fmt.Errorf("store: lock role: %w", err)
			}
		}
		if err := tx.customRole(ctx, orgID, id); err != nil {
			return err
		}
		var err error
		if use, err = roleUse(ctx, tx, orgID, id); err != nil {
			return err
		}
		if use.InUse() {
			return fmt.Errorf("store: %w", ErrRoleInUse)
		}
		if _, err := tx.exec(ctx, `DELETE FROM roles WHERE org_id = ? AND id = ?`, orgID, id); err != nil {
			return fmt.Errorf("store: delete role: %w", err)
		}
		return nil
	})
	return use, err
}
