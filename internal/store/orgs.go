package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/dberr"
)

// Org is an organization; every row of organization data belongs to one.
type Org struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	TimeZone  string    `json:"timezone"`
	CreatedAt time.Time `json:"createdAt"`
}

// Names of the built-in roles every organization has.
const (
	RoleAdministrator = "Administrator"
	RoleReadOnly      = "Read-only"
)

// CreateOrg creates an organization with its built-in roles.
func (s *Store) CreateOrg(ctx context.Context, name, timeZone string) (Org, error) {
	o := Org{ID: NewID(), Name: name, TimeZone: timeZone, CreatedAt: time.Now().UTC()}
	err := s.InTx(ctx, func(tx *Tx) error { return tx.createOrg(ctx, o) })
	return o, err
}

// orgCreateHooks run inside the transaction that creates an organization,
// so that each domain can add its built-in rows (groups, settings).
var orgCreateHooks []func(ctx context.Context, tx *Tx, o Org) error

func (tx *Tx) afterCreateOrg(ctx context.Context, o Org) error {
	for _, h := range orgCreateHooks {
		if err := h(ctx, tx, o); err != nil {
			return err
		}
	}
	return nil
}

// FindOrg finds an organization by id or by name.
func (s *Store) FindOrg(ctx context.Context, idOrName string) (Org, error) {
	var o Org
	var created int64
	err := s.queryRow(ctx, `SELECT id, name, timezone, created_at FROM orgs WHERE id = ? OR name = ? ORDER BY (id = ?) DESC LIMIT 1`,
		idOrName, idOrName, idOrName).Scan(&o.ID, &o.Name, &o.TimeZone, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Org{}, fmt.Errorf("store: organization %q: %w", idOrName, dberr.ErrNotFound)
	}
	if err != nil {
		return Org{}, fmt.Errorf("store: find organization: %w", err)
	}
	o.CreatedAt = fromMillis(created)
	return o, nil
}

// ListOrgs lists every organization, oldest first.
func (s *Store) ListOrgs(ctx context.Context) ([]Org, error) {
	rows, err := s.query(ctx, `SELECT id, name, timezone, created_at FROM orgs ORDER BY created_at, id`)
	var out []Org
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var o Org
		var created int64
		if err := r.Scan(&o.ID, &o.Name, &o.TimeZone, &created); err != nil {
			return err
		}
		o.CreatedAt = fromMillis(created)
		out = append(out, o)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: list organizations: %w", err)
	}
	return out, nil
}
