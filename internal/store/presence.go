package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// PresenceStaleAfter is how old a replica's presence heartbeat may be
// before the offline evaluation takes the replica for dead and stops
// waiting for its unwritten check-ins (they died with it; its agents check
// in with another replica). A replica that stops cleanly removes its row at
// once; one that died holds the offline alerts back for at most this long.
const PresenceStaleAfter = 5 * time.Minute

// PresenceMark is a replica's presence watermark: every check-in it
// accepted before WrittenThrough is written; At is the heartbeat that
// tells the replica is alive.
type PresenceMark struct {
	Replica            string
	WrittenThrough, At time.Time
}

// PublishPresenceWatermark records that every check-in the replica accepted
// before writtenThrough is written (heartbeat at now), and forgets the rows
// of replicas silent for a day. A replica with check-ins to write records
// it with them instead (RecordCheckins).
func (s *Store) PublishPresenceWatermark(ctx context.Context, replica string, writtenThrough, now time.Time) error {
	return s.InTx(ctx, func(tx *Tx) error {
		return tx.publishPresenceWatermark(ctx, PresenceMark{Replica: replica, WrittenThrough: writtenThrough, At: now})
	})
}

func (tx *Tx) publishPresenceWatermark(ctx context.Context, m PresenceMark) error {
	if _, err := tx.exec(ctx, `INSERT INTO presence_watermarks (replica_id, written_through, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (replica_id) DO UPDATE SET written_through = excluded.written_through, updated_at = excluded.updated_at`,
		m.Replica, millis(m.WrittenThrough), millis(m.At)); err != nil {
		return fmt.Errorf("store: publish presence watermark: %w", err)
	}
	if _, err := tx.exec(ctx, `DELETE FROM presence_watermarks WHERE updated_at < ?`, millis(m.At.Add(-24*time.Hour))); err != nil {
		return fmt.Errorf("store: forget old presence watermarks: %w", err)
	}
	return nil
}

// DropPresenceWatermark removes a stopping replica's row after its last
// flush: nothing it accepted is left unwritten.
func (s *Store) DropPresenceWatermark(ctx context.Context, replica string) error {
	if _, err := s.exec(ctx, `DELETE FROM presence_watermarks WHERE replica_id = ?`, replica); err != nil {
		return fmt.Errorf("store: drop presence watermark: %w", err)
	}
	return nil
}

// PresenceWatermark answers the lowest watermark of the replicas heard from
// within PresenceStaleAfter of now: every check-in any live replica
// accepted before it is written. ok is false when no replica published one
// (nothing holds the evaluation back).
func (s *Store) PresenceWatermark(ctx context.Context, now time.Time) (through time.Time, ok bool, err error) {
	var low sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MIN(written_through) FROM presence_watermarks WHERE updated_at >= ?`,
		millis(now.Add(-PresenceStaleAfter))).Scan(&low); err != nil {
		return time.Time{}, false, fmt.Errorf("store: presence watermark: %w", err)
	}
	if !low.Valid {
		return time.Time{}, false, nil
	}
	return fromMillis(low.Int64), true, nil
}
