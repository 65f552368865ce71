package server

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/store/storetest"
)

// metricValue answers a gathered metric's value for the labels, or -1.
func metricValue(t *testing.T, srv *Server, name string, labels map[string]string) float64 {
	t.Helper()
	families, err := srv.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if want, ok := labels[l.GetName()]; ok && want != l.GetValue() {
					continue next
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// TestAlertDeliveryMetrics: a delivery that fails for good counts as
// failed, one queued again as retry, and the gauge counts the retry
// waiting for its back-off.
func TestAlertDeliveryMetrics(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	org, err := admin.CreateOrg(ctx, s, "Acme", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	srv := New(config.Config{AllowPrivateWebhooks: true}, s)
	t.Cleanup(srv.Close)
	for _, minutes := range []int{0, 30} {
		// Nothing listens on port 1: every attempt fails.
		in := alerts.Rule{Name: "down", Trigger: alerts.NewEndpoint, WebhookURL: "https://127.0.0.1:1/hook", WebhookRetryMinutes: minutes}
		if err := in.Check(); err != nil {
			t.Fatal(err)
		}
		r, err := s.CreateAlertRule(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "test", Action: "alert.create", TargetType: "alert"}, org.ID, in, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := metricValue(t, srv, "patchd_alert_pending_retries", nil); got != 0 {
		t.Fatalf("pending retries before any attempt: %v", got)
	}
	done := make(chan struct{})
	go func() { srv.runAlertWorkers(ctx); close(done) }()
	deadline := time.Now().Add(time.Minute)
	for {
		failed := metricValue(t, srv, "patchd_alert_deliveries_total", map[string]string{"channel": "webhook", "outcome": "failed"})
		retry := metricValue(t, srv, "patchd_alert_deliveries_total", map[string]string{"channel": "webhook", "outcome": "retry"})
		pending := metricValue(t, srv, "patchd_alert_pending_retries", nil)
		if failed == 1 && retry >= 1 && pending == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failed %v, retry %v, pending retries %v", failed, retry, pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sent := metricValue(t, srv, "patchd_alert_deliveries_total", map[string]string{"channel": "webhook", "outcome": "sent"}); sent != 0 {
		t.Fatalf("sent %v", sent)
	}
	cancel()
	<-done
}
