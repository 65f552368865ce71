package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/patchd/patchd/internal/httpx"
	"github.com/patchd/patchd/internal/store"
)

// metricsHandler serves the registry's metrics; with a token, only to a
// request carrying "Authorization: Bearer <token>" (Prometheus'
// authorization or bearer_token_file settings), others answer 401.
func metricsHandler(reg *prometheus.Registry, token string) http.Handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	if token == "" {
		return h
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		scheme, given, _ := strings.Cut(auth, " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(given)))
		if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			h.ServeHTTP(w, r)
			return
		}
		challenge := `Bearer realm="patchd metrics"`
		if auth != "" {
			challenge += `, error="invalid_token"` // RFC 6750 3.1: no error code when no token was sent
		}
		httpx.WriteError(w, r, httpx.Errorf(http.StatusUnauthorized, "invalid_token", "/metrics needs the bearer token of --metrics-token").
			WithHeader("WWW-Authenticate", challenge))
	})
}

// securityHeaders adds to every answer X-Content-Type-Options: nosniff (a
// browser never reads a JSON answer, or an error's text, as HTML or a
// script), and Strict-Transport-Security to the answers of requests that
// came over TLS: browsers then refuse plain HTTP to the server for a year.
// Behind a TLS-terminating proxy the proxy sets the latter.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// dbCollector exports the database pools' statistics.
type dbCollector struct {
	s                                  *store.Store
	open, inUse, idle, waits, waitTime *prometheus.Desc
}

func newDBCollector(s *store.Store) *dbCollector {
	labels := []string{"pool"}
	return &dbCollector{s: s,
		open:  prometheus.NewDesc("patchd_db_connections_open", "Open database connections.", labels, nil),
		inUse: prometheus.NewDesc("patchd_db_connections_in_use", "Database connections in use.", labels, nil),
		idle:  prometheus.NewDesc("patchd_db_connections_idle", "Idle database connections.", labels, nil),
		waits: prometheus.NewDesc("patchd_db_connection_waits_total", "Times a request waited for a database connection.", labels, nil),
		waitTime: prometheus.NewDesc("patchd_db_connection_wait_seconds_total",
			"Time requests spent waiting for a database connection (the pool is too small or the database slow).", labels, nil),
	}
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.inUse
	ch <- c.idle
	ch <- c.waits
	ch <- c.waitTime
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	read, write := c.s.Stats()
	for _, p := range []struct {
		name              string
		open, inUse, idle int
		waits             int64
		waitTime          time.Duration
	}{{"read", read.OpenConnections, read.InUse, read.Idle, read.WaitCount, read.WaitDuration},
		{"write", write.OpenConnections, write.InUse, write.Idle, write.WaitCount, write.WaitDuration}} {
		if c.s.Engine() == store.Postgres && p.name == "write" {
			continue // one pool on PostgreSQL
		}
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(p.open), p.name)
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(p.inUse), p.name)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(p.idle), p.name)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.waits), p.name)
		ch <- prometheus.MustNewConstMetric(c.waitTime, prometheus.CounterValue, p.waitTime.Seconds(), p.name)
	}
}

// backlogCollector exports the queues an operator watches: the alert
// outbox, the scheduler's due slots, the vulnerability matcher's endpoints
// (all in the database, so every replica reports the same), the inventories
// this replica's agents wait on, and what this replica holds (alert
// delivery claims, the matcher's and the feed sync's leases).
type backlogCollector struct {
	srv                                    *Server
	outbox, outboxAge, claims, schedLag    *prometheus.Desc
	matchBacklog, matchAge, lease, invWait *prometheus.Desc
	up                                     *prometheus.Desc
}

func newBacklogCollector(srv *Server) *backlogCollector {
	return &backlogCollector{srv: srv,
		outbox:       prometheus.NewDesc("patchd_alert_outbox", "Alert deliveries not done: waiting, being sent or waiting for a retry (the whole cluster).", nil, nil),
		outboxAge:    prometheus.NewDesc("patchd_alert_outbox_oldest_seconds", "Age of the oldest alert delivery not done (0: none).", nil, nil),
		claims:       prometheus.NewDesc("patchd_alert_claims", "Alert deliveries this replica has claimed and is sending.", nil, nil),
		schedLag:     prometheus.NewDesc("patchd_scheduler_lag_seconds", "How long the oldest due automation slot has waited to be fired (0: none due).", nil, nil),
		matchBacklog: prometheus.NewDesc("patchd_vuln_match_backlog", "Endpoints whose inventory changed and wait for the vulnerability matcher.", nil, nil),
		matchAge:     prometheus.NewDesc("patchd_vuln_match_backlog_oldest_seconds", "How long the oldest endpoint has waited for the vulnerability matcher (0: none).", nil, nil),
		lease:        prometheus.NewDesc("patchd_lease_held", "1 when this replica holds the lease (match: the vulnerability matcher, sync: the feed sync).", []string{"lease"}, nil),
		invWait:      prometheus.NewDesc("patchd_inventory_queue", "Inventories this replica's agents uploaded that are queued or being written.", nil, nil),
		up:           prometheus.NewDesc("patchd_backlog_scrape_ok", "1 when the database's backlogs could be read for this scrape.", nil, nil),
	}
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.outbox, c.outboxAge, c.claims, c.schedLag, c.matchBacklog, c.matchAge, c.lease, c.invWait, c.up} {
		ch <- d
	}
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.invWait, float64(c.srv.ingest.Waiting()))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b, err := c.srv.store.Backlogs(ctx, c.srv.replica, time.Now())
	if err != nil {
		gauge(c.up, 0)
		return
	}
	gauge(c.up, 1)
	gauge(c.outbox, float64(b.AlertOutbox))
	gauge(c.outboxAge, b.AlertOutboxAge.Seconds())
	gauge(c.claims, float64(b.AlertClaims))
	gauge(c.schedLag, b.SchedulerLag.Seconds())
	gauge(c.matchBacklog, float64(b.MatchBacklog))
	gauge(c.matchAge, b.MatchBacklogAge.Seconds())
	for name, held := range b.Leases {
		v := 0.0
		if held {
			v = 1
		}
		gauge(c.lease, v, name)
	}
}

// registerPresenceMetrics exports the check-ins' write lag: accepted in
// memory vs written to the database by this replica, and how far back the
// offline alert evaluation looks because some replica's writes lag (see
// store.PresenceWatermark).
func (s *Server) registerPresenceMetrics() {
	s.registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "patchd_checkins_accepted_total",
			Help: "Agents' check-ins this replica accepted (kept in memory until its next flush)."},
			func() float64 { a, _ := s.hub.Counts(); return float64(a) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "patchd_checkins_written_total",
			Help: "Check-ins this replica wrote to the database (several of one endpoint between flushes are written as the last)."},
			func() float64 { _, w := s.hub.Counts(); return float64(w) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_checkin_write_lag_seconds",
			Help: "Age of the oldest check-in this replica accepted and has not written (0: all written)."},
			func() float64 { lag, _ := s.hub.WriteLag(time.Now()); return lag.Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_checkins_unwritten",
			Help: "Endpoints whose accepted check-in this replica has not written yet."},
			func() float64 { _, n := s.hub.WriteLag(time.Now()); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "patchd_offline_evaluation_delay_seconds",
			Help: "How far behind now the offline alerts are evaluated: the oldest check-in a live replica accepted and has not written (its presence watermark)."},
			func() float64 {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				now := time.Now()
				through, ok, err := s.store.PresenceWatermark(ctx, now)
				switch {
				case err != nil:
					return math.NaN()
				case !ok:
					return 0
				}
				return max(now.Sub(through), 0).Seconds()
			}),
	)
}

// replicationCollector exports what the store knows of the PostgreSQL
// primary and the --db-read standbys (nothing on SQLite).
type replicationCollector struct {
	s                                          *store.Store
	primary, primaryUp, failovers              *prometheus.Desc
	standbyUp, standbyUsable, standbyLag, lags *prometheus.Desc
	maxLag                                     *prometheus.Desc
}

func newReplicationCollector(s *store.Store) *replicationCollector {
	return &replicationCollector{s: s,
		primary:   prometheus.NewDesc("patchd_db_primary_info", "The PostgreSQL server this replica writes to (label server, host:port as connected), 1.", []string{"server"}, nil),
		primaryUp: prometheus.NewDesc("patchd_db_primary_up", "1 when the primary answered the last check (every second with --db-read, else every 5 s).", nil, nil),
		failovers: prometheus.NewDesc("patchd_db_failovers_total", "Times the server this replica writes to changed (another server, or the same address with another postmaster) since it started.", nil, nil),
		standbyUp: prometheus.NewDesc("patchd_db_standby_up", "1 when the --db-read standby answered the last check.", []string{"standby"}, nil),
		standbyUsable: prometheus.NewDesc("patchd_db_standby_usable",
			"1 when lists, reports and dashboards read from the --db-read standby: it answers and lags less than --db-read-max-lag.", []string{"standby"}, nil),
		standbyLag: prometheus.NewDesc("patchd_db_standby_lag_seconds", "How far the --db-read standby's replay is behind the primary, as this replica measures it.", []string{"standby"}, nil),
		maxLag:     prometheus.NewDesc("patchd_db_standby_max_lag_seconds", "--db-read-max-lag: past it a standby is skipped.", nil, nil),
		lags: prometheus.NewDesc("patchd_db_lag_tolerant_reads_total",
			"Reads of lists, reports, exports and dashboards, by the server that served them (standby, or primary when no standby was usable).", []string{"served_by"}, nil),
	}
}

func (c *replicationCollector) descs() []*prometheus.Desc {
	return []*prometheus.Desc{c.primary, c.primaryUp, c.failovers, c.standbyUp, c.standbyUsable, c.standbyLag, c.maxLag, c.lags}
}

func (c *replicationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs() {
		ch <- d
	}
}

func (c *replicationCollector) Collect(ch chan<- prometheus.Metric) {
	if c.s.Engine() != store.Postgres {
		return
	}
	r := c.s.Replication()
	if r.Primary != "" {
		ch <- prometheus.MustNewConstMetric(c.primary, prometheus.GaugeValue, 1, r.Primary)
	}
	ch <- prometheus.MustNewConstMetric(c.primaryUp, prometheus.GaugeValue, b2f(r.PrimaryUp))
	ch <- prometheus.MustNewConstMetric(c.failovers, prometheus.CounterValue, float64(r.Failovers))
	if len(r.Standbys) == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.maxLag, prometheus.GaugeValue, r.MaxLag.Seconds())
	for _, sb := range r.Standbys {
		ch <- prometheus.MustNewConstMetric(c.standbyUp, prometheus.GaugeValue, b2f(sb.Up), sb.Name)
		ch <- prometheus.MustNewConstMetric(c.standbyUsable, prometheus.GaugeValue, b2f(sb.Usable), sb.Name)
		if sb.Up {
			ch <- prometheus.MustNewConstMetric(c.standbyLag, prometheus.GaugeValue, sb.Lag.Seconds(), sb.Name)
		}
	}
	ch <- prometheus.MustNewConstMetric(c.lags, prometheus.CounterValue, float64(r.ReadsFromStandby), "standby")
	ch <- prometheus.MustNewConstMetric(c.lags, prometheus.CounterValue, float64(r.ReadsFromPrimary), "primary")
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// dbReadiness is the database part of /readyz on PostgreSQL: the server
// writes go to, the standbys reads may go to, their lag, failovers seen.
type dbReadiness struct {
	Writes       string             `json:"writes,omitempty"`
	WritesUp     bool               `json:"writes_up"`
	Reads        []string           `json:"reads"`
	Failovers    int64              `json:"failovers"`
	MaxLagSecond float64            `json:"max_lag_seconds,omitempty"`
	Standbys     []standbyReadiness `json:"standbys,omitempty"`
}

type standbyReadiness struct {
	Name       string  `json:"name"`
	Up         bool    `json:"up"`
	Usable     bool    `json:"usable"`
	LagSeconds float64 `json:"lag_seconds"`
	Reason     string  `json:"reason,omitempty"`
}

// dbReadinessOf answers the database part of /readyz, nil on SQLite.
// Reads names the servers lists and reports read from now: the usable
// standbys, else the primary.
func dbReadinessOf(s *store.Store) *dbReadiness {
	if s.Engine() != store.Postgres {
		return nil
	}
	r := s.Replication()
	out := &dbReadiness{Writes: r.Primary, WritesUp: r.PrimaryUp, Failovers: r.Failovers, Reads: []string{}}
	for _, sb := range r.Standbys {
		out.MaxLagSecond = r.MaxLag.Seconds()
		out.Standbys = append(out.Standbys, standbyReadiness{Name: sb.Name, Up: sb.Up, Usable: sb.Usable,
			LagSeconds: math.Round(sb.Lag.Seconds()*1000) / 1000, Reason: sb.Err})
		if sb.Usable {
			out.Reads = append(out.Reads, sb.Name)
		}
	}
	if len(out.Reads) == 0 && r.Primary != "" {
		out.Reads = append(out.Reads, r.Primary)
	}
	return out
}
