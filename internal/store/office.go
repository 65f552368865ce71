package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/patchd/patchd/internal/vulns/feeds"
)

// storeOfficeBuilds upserts Microsoft 365 Apps releases, one row per build
// and channel with the first day the channel got it.
func (tx *Tx) storeOfficeBuilds(ctx context.Context, list []feeds.OfficeBuild) error {
	if len(list) == 0 {
		return nil
	}
	first := map[[2]string]feeds.OfficeBuild{}
	for _, b := range list {
		k := [2]string{b.Build, b.Channel}
		if o, ok := first[k]; !ok || b.Released.Before(o.Released) {
			first[k] = b
		}
	}
	rows := make([][]any, 0, len(first))
	for _, b := range first {
		rows = append(rows, []any{b.Build, b.Channel, b.Version, millis(b.Released)})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i][0] != rows[j][0] {
			return rows[i][0].(string) < rows[j][0].(string)
		}
		return rows[i][1].(string) < rows[j][1].(string)
	})
	return tx.upsertRows(ctx, "office_builds", []string{"build", "channel", "version", "released"}, []string{"build", "channel"}, rows)
}

// ScanOfficeBuilds streams the stored Microsoft 365 Apps releases, to build
// the matcher's index.
func (s *Store) ScanOfficeBuilds(ctx context.Context, fn func(feeds.OfficeBuild)) error {
	rows, err := s.query(ctx, `SELECT build, channel, version, released FROM office_builds ORDER BY released, build, channel`)
	if err := eachRow(rows, err, func(r *sql.Rows) error {
		var b feeds.OfficeBuild
		var ms int64
		if err := r.Scan(&b.Build, &b.Channel, &b.Version, &ms); err != nil {
			return err
		}
		b.Released = time.UnixMilli(ms).UTC()
		fn(b)
		return nil
	}); err != nil {
		return fmt.Errorf("store: read Office builds: %w", err)
	}
	return nil
}
