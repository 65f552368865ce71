package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/patchd/patchd/internal/dberr"
	"time"
)

// RequestScan records a "scan now" for an endpoint of the organization:
// its agent refreshes its package lists and sends its inventory when it
// gets the request (the next check-in, at once when a long poll is held).
// A request already waiting is kept. dberr.ErrNotFound when the endpoint is not
// the organization's.
func (s *Store) RequestScan(ctx context.Context, e *AuditEntry, orgID, id string, now time.Time) error {
	return s.Audited(ctx, e, func(tx *Tx) error {
		var name string
		err := tx.queryRow(ctx, `SELECT COALESCE(display_name, hostname) FROM endpoints WHERE org_id = ? AND id = ?`, orgID, id).Scan(&name)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("store: endpoint %s: %w", id, dberr.ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("store: request scan: %w", err)
		}
		e.Summary = map[string]any{"name": name}
		if _, err := tx.exec(ctx, `UPDATE endpoints SET scan_requested_at = ? WHERE id = ? AND scan_requested_at IS NULL`, millis(now), id); err != nil {
			return fmt.Errorf("store: request scan: %w", err)
		}
		return nil
	})
}

// TakeScanRequest clears the endpoint's waiting "scan now" and tells
// whether there was one: of two check-ins at once, one gets it.
func (s *Store) TakeScanRequest(ctx context.Context, endpointID string) (bool, error) {
	res, err := s.exec(ctx, `UPDATE endpoints SET scan_requested_at = NULL WHERE id = ? AND scan_requested_at IS NOT NULL`, endpointID)
	if err != nil {
		return false, fmt.Errorf("store: take scan request: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: take scan request: %w", err)
	}
	return n > 0, nil
}
