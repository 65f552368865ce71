package reports

import (
	"context"
	"fmt"
	"time"

	"github.com/patchd/patchd/internal/store"
)

// Count counts the rows the report key shows for an organization at a
// time, reading them as the report's JSON and CSV answers do (REPORT_ROWS
// alert rules watch it).
func Count(ctx context.Context, st *store.Store, orgID, key string, now, connectedSince time.Time) (int, error) {
	def, ok := Lookup(key)
	if !ok {
		return 0, fmt.Errorf("reports: unknown report %q", key)
	}
	run := def.Open(Env{Store: st, OrgID: orgID, Now: now, ConnectedSince: connectedSince})
	run.Streamed()
	n := 0
	for _, err := range run.Rows(ctx) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}
