package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
	"github.com/patchd/patchd/internal/version"
)

// TestOperationsMetrics: the check-in write lag follows what the replica
// accepted and wrote, and the database's backlogs are read at each scrape.
func TestOperationsMetrics(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	srv := New(config.Config{}, s)
	defer srv.Close()
	if v := metricValue(t, srv, "patchd_backlog_scrape_ok", nil); v != 1 {
		t.Fatalf("patchd_backlog_scrape_ok = %v", v)
	}
	for _, name := range []string{"patchd_alert_outbox", "patchd_alert_outbox_oldest_seconds", "patchd_alert_claims", "patchd_scheduler_lag_seconds",
		"patchd_vuln_match_backlog", "patchd_vuln_match_backlog_oldest_seconds", "patchd_inventory_queue", "patchd_checkin_write_lag_seconds",
		"patchd_checkins_unwritten", "patchd_offline_evaluation_delay_seconds"} {
		if v := metricValue(t, srv, name, nil); v != 0 {
			t.Errorf("%s = %v on an idle server, want 0", name, v)
		}
	}
	for _, lease := range []string{store.LeaseMatch, store.LeaseSync} {
		if v := metricValue(t, srv, "patchd_lease_held", map[string]string{"lease": lease}); v != 0 {
			t.Errorf("patchd_lease_held{lease=%q} = %v before the workers ran", lease, v)
		}
	}
	srv.hub.Seen(store.Checkin{EndpointID: store.NewID(), At: time.Now().Add(-time.Minute)})
	if v := metricValue(t, srv, "patchd_checkin_write_lag_seconds", nil); v < 60 {
		t.Errorf("write lag %v s with a check-in of a minute ago unwritten", v)
	}
	if v := metricValue(t, srv, "patchd_checkins_unwritten", nil); v != 1 {
		t.Errorf("patchd_checkins_unwritten = %v, want 1", v)
	}
	if err := srv.FlushCheckins(context.Background()); err != nil {
		t.Fatal(err)
	}
	if v := metricValue(t, srv, "patchd_checkin_write_lag_seconds", nil); v != 0 {
		t.Errorf("write lag %v s after the flush", v)
	}
	if a, w := metricValue(t, srv, "patchd_checkins_accepted_total", nil), metricValue(t, srv, "patchd_checkins_written_total", nil); a != 1 || w != 1 {
		t.Errorf("accepted %v, written %v; want 1, 1", a, w)
	}
}

// metricSelector finds the metric names of a PromQL expression: an
// identifier followed by a label matcher or a range, or any patchd_ name.
var metricSelector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]|\b(patchd_[a-z0-9_]+)`)

// TestDashboardAndRulesNameExportedMetrics: every metric the Grafana
// dashboard (docs/grafana/patchd.json) and the alerting rules
// (docs/prometheus/patchd-rules.yml) query is one a replica exports.
func TestDashboardAndRulesNameExportedMetrics(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	srv := New(config.Config{}, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.RunWorkers(ctx); close(done) }()
	defer func() { cancel(); <-done; srv.Close() }()
	srv.Handler().ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/healthz", nil))

	exported := map[string]bool{"up": true} // Prometheus' own, per target
	for deadline := time.Now().Add(time.Minute); !exported["patchd_alert_deliveries_total"]; {
		if time.Now().After(deadline) {
			t.Fatal("the alert workers' metrics are not registered")
		}
		time.Sleep(10 * time.Millisecond)
		families, err := srv.registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			exported[f.GetName()] = true
			if f.GetType() == dto.MetricType_HISTOGRAM || f.GetType() == dto.MetricType_SUMMARY {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					exported[f.GetName()+suffix] = true
				}
			}
		}
	}

	// The replication metrics are exported on PostgreSQL only, the
	// standbys' with --db-read (TestStandbyReadsAndFailover runs them).
	for _, d := range newReplicationCollector(s).descs() {
		name, _, _ := strings.Cut(strings.TrimPrefix(d.String(), `Desc{fqName: "`), `"`)
		exported[name] = true
	}

	var exprs []string
	b, err := os.ReadFile("../../docs/grafana/patchd.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("docs/grafana/patchd.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("panel %q: a target without expr", p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	if len(exprs) < 20 {
		t.Fatalf("the dashboard has %d queries", len(exprs))
	}
	rules, err := os.ReadFile("../../docs/prometheus/patchd-rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.Lines(string(rules)) {
		if e, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:"); ok {
			exprs = append(exprs, e)
			n++
		}
	}
	if n < 10 {
		t.Fatalf("the rules have %d expressions", n)
	}

	unknown := map[string]bool{}
	for _, e := range exprs {
		named := 0
		for _, m := range metricSelector.FindAllStringSubmatch(e, -1) {
			name := m[1] + m[2]
			if name == "label_values" {
				continue
			}
			named++
			if !exported[name] {
				unknown[name] = true
			}
		}
		if named == 0 {
			t.Errorf("no metric found in %q", e)
		}
	}
	if len(unknown) != 0 {
		var list []string
		for name := range unknown {
			list = append(list, name)
		}
		sort.Strings(list)
		t.Errorf("queried but not exported: %v", list)
	}
}

// TestBuildInfoMetric: patchd_build_info is 1 and labelled with what the
// binary was built as (patchd version prints the same).
func TestBuildInfoMetric(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	srv := New(config.Config{}, s)
	defer srv.Close()
	b := version.Get()
	labels := map[string]string{"version": b.Version, "commit": b.Commit, "date": b.Date, "goversion": runtime.Version()}
	if v := metricValue(t, srv, "patchd_build_info", labels); v != 1 {
		t.Fatalf("patchd_build_info%v = %v, want 1", labels, v)
	}
}
