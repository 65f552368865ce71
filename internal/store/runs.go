package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/dberr"
)

// RunQuery filters ListRuns and ListRunCommands.
type RunQuery struct {
	OrgID        string
	AutomationID string
	EndpointID   string
	// WithFailures keeps the runs with at least one failed command.
	WithFailures bool
	// Since, when set, keeps the runs started at or after it.
	Since time.Time
	// CommandStatus keeps a run's commands of that status (PENDING,
	// RUNNING, SUCCESS, FAILED, CANCELLED); Search those whose endpoint
	// name or log contains it, case-insensitively.
	CommandStatus string
	Search        string
	Limit         int
	Offset        int
}

// CommandStatuses are the statuses of a run's commands (spec §3).
var CommandStatuses = []string{"PENDING", "RUNNING", "SUCCESS", "FAILED", "CANCELLED"}

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
	if q.WithFailures {
		where += ` AND r.failed > 0`
	}
	if !q.Since.IsZero() {
		where += ` AND r.started_at >= ?`
		args = append(args, millis(q.Since))
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM runs r WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count runs: %w", err)
	}
	rows, err := s.query(ctx, `SELECT `+runColumns+` FROM runs r WHERE `+where+` ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?`,
		append(args, q.Limit, q.Offset)...)
	out, err := scanRows(rows, err, scanRun)
	if err != nil {
		return nil, 0, fmt.Errorf("store: list runs: %w", err)
	}
	return out, total, nil
}

// GetRun reads one run of the organization.
func (s *Store) GetRun(ctx context.Context, orgID, id string) (apiv1.Run, error) {
	r, err := scanRun(s.queryRow(ctx, `SELECT `+runColumns+` FROM runs r WHERE r.org_id = ? AND r.id = ?`, orgID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("store: run %s: %w", id, dberr.ErrNotFound)
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
	if q.CommandStatus != "" {
		where += ` AND status = ?`
		args = append(args, q.CommandStatus)
	}
	if q.Search != "" {
		where += ` AND (lower(endpoint_name) LIKE ? ESCAPE '\' OR lower(COALESCE(result, '')) LIKE ? ESCAPE '\')`
		p := likePattern(q.Search)
		args = append(args, p, p)
	}
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM commands WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count run commands: %w", err)
	}
	rows, err := s.query(ctx, `SELECT id, endpoint_id, endpoint_name, status, started_at, finished_at, created_at, result FROM commands
		WHERE `+where+` ORDER BY endpoint_name, id LIMIT ? OFFSET ?`, append(args, q.Limit, q.Offset)...)
	out := []apiv1.RunCommand{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var c apiv1.RunCommand
		var started, finished sql.NullInt64
		var created int64
		var result sql.NullString
		if err := r.Scan(&c.ID, &c.MachineID, &c.Endpoint, &c.Status, &started, &finished, &created, &result); err != nil {
			return err
		}
		createdAt := fromMillis(created)
		c.StartedAt, c.FinishedAt, c.CreatedAt, c.Result = nullTime(started), nullTime(finished), &createdAt, nullString(result)
		out = append(out, c)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("store: list run commands: %w", err)
	}
	return out, total, nil
}

// RunTally counts a run's commands by what became of them. Nothing counts
// the commands CANCELLED because their endpoint had nothing to install
// (result "Nothing to install…"), Cancelled the other cancelled ones: the
// spec's statuses stay as they are, the console shows the difference.
type RunTally struct {
	Pending, Running, Succeeded, Failed, Nothing, Cancelled int
}

// Open counts the commands still to finish (pending or running).
func (t RunTally) Open() int { return t.Pending + t.Running }

// nothingToInstall is the SQL test of a command cancelled with nothing to
// install (the result actions.Select writes).
const nothingToInstall = `status = 'CANCELLED' AND result LIKE 'Nothing to install%'`

// RunTallies counts the commands of the organization's runs among runIDs,
// by run id; a run without commands (or of another organization) has the
// zero tally.
func (s *Store) RunTallies(ctx context.Context, orgID string, runIDs []string) (map[string]RunTally, error) {
	out := make(map[string]RunTally, len(runIDs))
	if len(runIDs) == 0 {
		return out, nil
	}
	rows, err := s.query(ctx, `SELECT run_id, status, CASE WHEN `+nothingToInstall+` THEN 1 ELSE 0 END AS no_install, COUNT(*) FROM commands
		WHERE org_id = ? AND run_id IN (`+placeholders(len(runIDs))+`) GROUP BY run_id, status, CASE WHEN `+nothingToInstall+` THEN 1 ELSE 0 END`,
		append([]any{orgID}, anySlice(runIDs)...)...)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var runID, status string
		var nothing, n int
		if err := r.Scan(&runID, &status, &nothing, &n); err != nil {
			return err
		}
		t := out[runID]
		switch {
		case status == CmdPending:
			t.Pending += n
		case status == CmdRunning:
			t.Running += n
		case status == CmdSuccess:
			t.Succeeded += n
		case status == CmdFailed:
			t.Failed += n
		case nothing == 1:
			t.Nothing += n
		default:
			t.Cancelled += n
		}
		out[runID] = t
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: run tallies: %w", err)
	}
	return out, nil
}
