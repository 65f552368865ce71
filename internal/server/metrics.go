package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/patchd/patchd/internal/store"
)

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
