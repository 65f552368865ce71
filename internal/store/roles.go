package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
		return Role{}, fmt.Errorf("store: role %q exists: %w", name, ErrConflict)
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
		return Role{}, fmt.Errorf("store: role %q: %w", idOrName, ErrNotFound)
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
