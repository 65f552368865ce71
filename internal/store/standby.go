package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/patchd/patchd/internal/dberr"
)

// Reads from standbys (PostgreSQL). A request that tolerates a little lag
// (lists, reports, exports, dashboards) marks its context with MayLag; the
// store's reads under such a context go to a streaming standby of
// Options.ReadURLs whose lag is within Options.ReadMaxLag, and to the
// primary when none is. Everything else (writes, reads inside a write,
// reads whose context is not marked: the agent protocol, the scheduler,
// the alert outbox, an answer that must show its own write) stays on the
// primary.
//
// The lag of a standby is measured against the primary's WAL positions,
// sampled each check: it is the age of the newest sample the standby has
// replayed. An idle primary writes nothing and its samples stay equal, so
// a caught-up standby is at lag zero however old its last replayed
// transaction is. With the primary unreachable the samples stop, and a
// standby that replayed the last of them is still current: the lag counts
// up to the primary's last sample, not to now.

// DefaultReadMaxLag is the lag past which a standby is skipped when
// Options.ReadMaxLag is zero.
const DefaultReadMaxLag = 10 * time.Second

type mayLagKey struct{}

// MayLag marks ctx's reads as tolerating a standby's lag (see
// Options.ReadURLs). Without standbys it changes nothing.
func MayLag(ctx context.Context) context.Context {
	return context.WithValue(ctx, mayLagKey{}, true)
}

// lagTolerated tells whether ctx was marked by MayLag.
func lagTolerated(ctx context.Context) bool {
	v, _ := ctx.Value(mayLagKey{}).(bool)
	return v
}

// standby is one database of Options.ReadURLs.
type standby struct {
	name string // host:port, for metrics and /readyz
	db   *sql.DB
	mu   sync.Mutex
	st   StandbyStatus
}

// usable tells whether the last check found the standby up and within the
// lag allowed.
func (sb *standby) usable() bool {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	return sb.st.Usable
}

// lsnSample is the primary's WAL position at a time.
type lsnSample struct {
	at  time.Time
	lsn uint64
}

// replication watches the primary and the standbys.
type replication struct {
	maxLag, every time.Duration
	standbys      []*standby
	next          atomic.Uint32
	// fromStandby and fromPrimary count the lag-tolerant reads each
	// served (the primary: no standby was usable, or the one chosen
	// failed).
	fromStandby, fromPrimary atomic.Int64
	failovers                atomic.Int64
	closed                   sync.Once // Store.Close may be called more than once

	mu       sync.Mutex
	samples  []lsnSample // oldest first
	primary  string      // the server writes go to, host:port
	identity string      // primary + its postmaster's start time
	primUp   bool
	checked  bool

	stop chan struct{}
	done chan struct{}
}

// StandbyStatus is what the last check found of a standby.
type StandbyStatus struct {
	Name string
	// Up: the standby answered the last check.
	Up bool
	// Lag is its replay lag (meaningful when Up).
	Lag time.Duration
	// Usable: up and within the allowed lag; lag-tolerant reads go to it.
	Usable bool
	// Err is why it is not usable, when it is not.
	Err string
}

// Replication is what the store knows of the PostgreSQL servers it uses.
type Replication struct {
	// Primary is the server writes go to (host:port; empty before the
	// first check or while it is unreachable and was never reached).
	Primary string
	// PrimaryUp: the primary answered the last check.
	PrimaryUp bool
	// Failovers counts the times the primary changed (another server, or
	// the same address with another postmaster) since the store opened.
	Failovers int64
	// Standbys are those of Options.ReadURLs, in their order.
	Standbys []StandbyStatus
	// MaxLag is the lag past which a standby is skipped.
	MaxLag time.Duration
	// ReadsFromStandby and ReadsFromPrimary count lag-tolerant reads by
	// where they were served.
	ReadsFromStandby, ReadsFromPrimary int64
}

// Replication answers what the last check found; the zero value on SQLite.
func (s *Store) Replication() Replication {
	r := s.repl
	if r == nil {
		return Replication{}
	}
	r.mu.Lock()
	out := Replication{Primary: r.primary, PrimaryUp: r.primUp, MaxLag: r.maxLag}
	r.mu.Unlock()
	out.Failovers = r.failovers.Load()
	out.ReadsFromStandby, out.ReadsFromPrimary = r.fromStandby.Load(), r.fromPrimary.Load()
	for _, sb := range r.standbys {
		sb.mu.Lock()
		out.Standbys = append(out.Standbys, sb.st)
		sb.mu.Unlock()
	}
	return out
}

// openReplication opens the standbys' pools and starts the checks (on
// PostgreSQL, also without standbys: the primary's changes are counted).
func (s *Store) openReplication(opt Options) error {
	r := &replication{maxLag: opt.ReadMaxLag, every: opt.ReadCheckEvery, stop: make(chan struct{}), done: make(chan struct{})}
	if r.maxLag <= 0 {
		r.maxLag = DefaultReadMaxLag
	}
	if r.every <= 0 {
		r.every = min(time.Second, r.maxLag/4)
		if len(opt.ReadURLs) == 0 {
			r.every = 5 * time.Second
		}
	}
	for _, u := range opt.ReadURLs {
		if !strings.HasPrefix(u, "postgres://") && !strings.HasPrefix(u, "postgresql://") {
			r.closeStandbys()
			return fmt.Errorf("store: --db-read %q: a standby is a postgres:// URL", redactURL(u))
		}
		db, err := sql.Open("pgx", u)
		if err != nil {
			r.closeStandbys()
			return fmt.Errorf("store: open standby %s: %w", redactURL(u), err)
		}
		db.SetMaxOpenConns(opt.MaxConns)
		db.SetMaxIdleConns(opt.MaxConns)
		db.SetConnMaxIdleTime(5 * time.Minute)
		sb := &standby{name: hostPort(u), db: db}
		sb.st = StandbyStatus{Name: sb.name, Err: "not checked yet"}
		r.standbys = append(r.standbys, sb)
	}
	s.repl = r
	r.check(s)
	go r.run(s)
	return nil
}

func (r *replication) closeStandbys() {
	for _, sb := range r.standbys {
		sb.db.Close()
	}
}

// close stops the checks and closes the standbys' pools.
func (r *replication) close() {
	if r == nil {
		return
	}
	r.closed.Do(func() {
		close(r.stop)
		<-r.done
		r.closeStandbys()
	})
}

func (r *replication) run(s *Store) {
	defer close(r.done)
	t := time.NewTicker(r.every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			r.check(s)
		}
	}
}

// check samples the primary's WAL position, then measures each standby.
func (r *replication) check(s *Store) {
	timeout := max(2*time.Second, r.every)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	lsn, server, started, err := primaryPosition(ctx, s.write)
	cancel()
	now := time.Now()
	r.mu.Lock()
	r.primUp = err == nil
	if err == nil {
		if id := server + "@" + started; r.identity != "" && id != r.identity {
			r.failovers.Add(1)
			slog.Warn("store: the primary changed", "from", r.primary, "to", server)
		}
		r.primary, r.identity = server, server+"@"+started
		r.samples = append(r.samples, lsnSample{at: now, lsn: lsn})
		// Keep the samples of twice the allowed lag: a standby behind the
		// oldest is past it anyway.
		for len(r.samples) > 2 && now.Sub(r.samples[1].at) > 2*r.maxLag {
			r.samples = r.samples[1:]
		}
	}
	samples, primUp := r.samples, r.primUp
	r.checked = true
	r.mu.Unlock()
	for _, sb := range r.standbys {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		st := r.measure(ctx, sb, samples, primUp, now)
		cancel()
		sb.mu.Lock()
		was := sb.st
		sb.st = st
		sb.mu.Unlock()
		if was.Usable != st.Usable {
			if st.Usable {
				slog.Info("store: standby usable for reads", "standby", sb.name, "lag", st.Lag)
			} else {
				slog.Warn("store: standby skipped for reads", "standby", sb.name, "reason", st.Err)
			}
		}
	}
}

// primaryPosition answers the WAL position of the server db writes to, its
// address and its postmaster's start time.
func primaryPosition(ctx context.Context, db *sql.DB) (lsn uint64, server, started string, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, "", "", err
	}
	defer conn.Close()
	var text string
	if err := conn.QueryRowContext(ctx, `SELECT pg_current_wal_lsn()::text, pg_postmaster_start_time()::text`).Scan(&text, &started); err != nil {
		return 0, "", "", err
	}
	if lsn, err = parseLSN(text); err != nil {
		return 0, "", "", err
	}
	server = remoteAddr(conn)
	return lsn, server, started, nil
}

// remoteAddr is the address of the server conn talks to.
func remoteAddr(conn *sql.Conn) string {
	var addr string
	_ = conn.Raw(func(dc any) error {
		if c, ok := dc.(*stdlib.Conn); ok {
			if nc := c.Conn().PgConn().Conn(); nc != nil {
				addr = nc.RemoteAddr().String()
			}
		}
		return nil
	})
	return addr
}

// measure checks one standby against the primary's samples.
func (r *replication) measure(ctx context.Context, sb *standby, samples []lsnSample, primUp bool, now time.Time) StandbyStatus {
	st := StandbyStatus{Name: sb.name}
	var recovering bool
	var replay, receive string
	var xactAge float64
	err := sb.db.QueryRowContext(ctx, `SELECT pg_is_in_recovery(), COALESCE(pg_last_wal_replay_lsn()::text, ''),
		COALESCE(pg_last_wal_receive_lsn()::text, ''),
		COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp())::float8, 0)`).Scan(&recovering, &replay, &receive, &xactAge)
	if err != nil {
		st.Err = err.Error()
		return st
	}
	st.Up = true
	if !recovering {
		// Promoted (or a primary given as a standby): current by definition.
		st.Usable = true
		return st
	}
	replayed, err := parseLSN(replay)
	if err != nil {
		st.Err = "replay position: " + err.Error()
		return st
	}
	st.Lag = lagBehind(samples, replayed, primUp, now)
	if len(samples) == 0 && receive != replay {
		// The primary never answered: still replaying what it received,
		// the age of its last replayed transaction is all there is.
		st.Lag = time.Duration(xactAge * float64(time.Second))
	}
	if st.Lag > r.maxLag {
		st.Err = fmt.Sprintf("lag %s past %s", st.Lag.Round(time.Millisecond), r.maxLag)
		return st
	}
	st.Usable = true
	return st
}

// lagBehind is how far behind the primary a standby that replayed up to
// replayed is: the age of the newest sample it has replayed, counted up to
// now when the primary answers and up to its last sample when it does not;
// behind every sample, at least the age of the oldest one.
func lagBehind(samples []lsnSample, replayed uint64, primUp bool, now time.Time) time.Duration {
	if len(samples) == 0 {
		return 0
	}
	ref := now
	if !primUp {
		ref = samples[len(samples)-1].at
	}
	for i := len(samples) - 1; i >= 0; i-- {
		if samples[i].lsn <= replayed {
			return max(0, ref.Sub(samples[i].at))
		}
	}
	return max(0, ref.Sub(samples[0].at))
}

// parseLSN reads a pg_lsn's text, "16/B374D848".
func parseLSN(text string) (uint64, error) {
	hi, lo, ok := strings.Cut(text, "/")
	if !ok {
		return 0, fmt.Errorf("not a WAL position: %q", text)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not a WAL position: %q", text)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not a WAL position: %q", text)
	}
	return h<<32 | l, nil
}

// reader answers the pool a read under ctx goes to: a usable standby
// (returned too) when ctx tolerates lag, else the primary's.
func (s *Store) reader(ctx context.Context) (*sql.DB, *standby) {
	r := s.repl
	if r == nil || len(r.standbys) == 0 || !lagTolerated(ctx) {
		return s.read, nil
	}
	n := len(r.standbys)
	start := int(r.next.Add(1))
	for i := range n {
		if sb := r.standbys[(start+i)%n]; sb.usable() {
			r.fromStandby.Add(1)
			return sb.db, sb
		}
	}
	r.fromPrimary.Add(1)
	return s.read, nil
}

// failedOn tells whether a read that failed on standby sb is to be served
// by the primary instead: the standby is unreachable (it is skipped until
// the next check finds it back), or the read wrote (a standby is
// read-only). The read is counted as the primary's.
func (s *Store) failedOn(sb *standby, err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var pg *pgconn.PgError
	readOnly := errors.As(err, &pg) && pg.Code == "25006"
	if !readOnly && !dberr.IsUnavailable(err) {
		return false
	}
	if !readOnly {
		sb.mu.Lock()
		sb.st.Usable, sb.st.Err = false, err.Error()
		sb.mu.Unlock()
		slog.Warn("store: standby skipped for reads", "standby", sb.name, "err", err)
	}
	s.repl.fromStandby.Add(-1)
	s.repl.fromPrimary.Add(1)
	return true
}

// hostPort names a database URL by its host(s) and port(s), without its
// credentials.
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "standby"
	}
	return u.Host
}

// redactURL is a URL without its password, for messages.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
