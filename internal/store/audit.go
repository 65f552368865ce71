package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// AuditEntry is one line of the Audit Trail.
type AuditEntry struct {
	ID         string         `json:"id"`
	OrgID      string         `json:"orgId"`
	At         time.Time      `json:"at"`
	Actor      string         `json:"actor"`
	Action     string         `json:"action"`
	TargetType string         `json:"targetType"`
	TargetID   string         `json:"targetId,omitempty"`
	Summary    map[string]any `json:"summary,omitempty"`
	// Address is the client address of a console or API write (sign-ins
	// too); empty for the command line and the server's own schedule.
	Address string `json:"address,omitempty"`
}

// stampEvent gives an audit entry or instance event its id and time when
// unset, and answers its target id (NULL when empty) and its summary as
// JSON ("{}" when empty).
func stampEvent(id *string, at *time.Time, targetID string, summary map[string]any) (any, string, error) {
	if *id == "" {
		*id = NewID()
	}
	if at.IsZero() {
		*at = time.Now().UTC()
	}
	js := []byte("{}")
	if len(summary) > 0 {
		var err error
		if js, err = json.Marshal(summary); err != nil {
			return nil, "", err
		}
	}
	var target any
	if targetID != "" {
		target = targetID
	}
	return target, string(js), nil
}

func (tx *Tx) insertAudit(ctx context.Context, e *AuditEntry) error {
	target, summary, err := stampEvent(&e.ID, &e.At, e.TargetID, e.Summary)
	if err != nil {
		return fmt.Errorf("store: audit summary: %w", err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO audit_log (id, org_id, at, actor, action, target_type, target_id, summary, address)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.OrgID, millis(e.At), e.Actor, e.Action, e.TargetType, target, summary, e.Address); err != nil {
		return fmt.Errorf("store: write audit entry: %w", err)
	}
	return nil
}

// AuditFilter narrows ListAudit.
type AuditFilter struct {
	Actor  string
	Action string
	// Since (inclusive) and Until (exclusive) bound the time of the
	// entries; zero means unbounded.
	Since  time.Time
	Until  time.Time
	Limit  int
	Offset int
}

// where is the filter's WHERE clause and its arguments.
func (f AuditFilter) where(orgID string) (string, []any) {
	q := ` WHERE org_id = ?`
	args := []any{orgID}
	if f.Actor != "" {
		q += ` AND actor = ?`
		args = append(args, f.Actor)
	}
	if f.Action != "" {
		q += ` AND action = ?`
		args = append(args, f.Action)
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, millis(f.Since))
	}
	if !f.Until.IsZero() {
		q += ` AND at < ?`
		args = append(args, millis(f.Until))
	}
	return q, args
}

// PageAudit is one page of ListAudit with the number of entries the
// filter matches.
func (s *Store) PageAudit(ctx context.Context, orgID string, f AuditFilter) ([]AuditEntry, int, error) {
	where, args := f.where(orgID)
	var total int
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM audit_log`+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("store: count audit: %w", err)
	}
	entries, err := s.ListAudit(ctx, orgID, f)
	return entries, total, err
}

// ListAudit lists the organization's Audit Trail, newest first.
func (s *Store) ListAudit(ctx context.Context, orgID string, f AuditFilter) ([]AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	where, args := f.where(orgID)
	q := `SELECT id, org_id, at, actor, action, target_type, COALESCE(target_id, ''), summary, address FROM audit_log` + where +
		` ORDER BY at DESC, id DESC LIMIT ? OFFSET ?`
	args = append(args, f.Limit, max(f.Offset, 0))
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	var out []AuditEntry
	if err := eachRow(rows, nil, func(r *sql.Rows) error {
		var e AuditEntry
		var at int64
		var summary string
		if err := r.Scan(&e.ID, &e.OrgID, &at, &e.Actor, &e.Action, &e.TargetType, &e.TargetID, &summary, &e.Address); err != nil {
			return fmt.Errorf("store: list audit: %w", err)
		}
		e.At = fromMillis(at)
		if summary != "" && summary != "{}" {
			if err := json.Unmarshal([]byte(summary), &e.Summary); err != nil {
				return fmt.Errorf("store: audit summary: %w", err)
			}
		}
		out = append(out, e)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// InstanceEvent is one line of the instance's own Audit Trail: a change to
// what every organization shares (the vulnerability feeds, who is an
// instance operator). It belongs to no organization; instance operators
// read it (console, patchd admin audit list --instance).
type InstanceEvent struct {
	ID    string    `json:"id"`
	At    time.Time `json:"at"`
	Actor string    `json:"actor"`
	// Address is the client address of a console change; empty for the
	// command line and the server's own schedule.
	Address    string         `json:"address,omitempty"`
	Action     string         `json:"action"`
	TargetType string         `json:"targetType"`
	TargetID   string         `json:"targetId,omitempty"`
	Summary    map[string]any `json:"summary,omitempty"`
}

func (tx *Tx) insertInstanceEvent(ctx context.Context, e *InstanceEvent) error {
	if e.Actor == "" || e.Action == "" {
		return fmt.Errorf("store: an instance event needs an actor and an action")
	}
	target, summary, err := stampEvent(&e.ID, &e.At, e.TargetID, e.Summary)
	if err != nil {
		return fmt.Errorf("store: instance event summary: %w", err)
	}
	if _, err := tx.exec(ctx, `INSERT INTO instance_events (id, at, actor, address, action, target_type, target_id, summary)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, millis(e.At), e.Actor, e.Address, e.Action, e.TargetType, target, summary); err != nil {
		return fmt.Errorf("store: write instance event: %w", err)
	}
	return nil
}

// RecordInstanceEvent writes an instance event on its own (a change whose
// data was written by several transactions, such as a failed feed import).
func (s *Store) RecordInstanceEvent(ctx context.Context, e *InstanceEvent) error {
	return s.InTx(ctx, func(tx *Tx) error { return tx.insertInstanceEvent(ctx, e) })
}

// InstanceAudited runs fn in one write transaction and records e in the
// instance's Audit Trail in that same transaction.
func (s *Store) InstanceAudited(ctx context.Context, e *InstanceEvent, fn func(tx *Tx) error) error {
	return s.InTx(ctx, func(tx *Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return tx.insertInstanceEvent(ctx, e)
	})
}

// InstanceEventFilter narrows ListInstanceEvents.
type InstanceEventFilter struct {
	Actor string
	// Actions keeps the events of any of these actions (all when empty).
	Actions []string
	Since   time.Time
	Limit   int
}

// ListInstanceEvents lists the instance's Audit Trail, newest first.
func (s *Store) ListInstanceEvents(ctx context.Context, f InstanceEventFilter) ([]InstanceEvent, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT id, at, actor, address, action, target_type, COALESCE(target_id, ''), summary FROM instance_events WHERE 1 = 1`
	var args []any
	if f.Actor != "" {
		q += ` AND actor = ?`
		args = append(args, f.Actor)
	}
	if len(f.Actions) > 0 {
		q += ` AND action IN (` + placeholders(len(f.Actions)) + `)`
		args = append(args, anySlice(f.Actions)...)
	}
	if !f.Since.IsZero() {
		q += ` AND at >= ?`
		args = append(args, millis(f.Since))
	}
	q += ` ORDER BY at DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list instance events: %w", err)
	}
	var out []InstanceEvent
	if err := eachRow(rows, nil, func(r *sql.Rows) error {
		var e InstanceEvent
		var at int64
		var summary string
		if err := r.Scan(&e.ID, &at, &e.Actor, &e.Address, &e.Action, &e.TargetType, &e.TargetID, &summary); err != nil {
			return fmt.Errorf("store: list instance events: %w", err)
		}
		e.At = fromMillis(at)
		if summary != "" && summary != "{}" {
			if err := json.Unmarshal([]byte(summary), &e.Summary); err != nil {
				return fmt.Errorf("store: instance event summary: %w", err)
			}
		}
		out = append(out, e)
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}
