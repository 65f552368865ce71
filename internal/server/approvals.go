package server

import (
	"context"
	"log/slog"
	"time"
)

// approvalInterval is how often delayed automatic approvals are applied.
const approvalInterval = time.Minute

// applyDueApprovals approves the update keys whose delayed automatic
// approval fell due, until ctx ends. Every replica runs it; the store
// takes each key once.
func (s *Server) applyDueApprovals(ctx context.Context) {
	tick := time.NewTicker(approvalInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := s.store.ApplyDueApprovals(ctx, time.Now())
		if err != nil && ctx.Err() == nil {
			slog.Warn("automatic approvals", "err", err)
		}
		if n > 0 {
			slog.Info("automatic approvals", "approved", n)
		}
	}
}
