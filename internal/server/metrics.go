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

// hsts adds Strict-Transport-Security to the answers of requests that came
// over TLS (patchd serve --tls-cert): browsers then refuse plain HTTP to the
// server for a year. Behind a TLS-terminating proxy the proxy sets it.
func hsts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// dbCollector exports the database pools' statistics.
type dbCollector struct {
	s                        *store.Store
	open, inUse, idle, waits *prometheus.Desc
}

func newDBCollector(s *store.Store) *dbCollector {
	labels := []string{"pool"}
	return &dbCollector{s: s,
		open:  prometheus.NewDesc("patchd_db_connections_open", "Open database connections.", labels, nil),
		inUse: prometheus.NewDesc("patchd_db_connections_in_use", "Database connections in use.", labels, nil),
		idle:  prometheus.NewDesc("patchd_db_connections_idle", "Idle database connections.", labels, nil),
		waits: prometheus.NewDesc("patchd_db_connection_waits_total", "Times a request waited for a database connection.", labels, nil),
	}
}

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.inUse
	ch <- c.idle
	ch <- c.waits
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	read, write := c.s.Stats()
	for _, p := range []struct {
		name              string
		open, inUse, idle int
		waits             int64
	}{{"read", read.OpenConnections, read.InUse, read.Idle, read.WaitCount}, {"write", write.OpenConnections, write.InUse, write.Idle, write.WaitCount}} {
		if c.s.Engine() == store.Postgres && p.name == "write" {
			continue // one pool on PostgreSQL
		}
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(p.open), p.name)
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(p.inUse), p.name)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(p.idle), p.name)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.waits), p.name)
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
