package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
)

// RetrySource is what a retry of a run's failed endpoints starts from: the
// run's action as stored, and the endpoints whose command FAILED.
type RetrySource struct {
	RunID          string
	Name           string
	ActionType     string
	Payload        json.RawMessage
	AutomationID   string
	AutomationName string
	// FailedEndpoints are the ids of the endpoints whose command failed,
	// by endpoint name.
	FailedEndpoints []string
}

// RunRetrySource reads a run of the organization for a retry.
func (s *Store) RunRetrySource(ctx context.Context, orgID, runID string) (RetrySource, error) {
	src := RetrySource{RunID: runID}
	var payload string
	var automationID, automationName sql.NullString
	err := s.queryRow(ctx, `SELECT name, action_type, payload, automation_id, automation_name FROM runs WHERE org_id = ? AND id = ?`,
		orgID, runID).Scan(&src.Name, &src.ActionType, &payload, &automationID, &automationName)
	if errors.Is(err, sql.ErrNoRows) {
		return src, fmt.Errorf("store: run %s: %w", runID, dberr.ErrNotFound)
	}
	if err != nil {
		return src, fmt.Errorf("store: read run for a retry: %w", err)
	}
	src.Payload, src.AutomationID, src.AutomationName = json.RawMessage(payload), automationID.String, automationName.String
	rows, err := s.query(ctx, `SELECT DISTINCT endpoint_id, endpoint_name FROM commands WHERE org_id = ? AND run_id = ? AND status = 'FAILED'
		ORDER BY endpoint_name, endpoint_id`, orgID, runID)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var id, name string
		if err := r.Scan(&id, &name); err != nil {
			return err
		}
		src.FailedEndpoints = append(src.FailedEndpoints, id)
		return nil
	}); err != nil {
		return src, fmt.Errorf("store: failed commands of run %s: %w", runID, err)
	}
	return src, nil
}
