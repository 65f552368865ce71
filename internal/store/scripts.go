package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/actions"
	"github.com/patchd/patchd/internal/dberr"
)

// Script is a stored script of an organization, run by RUN_SCRIPT actions
// that name it (payload {scriptId, parameters}); a run uses the code and
// reboot exit codes the script has when the run is created.
type Script struct {
	ID              string                `json:"id"`
	OrgID           string                `json:"orgId"`
	Name            string                `json:"name"`
	Language        string                `json:"language"`
	Code            string                `json:"code"`
	Parameters      []actions.ScriptParam `json:"parameters"`
	RebootExitCodes []int                 `json:"rebootExitCodes"`
	TimeoutSeconds  int                   `json:"timeoutSeconds"`
	CreatedAt       time.Time             `json:"createdAt"`
	UpdatedAt       time.Time             `json:"updatedAt"`
}

// Stored is the script as a run sees it.
func (s Script) Stored() actions.StoredScript {
	return actions.StoredScript{Name: s.Name, Language: s.Language, Code: s.Code, Parameters: s.Parameters,
		RebootExitCodes: s.RebootExitCodes, TimeoutSeconds: s.TimeoutSeconds}
}

func nonNilSlice[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return v
}

// CreateScript stores a new script; a name taken in the organization is dberr.ErrConflict.
func (s *Store) CreateScript(ctx context.Context, e *AuditEntry, sc Script, now time.Time) (Script, error) {
	sc.ID, sc.CreatedAt, sc.UpdatedAt = NewID(), now.UTC(), now.UTC()
	sc.Parameters, sc.RebootExitCodes = nonNilSlice(sc.Parameters), nonNilSlice(sc.RebootExitCodes)
	params, _ := json.Marshal(sc.Parameters)
	codes, _ := json.Marshal(sc.RebootExitCodes)
	err := s.Audited(ctx, e, func(tx *Tx) error {
		e.TargetID = sc.ID
		if _, err := tx.exec(ctx, `INSERT INTO scripts (id, org_id, name, language, code, parameters, reboot_exit_codes, timeout_seconds, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, sc.ID, sc.OrgID, sc.Name, sc.Language, sc.Code, string(params), string(codes), sc.TimeoutSeconds,
			millis(now), millis(now)); err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: a script named %q exists: %w", sc.Name, dberr.ErrConflict)
			}
			return fmt.Errorf("store: create script: %w", err)
		}
		return nil
	})
	return sc, err
}

// UpdateScript replaces a script's fields.
func (s *Store) UpdateScript(ctx context.Context, e *AuditEntry, sc Script, now time.Time) (Script, error) {
	sc.Parameters, sc.RebootExitCodes = nonNilSlice(sc.Parameters), nonNilSlice(sc.RebootExitCodes)
	params, _ := json.Marshal(sc.Parameters)
	codes, _ := json.Marshal(sc.RebootExitCodes)
	err := s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `UPDATE scripts SET name = ?, language = ?, code = ?, parameters = ?, reboot_exit_codes = ?, timeout_seconds = ?,
			updated_at = ? WHERE org_id = ? AND id = ?`, sc.Name, sc.Language, sc.Code, string(params), string(codes), sc.TimeoutSeconds, millis(now), sc.OrgID, sc.ID)
		if err != nil {
			if isUniqueViolation(err) {
				return fmt.Errorf("store: a script named %q exists: %w", sc.Name, dberr.ErrConflict)
			}
			return fmt.Errorf("store: update script: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: script %s: %w", sc.ID, dberr.ErrNotFound)
		}
		return nil
	})
	if err != nil {
		return sc, err
	}
	return s.GetScript(ctx, sc.OrgID, sc.ID)
}

// DeleteScript removes a script. Automations that name it fail to run
// afterwards, and say so.
func (s *Store) DeleteScript(ctx context.Context, e *AuditEntry, orgID, id string) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		res, err := tx.exec(ctx, `DELETE FROM scripts WHERE org_id = ? AND id = ?`, orgID, id)
		if err != nil {
			return fmt.Errorf("store: delete script: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("store: script %s: %w", id, dberr.ErrNotFound)
		}
		return nil
	})
}

const scriptColumns = `id, org_id, name, language, code, parameters, reboot_exit_codes, timeout_seconds, created_at, updated_at`

func scanScript(row interface{ Scan(...any) error }) (Script, error) {
	var sc Script
	var params, codes string
	var created, updated int64
	if err := row.Scan(&sc.ID, &sc.OrgID, &sc.Name, &sc.Language, &sc.Code, &params, &codes, &sc.TimeoutSeconds, &created, &updated); err != nil {
		return sc, err
	}
	if err := json.Unmarshal([]byte(params), &sc.Parameters); err != nil {
		return sc, fmt.Errorf("script parameters: %w", err)
	}
	if err := json.Unmarshal([]byte(codes), &sc.RebootExitCodes); err != nil {
		return sc, fmt.Errorf("script reboot exit codes: %w", err)
	}
	sc.CreatedAt, sc.UpdatedAt = fromMillis(created), fromMillis(updated)
	return sc, nil
}

// GetScript reads a script by id, or by name when no id matches.
func (s *Store) GetScript(ctx context.Context, orgID, idOrName string) (Script, error) {
	sc, err := scanScript(s.queryRow(ctx, `SELECT `+scriptColumns+` FROM scripts WHERE org_id = ? AND (id = ? OR name = ?)
		ORDER BY (id = ?) DESC LIMIT 1`, orgID, idOrName, idOrName, idOrName))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, fmt.Errorf("store: script %q: %w", idOrName, dberr.ErrNotFound)
	}
	if err != nil {
		return sc, fmt.Errorf("store: get script: %w", err)
	}
	return sc, nil
}

func (tx *Tx) getScript(ctx context.Context, orgID, id string) (Script, error) {
	sc, err := scanScript(tx.queryRow(ctx, `SELECT `+scriptColumns+` FROM scripts WHERE org_id = ? AND id = ?`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return sc, fmt.Errorf("store: script %q: %w", id, dberr.ErrNotFound)
	}
	if err != nil {
		return sc, fmt.Errorf("store: get script: %w", err)
	}
	return sc, nil
}

// ListScripts lists the organization's scripts by name.
func (s *Store) ListScripts(ctx context.Context, orgID string) ([]Script, error) {
	rows, err := s.query(ctx, `SELECT `+scriptColumns+` FROM scripts WHERE org_id = ? ORDER BY name, id`, orgID)
	out, err := scanRows(rows, err, scanScript)
	if err != nil {
		return nil, fmt.Errorf("store: list scripts: %w", err)
	}
	return out, nil
}
