package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/patchd/patchd/apiv1"
)

// RunQuery filters ListRuns and ListRunCommands.
type RunQuery struct {
	OrgID        string
	AutomationID string
	EndpointID   string
	Limit        int
	Offset       int
}

const runColumns = `r.id, r.name, r.action_type, r.status, r.started_at, r.finished_at, r.total, r.succeeded, r.failed, r.created_by,
	r.automation_id, r.automation_name, r.detail`

func scanRun(row interface{ Scan(...any) error }) (apiv1.Run, error) {
	var r apiv1.Run
	var started, finished sql.NullInt64
	var createdBy, automationID, automationName, detail sql.NullString
	if err := row.Scan(&r.ID, &r.Name, &r.ActionType, &r.Status, &started, &finished, &r.Total, &r.Succeeded, &r.Failed,
		&createdBy, &automationID, &automationName, &detail); err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt = nullTime(started), nullTime(finished)
	r.CreatedBy, r.AutomationID, r.AutomationName, r.Detail = nullString(createdBy), nullString(automationID), nullString(automationName), nullString(detail)
	return r, nil
}

// ListRuns lists the organization's most recent runs, newest first, and
// counts every run that matches.
func (s *Store) ListRuns(ctx context.Context, q RunQuery) ([]apiv1.Run, int, error) {
	where := `r.org_id = ?`
	args := []any{q.OrgID}
	if q.AutomationID != "" {
		where += ` AND r.automation_id = ?`
		args = append(args, q.AutomationID)
	}
	if q.EndpointID != "" {
		where += ` AND EXISTS (SELECT 1 FROM commands c WHERE c.run_id = r.id AND c.endpoint_id = ?)`
		args = append(args, q.EndpointID)
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM runs r WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count runs: %w", err)
	}
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs r WHERE `+where+` ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?`,
		append(args, q.Limit, q.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list runs: %w", err)
	}
	defer rows.Close()
	out := []apiv1.Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("store: list runs: %w", err)
		}
		out = append(out, r)
	}
	return out, total, rows.Err()
}

// GetRun reads one run of the organization.
func (s *Store) GetRun(ctx context.Context, orgID, id string) (apiv1.Run, error) {
	r, err := scanRun(s.queryRow(ctx, `SELECT `+runColumns+` FROM runs r WHERE r.org_id = ? AND r.id = ?`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("store: run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("store: get run: %w", err)
	}
	return r, nil
}

// ListRunCommands lists the per-endpoint results of a run, by endpoint
// name; a run of another organization is not found.
func (s *Store) ListRunCommands(ctx context.Context, q RunQuery, runID string) ([]apiv1.RunCommand, int, error) {
	if _, err := s.GetRun(ctx, q.OrgID, runID); err != nil {
		return nil, 0, err
	}
	where := `run_id = ?`
	args := []any{runID}
	if q.EndpointID != "" {
		where += ` AND endpoint_id = ?`
		args = append(args, q.EndpointID)
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM commands WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count run commands: %w", err)
	}
	rows, err := s.query(ctx, `SELECT id, endpoint_id, endpoint_name, status, started_at, finished_at, created_at, result FROM commands
		WHERE `+where+` ORDER BY endpoint_name, id LIMIT ? OFFSET ?`, append(args, q.Limit, q.Offset)...)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list run commands: %w", err)
	}
	defer rows.Close()
	out := []apiv1.RunCommand{}
	for rows.Next() {
		var c apiv1.RunCommand
		var started, finished sql.NullInt64
		var created int64
		var result sql.NullString
		if err := rows.Scan(&c.ID, &c.MachineID, &c.Endpoint, &c.Status, &started, &finished, &created, &result); err != nil {
			return nil, 0, fmt.Errorf("store: list run commands: %w", err)
		}
		createdAt := fromMillis(created)
		c.StartedAt, c.FinishedAt, c.CreatedAt, c.Result = nullTime(started), nullTime(finished), &createdAt, nullString(result)
		out = append(out, c)
	}
	return out, total, rows.Err()
}
