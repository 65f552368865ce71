package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

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
