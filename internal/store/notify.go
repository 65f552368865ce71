package store

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// commandsChannel is the PostgreSQL channel that carries the ids of
// endpoints that got commands, to the replica holding their long poll.
const commandsChannel = "patchd_commands"

// NotifyCommands tells the other replicas that these endpoints got
// commands. On SQLite there is one process and nothing to tell.
func (s *Store) NotifyCommands(ctx context.Context, endpointIDs []string) error {
	if s.engine != Postgres || len(endpointIDs) == 0 {
		return nil
	}
	// A payload must stay under 8000 bytes.
	var chunk []string
	size := 0
	send := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if _, err := s.write.ExecContext(ctx, `SELECT pg_notify($1, $2)`, commandsChannel, strings.Join(chunk, ",")); err != nil {
			return fmt.Errorf("store: notify commands: %w", err)
		}
		chunk, size = chunk[:0], 0
		return nil
	}
	for _, id := range endpointIDs {
		if size+len(id)+1 > 7000 {
			if err := send(); err != nil {
				return err
			}
		}
		chunk = append(chunk, id)
		size += len(id) + 1
	}
	return send()
}

// safetyNetInterval is how often ListenCommands also looks in the table for
// commands queued recently, in case a notification was lost (a dropped
// LISTEN connection) or was never sent (another process on SQLite).
const safetyNetInterval = 5 * time.Second

// ListenCommands calls wake with endpoint ids that got commands, until ctx
// ends: from PostgreSQL notifications, and from a periodic look at recently
// queued commands.
func (s *Store) ListenCommands(ctx context.Context, wake func(endpointIDs []string)) error {
	if s.engine == Postgres {
		go s.listenPostgres(ctx, wake)
	}
	since := time.Now().Add(-safetyNetInterval)
	tick := time.NewTicker(safetyNetInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now()
		ids, err := s.recentlyQueued(ctx, since.Add(-2*safetyNetInterval))
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			slog.Warn("store: look for queued commands", "err", err)
			continue
		}
		since = now
		if len(ids) > 0 {
			wake(ids)
		}
	}
}

func (s *Store) recentlyQueued(ctx context.Context, since time.Time) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT endpoint_id FROM commands WHERE status = 'PENDING' AND created_at >= ?`, millis(since))
	out, err := scanRows(rows, err, scanString)
	if err != nil {
		return nil, fmt.Errorf("store: recently queued: %w", err)
	}
	return out, nil
}

func (s *Store) listenPostgres(ctx context.Context, wake func([]string)) {
	b := reconnectBackoff{min: time.Second, max: 30 * time.Second}
	for ctx.Err() == nil {
		listened, err := s.listenOnce(ctx, wake)
		if ctx.Err() != nil {
			return
		}
		wait := b.after(listened)
		slog.Warn("store: LISTEN connection lost; reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// reconnectBackoff is the wait before connecting again: it doubles from
// min to max over attempts that fail, and starts from min again after a
// connection that worked (the back-off used to stay at its maximum after
// the first outage, so every later drop cost 30 s of lost wake-ups).
type reconnectBackoff struct {
	min, max, next time.Duration
}

// after answers the wait following an attempt; listened says the attempt
// connected and listened before it ended.
func (b *reconnectBackoff) after(listened bool) time.Duration {
	if listened || b.next == 0 {
		b.next = b.min
	}
	wait := b.next
	b.next = min(b.next*2, b.max)
	return wait
}

// listenOnce listens until the connection ends; listened says it
// connected and LISTEN succeeded.
func (s *Store) listenOnce(ctx context.Context, wake func([]string)) (listened bool, err error) {
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+commandsChannel); err != nil {
		return false, err
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		if n.Payload != "" {
			wake(strings.Split(n.Payload, ","))
		}
	}
}
