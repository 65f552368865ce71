package server

import (
	"context"
	"log/slog"
	"time"
)

// complianceInterval is how often every organization's compliance is
// recorded as its entry of the day (the day keeps the last one).
const complianceInterval = 10 * time.Minute

// recordCompliance records the organizations' compliance at start and then
// every complianceInterval until ctx ends. Every replica runs it; a day's
// entry is replaced whole, so they do not conflict.
func (s *Server) recordCompliance(ctx context.Context) {
	tick := time.NewTicker(complianceInterval)
	defer tick.Stop()
	for {
		if _, err := s.store.RecordCompliance(ctx, time.Now()); err != nil && ctx.Err() == nil {
			slog.Warn("compliance history", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
