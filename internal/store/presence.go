package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
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

// ForgetPresenceWatermarks removes every replica's watermark row. Only a
// replica that keeps its watermark in memory on a database no other
// process serves calls it (at its start): every row is then a dead
// process's, whose unwritten check-ins died with it.
func (s *Store) ForgetPresenceWatermarks(ctx context.Context) error {
	if _, err := s.exec(ctx, `DELETE FROM presence_watermarks`); err != nil {
		return fmt.Errorf("store: forget presence watermarks: %w", err)
	}
	return nil
}

// localMarks holds the watermarks kept in memory by replicas of this
// process.
type localMarks struct {
	mu    sync.Mutex
	marks map[string]func(now time.Time) time.Time
}

// KeepPresenceLocal makes the watermark of replica the answer of mark,
// read in memory by PresenceWatermark, instead of a row the replica
// writes. That is for SQLite, which one process serves (queued commands
// wake long polls in that process only): there every reader of the
// watermark is in the process that accepted the check-ins, and an idle
// server would otherwise write a row every FlushInterval for nobody else.
// The returned function forgets the replica (at its stop, after its last
// flush).
func (s *Store) KeepPresenceLocal(replica string, mark func(now time.Time) time.Time) (forget func()) {
	l := &s.localMarks
	l.mu.Lock()
	if l.marks == nil {
		l.marks = map[string]func(time.Time) time.Time{}
	}
	l.marks[replica] = mark
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.marks, replica)
		l.mu.Unlock()
	}
}

// low answers the lowest in-memory watermark at now; ok is false when no
// replica keeps one.
func (l *localMarks) low(now time.Time) (through time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, mark := range l.marks {
		if w := mark(now); !ok || w.Before(through) {
			through, ok = w, true
		}
	}
	return through, ok
}

// PresenceWatermark answers the lowest watermark of the replicas heard from
// within PresenceStaleAfter of now, and of those of this process that keep
// theirs in memory: every check-in any live replica accepted before it is
// written. ok is false when there is none (nothing holds the evaluation
// back).
func (s *Store) PresenceWatermark(ctx context.Context, now time.Time) (through time.Time, ok bool, err error) {
	var low sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MIN(written_through) FROM presence_watermarks WHERE updated_at >= ?`,
		millis(now.Add(-PresenceStaleAfter))).Scan(&low); err != nil {
		return time.Time{}, false, fmt.Errorf("store: presence watermark: %w", err)
	}
	through, ok = s.localMarks.low(now)
	if low.Valid && (!ok || fromMillis(low.Int64).Before(through)) {
		through, ok = fromMillis(low.Int64), true
	}
	return through, ok, nil
}
