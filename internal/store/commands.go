package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/patchd/patchd/agentproto"
	"github.com/patchd/patchd/internal/dberr"
)

// Run and command statuses (spec section 3).
const (
	RunRunning   = "RUNNING"
	RunCompleted = "COMPLETED"
	RunFailed    = "FAILED"
	RunStopped   = "STOPPED"

	CmdPending   = "PENDING"
	CmdRunning   = "RUNNING"
	CmdSuccess   = "SUCCESS"
	CmdFailed    = "FAILED"
	CmdCancelled = "CANCELLED"
)

// NewRun describes a run to create.
type NewRun struct {
	OrgID          string
	Name           string
	ActionType     string
	Payload        json.RawMessage
	CreatedBy      string
	AutomationID   string
	AutomationName string
	Detail         string
}

// NewCommand is one endpoint's share of a new run. A command created
// CANCELLED (nothing to do there) carries its Result.
type NewCommand struct {
	EndpointID   string
	EndpointName string
	Payload      json.RawMessage
	NotAfter     *time.Time
	Cancelled    bool
	Result       string
}

// CreatedRun tells what CreateRun made.
type CreatedRun struct {
	RunID  string
	Queued int
	// Endpoints lists the endpoints that got a pending command, for wake-ups.
	Endpoints []string
}

// CreateRun creates a run with its commands in the caller's transaction.
func (tx *Tx) CreateRun(ctx context.Context, r NewRun, cmds []NewCommand, now time.Time) (CreatedRun, error) {
	out := CreatedRun{RunID: NewID()}
	payload := r.Payload
	if len(payload) == 0 {
		payload = json.RawMessage("{}")
	}
	open := 0
	for _, c := range cmds {
		if !c.Cancelled {
			open++
		}
	}
	status := RunRunning
	var finished any
	if open == 0 {
		status, finished = RunCompleted, millis(now)
	}
	if _, err := tx.exec(ctx, `INSERT INTO runs (id, org_id, name, action_type, status, payload, created_at, started_at, finished_at, total,
		succeeded, failed, open_commands, created_by, automation_id, automation_name, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?, ?)`,
		out.RunID, r.OrgID, r.Name, r.ActionType, status, string(payload), millis(now), millis(now), finished, len(cmds), open,
		nullIfEmpty(r.CreatedBy), nullIfEmpty(r.AutomationID), nullIfEmpty(r.AutomationName), nullIfEmpty(r.Detail)); err != nil {
		return out, fmt.Errorf("store: create run: %w", err)
	}
	rows := make([][]any, 0, len(cmds))
	for _, c := range cmds {
		p := c.Payload
		if len(p) == 0 {
			p = payload
		}
		st, result, fin := CmdPending, any(nil), any(nil)
		if c.Cancelled {
			st, result, fin = CmdCancelled, c.Result, millis(now)
		} else {
			out.Queued++
			out.Endpoints = append(out.Endpoints, c.EndpointID)
		}
		rows = append(rows, []any{NewID(), r.OrgID, out.RunID, c.EndpointID, c.EndpointName, r.ActionType, string(p), st, millis(now),
			nullMillis(c.NotAfter), result, fin})
	}
	if err := tx.insertCommands(ctx, rows); err != nil {
		return out, err
	}
	return out, nil
}

// PendingCommands lists an endpoint's pending commands, oldest first.
func (s *Store) PendingCommands(ctx context.Context, endpointID string, now time.Time) ([]agentproto.Command, error) {
	rows, err := s.query(ctx, `SELECT id, run_id, type, payload, created_at, not_after FROM commands
		WHERE endpoint_id = ? AND status = 'PENDING' AND (not_after IS NULL OR not_after > ?) ORDER BY created_at, id LIMIT 100`, endpointID, millis(now))
	var out []agentproto.Command
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var c agentproto.Command
		var payload string
		var created int64
		var notAfter sql.NullInt64
		if err := r.Scan(&c.ID, &c.RunID, &c.Type, &payload, &created, &notAfter); err != nil {
			return err
		}
		c.Payload, c.CreatedAt, c.NotAfter = json.RawMessage(payload), fromMillis(created), nullTime(notAfter)
		out = append(out, c)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("store: pending commands: %w", err)
	}
	return out, nil
}

// EndpointsWithPending lists the endpoints that have pending commands or
// a waiting "scan now" (to seed a replica's in-memory view at start).
func (s *Store) EndpointsWithPending(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT endpoint_id FROM commands WHERE status = 'PENDING'
		UNION SELECT id FROM endpoints WHERE scan_requested_at IS NOT NULL`)
	out, err := scanRows(rows, err, scanString)
	if err != nil {
		return nil, fmt.Errorf("store: endpoints with pending commands: %w", err)
	}
	return out, nil
}

// ErrStatusConflict answers a status report that does not follow the
// command's state (a terminal command, or a step backwards).
var ErrStatusConflict = errors.New("store: command status conflict")

// CommandStatus is an agent's report on a command.
type CommandStatus struct {
	Status   string
	Result   string
	ExitCode *int
	At       time.Time
}

// SetCommandStatus applies an agent's report on its command: PENDING →
// RUNNING → SUCCESS or FAILED. The run's counters and status follow in the
// same transaction. A repeat of the status a command is in already is
// accepted: a terminal repeat changes nothing; RUNNING appends its text,
// unless the report is the same as the last one applied (same status, text
// and exit code): that is the agent sending again a report whose answer it
// did not see, and it changes nothing. The stored text is capped
// (MaxCommandResult).
func (s *Store) SetCommandStatus(ctx context.Context, endpointID, commandID string, st CommandStatus, now time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		var runID, current, result string
		var cut int64
		var last sql.NullString
		err := tx.queryRow(ctx, `SELECT run_id, status, COALESCE(result, ''), result_cut, last_report FROM commands WHERE id = ? AND endpoint_id = ?`,
			commandID, endpointID).Scan(&runID, &current, &result, &cut, &last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: command %s: %w", commandID, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: command status: %w", err)
		}
		terminal := current == CmdSuccess || current == CmdFailed || current == CmdCancelled
		switch {
		case terminal && current == st.Status:
			return nil
		case terminal, st.Status == CmdRunning && current != CmdPending && current != CmdRunning:
			return fmt.Errorf("%w: the command is %s", ErrStatusConflict, current)
		}
		report := reportHash(st)
		if current == st.Status && last.String == report {
			return nil // a retry of the report applied last
		}
		at := st.At
		if at.IsZero() || at.After(now.Add(5*time.Minute)) {
			at = now
		}
		var text any
		if st.Result != "" {
			next, nextCut := appendResult(result, cut, st.Result)
			text, cut = next, nextCut
		}
		if st.Status == CmdRunning {
			_, err = tx.exec(ctx, `UPDATE commands SET status = 'RUNNING', started_at = COALESCE(started_at, ?),
				result = COALESCE(?, result), result_cut = ?, last_report = ? WHERE id = ?`, millis(at), text, cut, report, commandID)
			if err != nil {
				return fmt.Errorf("store: command status: %w", err)
			}
			return nil
		}
		if _, err = tx.exec(ctx, `UPDATE commands SET status = ?, started_at = COALESCE(started_at, ?), finished_at = ?, exit_code = ?,
			result = COALESCE(?, result), result_cut = ?, last_report = ? WHERE id = ?`,
			st.Status, millis(at), millis(at), st.ExitCode, text, cut, report, commandID); err != nil {
			return fmt.Errorf("store: command status: %w", err)
		}
		return tx.closeCommands(ctx, runID, st.Status, 1, now)
	})
}

// closeCommands moves n open commands of a run to a final status in the
// run's counters, and finishes the run when none is open.
func (tx *Tx) closeCommands(ctx context.Context, runID, status string, n int, now time.Time) error {
	succ, fail := 0, 0
	switch status {
	case CmdSuccess:
		succ = n
	case CmdFailed:
		fail = n
	}
	if _, err := tx.exec(ctx, `UPDATE runs SET succeeded = succeeded + ?, failed = failed + ?, open_commands = open_commands - ? WHERE id = ?`,
		succ, fail, n, runID); err != nil {
		return fmt.Errorf("store: run counters: %w", err)
	}
	if _, err := tx.exec(ctx, `UPDATE runs SET status = CASE WHEN failed > 0 THEN 'FAILED' ELSE 'COMPLETED' END, finished_at = ?
		WHERE id = ? AND open_commands <= 0 AND status = 'RUNNING'`, millis(now), runID); err != nil {
		return fmt.Errorf("store: finish run: %w", err)
	}
	return nil
}

// cancelPendingCommands cancels an endpoint's pending commands.
func (tx *Tx) cancelPendingCommands(ctx context.Context, endpointID, reason string, now time.Time) error {
	rows, err := tx.query(ctx, `SELECT run_id, COUNT(*) FROM commands WHERE endpoint_id = ? AND status IN ('PENDING', 'RUNNING') GROUP BY run_id`, endpointID)
	counts := map[string]int{}
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var run string
		var n int
		if err := r.Scan(&run, &n); err != nil {
			return err
		}
		counts[run] = n
		return nil
	}); err != nil {
		return fmt.Errorf("store: cancel commands: %w", err)
	}
	if len(counts) == 0 {
		return nil
	}
	if _, err := tx.exec(ctx, `UPDATE commands SET status = 'CANCELLED', finished_at = ?, result = COALESCE(result, '') || ?
		WHERE endpoint_id = ? AND status IN ('PENDING', 'RUNNING')`, millis(now), reason, endpointID); err != nil {
		return fmt.Errorf("store: cancel commands: %w", err)
	}
	for run, n := range counts {
		if err := tx.closeCommands(ctx, run, CmdCancelled, n, now); err != nil {
			return err
		}
	}
	return nil
}
