package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Backlogs are the queues kept in the database that an operator watches,
// as one replica sees them at now (GET /metrics).
type Backlogs struct {
	// AlertOutbox counts the alert deliveries not done (waiting, being
	// sent or waiting for a retry); AlertOutboxAge is the age of the
	// oldest of them.
	AlertOutbox    int
	AlertOutboxAge time.Duration
	// AlertClaims counts the deliveries holder claims now.
	AlertClaims int
	// SchedulerLag is how long the oldest due automation slot has waited
	// to be fired (0: none is due).
	SchedulerLag time.Duration
	// MatchBacklog counts the endpoints waiting for the vulnerability
	// matcher; MatchBacklogAge is the oldest one's wait.
	MatchBacklog    int
	MatchBacklogAge time.Duration
	// Leases names the vulnerability leases (LeaseMatch, LeaseSync) and
	// whether holder holds each now.
	Leases map[string]bool
}

// Backlogs reads the database's queues; holder names this replica in the
// claims and leases.
func (s *Store) Backlogs(ctx context.Context, holder string, now time.Time) (Backlogs, error) {
	b := Backlogs{Leases: map[string]bool{LeaseMatch: false, LeaseSync: false}}
	age := func(oldest sql.NullInt64) time.Duration {
		if !oldest.Valid {
			return 0
		}
		return max(now.Sub(fromMillis(oldest.Int64)), 0)
	}
	var oldest sql.NullInt64
	if err := s.queryRow(ctx, `SELECT COUNT(*), MIN(created_at) FROM alert_outbox WHERE done_at IS NULL`).Scan(&b.AlertOutbox, &oldest); err != nil {
		return b, fmt.Errorf("store: alert outbox backlog: %w", err)
	}
	b.AlertOutboxAge = age(oldest)
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM alert_outbox WHERE done_at IS NULL AND claimed_by = ? AND claimed_until > ?`,
		holder, millis(now)).Scan(&b.AlertClaims); err != nil {
		return b, fmt.Errorf("store: alert claims: %w", err)
	}
	var due sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MIN(next_run_at) FROM automations WHERE enabled AND next_run_at IS NOT NULL AND next_run_at <= ?`,
		millis(now)).Scan(&due); err != nil {
		return b, fmt.Errorf("store: scheduler lag: %w", err)
	}
	b.SchedulerLag = age(due)
	if err := s.queryRow(ctx, `SELECT COUNT(*), MIN(marked_at) FROM vuln_dirty`).Scan(&b.MatchBacklog, &oldest); err != nil {
		return b, fmt.Errorf("store: matcher backlog: %w", err)
	}
	b.MatchBacklogAge = age(oldest)
	rows, err := s.query(ctx, `SELECT name FROM vuln_state WHERE name IN (?, ?) AND holder = ? AND lease_until > ?`,
		LeaseMatch, LeaseSync, holder, millis(now))
	if err := addToSet(b.Leases, rows, err); err != nil {
		return b, fmt.Errorf("store: leases: %w", err)
	}
	return b, nil
}
