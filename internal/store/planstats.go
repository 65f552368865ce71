package store

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// planStats keeps PostgreSQL's planner statistics up with a fleet that
// grows from few endpoints to many.
//
// pgx prepares each statement on each connection, and after five runs
// PostgreSQL keeps a generic plan made with the statistics of that moment
// until the tables it reads are analyzed. A plan made while endpoints was
// empty costs every index on it alike, and picks one of the (org_id, …)
// indexes for `WHERE org_id = ? AND machine_uid = ?` or `WHERE id = ? AND
// org_id = ?`: each enrollment and each inventory then read every endpoint
// of the organization. Autovacuum analyzes a database at most once a
// minute (autovacuum_naptime), while 10,000 endpoints enroll in about one:
// that lookup alone took a quarter of PostgreSQL's time in the enrollment.
//
// So the store analyzes its tables itself (those of its schema: a database
// may hold others, and the tests' schemas share one) whenever the endpoints
// this process has enrolled make the table four times what the planner
// last knew (the first time at firstAnalysis): six times on the way to
// 100,000 endpoints. ANALYZE invalidates the cached plans; the next run of
// each statement plans it again. An enrollment that crosses the mark while
// an analysis runs leaves it to the next one.
type planStats struct {
	mu       sync.Mutex
	known    int64 // endpoints when last analyzed (the planner's count at open)
	count    int64 // endpoints now, as far as this process knows
	running  bool
	wg       sync.WaitGroup
	ctx      context.Context // ends with the store
	cancel   context.CancelFunc
	analyzes int // analyses run, for tests
}

// firstAnalysis is the endpoint count at which a database the planner
// knows empty is analyzed first: enough rows for the statistics to show
// what an organization's rows look like, early in an enrollment.
const firstAnalysis = 64

// openPlanStats starts with the planner's own count of endpoints.
func (s *Store) openPlanStats(ctx context.Context) error {
	var known float64
	if err := s.read.QueryRowContext(ctx, `SELECT COALESCE((SELECT GREATEST(reltuples, 0) FROM pg_class WHERE oid = to_regclass('endpoints')), 0)`).Scan(&known); err != nil {
		return err
	}
	p := &planStats{known: int64(known), count: int64(known)}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	s.planStats = p
	return nil
}

// endpointCreated counts an enrolled endpoint and analyzes the store's
// tables in the background when the count has grown enough. p is nil on
// SQLite, whose planner reads its tables' sizes as they are.
func (p *planStats) endpointCreated(s *Store) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.count++
	if p.running || p.count < max(firstAnalysis, 4*p.known) {
		return
	}
	p.running = true
	count := p.count
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		err := s.analyze(p.ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.running = false
		if err != nil {
			if p.ctx.Err() == nil {
				slog.Warn("store: analyze", "err", err)
			}
			return
		}
		p.known = count
		p.analyzes++
	}()
}

// analyze runs ANALYZE on the tables of the store's schema.
func (s *Store) analyze(ctx context.Context) error {
	rows, err := s.write.QueryContext(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	tables, err := scanRows(rows, err, func(r rowScanner) (string, error) {
		name, err := scanString(r)
		return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`, err
	})
	if err != nil || len(tables) == 0 {
		return err
	}
	_, err = s.write.ExecContext(ctx, `ANALYZE `+strings.Join(tables, ", "))
	return err
}

// close stops an analysis under way and waits for it.
func (p *planStats) close() {
	if p == nil {
		return
	}
	p.cancel()
	p.wg.Wait()
}
