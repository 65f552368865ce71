package store

import (
	"context"
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
}

func (tx *Tx) insertAudit(ctx context.Context, e *AuditEntry) error {
	if e.ID == "" {
		e.ID = NewID()
	}
	if e.At.IsZero() {
		e.At = time.Now().UTC()
	}
	summary := []byte("{}")
	if len(e.Summary) > 0 {
		var err error
		if summary, err = json.Marshal(e.Summary); err != nil {
			return fmt.Errorf("store: audit summary: %w", err)
		}
	}
	var target any
	if e.TargetID != "" {
		target = e.TargetID
	}
	if _, err := tx.exec(ctx, `INSERT INTO audit_log (id, org_id, at, actor, action, target_type, target_id, summary)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, e.ID, e.OrgID, millis(e.At), e.Actor, e.Action, e.TargetType, target, string(summary)); err != nil {
		return fmt.Errorf("store: write audit entry: %w", err)
	}
	return nil
}

// AuditFilter narrows ListAudit.
type AuditFilter struct {
	Actor  string
	Action string
	Since  time.Time
	Limit  int
}

// ListAudit lists the organization's Audit Trail, newest first.
func (s *Store) ListAudit(ctx context.Context, orgID string, f AuditFilter) ([]AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT id, org_id, at, actor, action, target_type, COALESCE(target_id, ''), summary FROM audit_log WHERE org_id = ?`
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
	q += ` ORDER BY at DESC, id DESC LIMIT ?`
	args = append(args, f.Limit)
	rows, err := s.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		var summary string
		if err := rows.Scan(&e.ID, &e.OrgID, &at, &e.Actor, &e.Action, &e.TargetType, &e.TargetID, &summary); err != nil {
			return nil, fmt.Errorf("store: list audit: %w", err)
		}
		e.At = fromMillis(at)
		if summary != "" && summary != "{}" {
			if err := json.Unmarshal([]byte(summary), &e.Summary); err != nil {
				return nil, fmt.Errorf("store: audit summary: %w", err)
			}
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
