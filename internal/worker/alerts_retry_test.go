package worker_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/admin"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/worker"
)

// downReceiver answers 503 to its first down calls, then 204, and records
// the events it accepted.
type downReceiver struct {
	srv   *httptest.Server
	down  atomic.Int32
	calls atomic.Int32
	mu    sync.Mutex
	got   map[string]int
}

func newDownReceiver(t *testing.T, down int) *downReceiver {
	r := &downReceiver{got: map[string]int{}}
	r.down.Store(int32(down))
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.calls.Add(1)
		body, _ := io.ReadAll(req.Body)
		if r.down.Add(-1) >= 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var m alerts.Message
		json.Unmarshal(body, &m)
		r.mu.Lock()
		r.got[m.ID]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *downReceiver) accepted() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.got {
		out[k] = v
	}
	return out
}

// counter counts the deliverer's results as the Prometheus counter does.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) count(channel, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[channel+"/"+result]++
}

func (c *counter) get(key string) int { c.mu.Lock(); defer c.mu.Unlock(); return c.n[key] }

func retryRule(t *testing.T, s *store.Store, org store.Org, url string, minutes int) store.AlertRule {
	t.Helper()
	return createRule(t, s, org, alerts.Rule{Name: "hook", Trigger: alerts.NewEndpoint, WebhookURL: url, WebhookRetryMinutes: minutes})
}

func fastRetries(s *store.Store, holder string, roots *x509.CertPool, c *counter) *worker.AlertDeliverer {
	return &worker.AlertDeliverer{Store: s, Holder: holder, AllowPrivate: true, WebhookTLS: &tls.Config{RootCAs: roots},
		Timeout: 5 * time.Second, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond, Counted: c.count}
}

// A receiver down for its first attempts gets every event exactly once
// when it comes back, from two replicas sharing the outbox.
func TestAlertWebhookRetriedUntilReceived(t *testing.T) {
	t.Parallel()
	s, org := storeOnly(t)
	const down, events = 7, 3
	recv := newDownReceiver(t, down)
	roots := trusting(recv.srv)
	ctx := context.Background()
	r := retryRule(t, s, org, recv.srv.URL, 10)
	if r.WebhookRetryMinutes != 10 {
		t.Fatalf("rule %+v", r)
	}
	for range events {
		if _, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var c counter
	var wg sync.WaitGroup
	for i := range 2 {
		d := fastRetries(s, fmt.Sprintf("replica-%d", i), roots, &c)
		wg.Go(func() {
			for deadline := time.Now().Add(2 * time.Minute); len(recv.accepted()) < events && time.Now().Before(deadline); {
				if err := d.DeliverPending(ctx); err != nil {
					t.Error(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			d.Wait()
		})
	}
	wg.Wait()
	got := recv.accepted()
	if len(got) != events {
		t.Fatalf("%d of %d events received: %v", len(got), events, got)
	}
	for id, n := range got {
		if n != 1 {
			t.Fatalf("event %s received %d times", id, n)
		}
	}
	if n := recv.calls.Load(); n != down+events {
		t.Fatalf("%d calls: %d refused and %d events", n, down, events)
	}
	if c.get("webhook/retry") != down || c.get("webhook/sent") != events || c.get("webhook/failed") != 0 {
		t.Fatalf("counted %v", c.n)
	}
	evs, err := s.ListAlertEvents(ctx, org.ID, r.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.WebhookOutcome == nil || *ev.WebhookOutcome != "HTTP 204" {
			t.Fatalf("event %+v", ev)
		}
	}
	if n, err := s.PendingRetries(ctx); err != nil || n != 0 {
		t.Fatalf("pending retries %d %v", n, err)
	}
	failed, err := s.ListFailedDeliveries(ctx, org.ID, r.ID, 10)
	if err != nil || len(failed) != 0 {
		t.Fatalf("failed %+v %v", failed, err)
	}
}

// A failed attempt waits for its back-off: no replica takes it earlier,
// and the pending-retries gauge counts it meanwhile.
func TestAlertWebhookRetryWaitsForBackoff(t *testing.T) {
	t.Parallel()
	s, org := storeOnly(t)
	recv := newDownReceiver(t, 1)
	roots := trusting(recv.srv)
	ctx := context.Background()
	r := retryRule(t, s, org, recv.srv.URL, 60)
	if _, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	var c counter
	// A back-off of 20 minutes (±4) is still due within the rule's hour.
	d := &worker.AlertDeliverer{Store: s, Holder: "a", AllowPrivate: true, WebhookTLS: &tls.Config{RootCAs: roots}, Counted: c.count,
		RetryBase: 20 * time.Minute, RetryMax: 20 * time.Minute}
	if err := d.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	if n, err := s.PendingRetries(ctx); err != nil || n != 1 {
		t.Fatalf("pending retries %d %v", n, err)
	}
	// Before the back-off ends, a look finds nothing.
	if err := d.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	if n := recv.calls.Load(); n != 1 {
		t.Fatalf("%d calls before the back-off ended", n)
	}
	evs, err := s.ListAlertEvents(ctx, org.ID, r.ID, 10)
	if err != nil || len(evs) != 1 || evs[0].WebhookOutcome == nil || !strings.Contains(*evs[0].WebhookOutcome, "HTTP 503 (attempt 1; retrying)") {
		t.Fatalf("events %+v %v", evs, err)
	}
	// Past the back-off, the next look delivers it.
	if ids, err := s.PendingDeliveries(ctx, time.Now().Add(15*time.Minute), 10); err != nil || len(ids) != 0 {
		t.Fatalf("pending before the back-off ends %v %v", ids, err)
	}
	ids, err := s.PendingDeliveries(ctx, time.Now().Add(25*time.Minute), 10)
	if err != nil || len(ids) != 1 {
		t.Fatalf("pending after the back-off %v %v", ids, err)
	}
	if c.get("webhook/retry") != 1 {
		t.Fatalf("counted %v", c.n)
	}
}

// The default rule (webhookRetryMinutes 0) tries once; the failed delivery
// is listed, and sending it again queues a new delivery of the same event,
// audited, which reaches the receiver once it is back.
func TestAlertDefaultRuleDoesNotRetryAndSendAgain(t *testing.T) {
	t.Parallel()
	s, org := storeOnly(t)
	recv := newDownReceiver(t, 1)
	roots := trusting(recv.srv)
	ctx := context.Background()
	r := retryRule(t, s, org, recv.srv.URL, 0)
	ev, err := s.TestAlertRule(ctx, org.ID, r.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var c counter
	d := fastRetries(s, "a", roots, &c)
	for range 20 {
		if err := d.DeliverPending(ctx); err != nil {
			t.Fatal(err)
		}
		d.Wait()
		time.Sleep(10 * time.Millisecond)
	}
	if n := recv.calls.Load(); n != 1 {
		t.Fatalf("the default rule called the receiver %d times", n)
	}
	if c.get("webhook/failed") != 1 || c.get("webhook/retry") != 0 {
		t.Fatalf("counted %v", c.n)
	}
	failed, err := s.ListFailedDeliveries(ctx, org.ID, r.ID, 10)
	if err != nil || len(failed) != 1 || failed[0].EventID != ev.ID || failed[0].Error != "HTTP 503" || failed[0].Attempts != 1 {
		t.Fatalf("failed %+v %v", failed, err)
	}
	if n, err := s.PendingRetries(ctx); err != nil || n != 0 {
		t.Fatalf("pending retries %d %v", n, err)
	}
	// Another organization's rule cannot send it again.
	other, _ := storeOnlyOrg(t, s)
	if _, err := s.ResendDelivery(ctx, &store.AuditEntry{OrgID: other.ID, Actor: "eve", Action: "alert.resend", TargetType: "alert"},
		other.ID, r.ID, failed[0].ID, time.Now()); err == nil {
		t.Fatal("resent across organizations")
	}
	e := &store.AuditEntry{OrgID: org.ID, Actor: "ops", Action: "alert.resend", TargetType: "alert"}
	if _, err := s.ResendDelivery(ctx, e, org.ID, r.ID, failed[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	// Only once: the failed delivery was answered.
	if _, err := s.ResendDelivery(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "ops", Action: "alert.resend", TargetType: "alert"},
		org.ID, r.ID, failed[0].ID, time.Now()); err == nil {
		t.Fatal("resent twice")
	}
	audit, err := s.ListAudit(ctx, org.ID, store.AuditFilter{Action: "alert.resend"})
	if err != nil || len(audit) != 1 || audit[0].Actor != "ops" || audit[0].TargetID != r.ID {
		t.Fatalf("audit %+v %v", audit, err)
	}
	if err := d.DeliverPending(ctx); err != nil {
		t.Fatal(err)
	}
	d.Wait()
	if got := recv.accepted(); len(got) != 1 || got[ev.ID] != 1 {
		t.Fatalf("received %v", got)
	}
	if failed, err := s.ListFailedDeliveries(ctx, org.ID, r.ID, 10); err != nil || len(failed) != 0 {
		t.Fatalf("failed %+v %v", failed, err)
	}
	if c.get("webhook/sent") != 1 {
		t.Fatalf("counted %v", c.n)
	}
}

func storeOnlyOrg(t *testing.T, s *store.Store) (store.Org, error) {
	org, err := admin.CreateOrg(context.Background(), s, "Other "+apitest.NewName(), "UTC")
	if err != nil {
		t.Fatal(err)
	}
	return org, nil
}
