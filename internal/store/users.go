package store

import (
	"context"
	"fmt"
	"time"
)

// User is a console user.
type User struct {
	ID           string    `json:"id"`
	OrgID        string    `json:"orgId"`
	Email        string    `json:"email"`
	RoleID       string    `json:"roleId"`
	Disabled     bool      `json:"disabled"`
	CreatedAt    time.Time `json:"createdAt"`
	PasswordHash string    `json:"-"`
}

// CreateUser stores a console user with an already hashed password.
func (s *Store) CreateUser(ctx context.Context, e *AuditEntry, u User) (User, error) {
	u.ID = NewID()
	u.CreatedAt = time.Now().UTC()
	e.TargetID = u.ID
	err := s.Audited(ctx, e, func(tx *Tx) error {
		_, err := tx.exec(ctx, `INSERT INTO users (id, org_id, email, password_hash, role_id, disabled, created_at)
			VALUES (?, ?, ?, ?, ?, FALSE, ?)`, u.ID, u.OrgID, u.Email, u.PasswordHash, u.RoleID, millis(u.CreatedAt))
		if isUniqueViolation(err) {
			return fmt.Errorf("store: user %q exists: %w", u.Email, ErrConflict)
		}
		if err != nil {
			return fmt.Errorf("store: create user: %w", err)
		}
		return nil
	})
	if err != nil {
		return User{}, err
	}
	return u, nil
}
