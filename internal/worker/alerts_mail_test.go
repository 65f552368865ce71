package worker_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/apiv1"
	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/config"
	"github.com/patchd/patchd/internal/store"
	"github.com/patchd/patchd/internal/worker"
)

// TestAlertEmailSenderWithName: --smtp-from with a display name ("patchd
// alerts <patchd@example.com>") reaches a real SMTP server (Mailpit) with
// the address alone as the envelope's sender (MAIL FROM) and the whole as
// the From header. The whole string was sent as MAIL FROM, which Mailpit
// refuses (501), and no alert e-mail ever left.
func TestAlertEmailSenderWithName(t *testing.T) {
	t.Parallel()
	mp := apitest.StartMailpit(t)
	e := apitest.New(t, func(c *config.Config) {
		c.SMTP = config.SMTP{Addr: mp.SMTP, From: "patchd alerts <patchd@example.com>", TLS: worker.SMTPNone, Retry: time.Hour}
	})
	ctx := context.Background()
	res, err := e.Admin.CreateAlertRule(ctx, apiv1.AlertRuleBody{Name: "mail", Trigger: "NEW_ENDPOINT", EmailTo: ptr("ops@example.com")})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.Admin.TestAlertRule(ctx, res.Rule.ID)
	if err != nil {
		t.Fatal(err)
	}
	outcome := emailOutcome(t, e.Store, e.Org.ID, res.Rule.ID, ev.ID, func(o string) bool { return !strings.Contains(o, "retrying") })
	if outcome != "sent" {
		t.Fatalf("the e-mail's outcome: %q", outcome)
	}
	msgs := mp.Messages()
	if len(msgs) != 1 {
		t.Fatalf("Mailpit holds %d messages", len(msgs))
	}
	m := msgs[0]
	if m.ReturnPath != "patchd@example.com" || m.From.Address != "patchd@example.com" || m.From.Name != "patchd alerts" ||
		len(m.To) != 1 || m.To[0].Address != "ops@example.com" || !strings.HasPrefix(m.Subject, "[patchd] ") {
		t.Fatalf("message %+v", m)
	}
	if from := mp.Headers(m.ID)["From"]; len(from) != 1 || from[0] != `"patchd alerts" <patchd@example.com>` {
		t.Fatalf("From header %q", from)
	}
}

// emailOutcome waits (a minute at most) for the event's e-mail outcome to
// satisfy done, and answers it.
func emailOutcome(t *testing.T, s *store.Store, orgID, ruleID, eventID string, done func(string) bool) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		evs, err := s.ListAlertEvents(context.Background(), orgID, ruleID, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.ID == eventID && ev.EmailOutcome != nil {
				if last = *ev.EmailOutcome; done(last) {
					return last
				}
			}
		}
	}
	t.Fatalf("the e-mail of event %s: outcome %q after a minute", eventID, last)
	return ""
}

func mailRule(t *testing.T, s *store.Store, org store.Org) store.AlertRule {
	t.Helper()
	return createRule(t, s, org, alerts.Rule{Name: "mail", Trigger: alerts.NewEndpoint, EmailTo: "ops@example.com, oncall@example.com"})
}

// mailTestEvent starts Mailpit and a store whose organization has an
// e-mail alert rule (mailRule), and raises a TEST event of the rule, to be
// delivered.
func mailTestEvent(t *testing.T) (*apitest.Mailpit, *store.Store, store.Org, store.AlertRule, store.AlertEvent) {
	t.Helper()
	mp := apitest.StartMailpit(t)
	s, org := storeOnly(t)
	r := mailRule(t, s, org)
	ev, err := s.TestAlertRule(context.Background(), org.ID, r.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return mp, s, org, r, ev
}

// mailDeliverer delivers through addr with fast back-offs.
func mailDeliverer(s *store.Store, addr string, c *counter) *worker.AlertDeliverer {
	return &worker.AlertDeliverer{Store: s, Holder: "mail", Counted: c.count, RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond,
		Mailer: &worker.Mailer{Addr: addr, From: "patchd alerts <patchd@example.com>", TLS: worker.SMTPNone, Timeout: 30 * time.Second}}
}

// deliverUntil runs the deliverer's passes until done says so (a minute at
// most), as its Run loop would.
func deliverUntil(t *testing.T, d *worker.AlertDeliverer, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !done(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not done within a minute")
		}
		if err := d.DeliverPending(context.Background()); err != nil {
			t.Fatal(err)
		}
		d.Wait()
	}
}

// TestAlertEmailRetriedUntilAccepted: an e-mail refused for now (a server
// not reachable, then Mailpit answering MAIL FROM with 451) goes back to
// the outbox with a back-off, and is sent once the server takes it: it
// arrives once, and nothing is listed as failed. E-mail had no retries: a
// passing SMTP outage lost every alert sent meanwhile.
func TestAlertEmailRetriedUntilAccepted(t *testing.T) {
	t.Parallel()
	mp, s, org, r, ev := mailTestEvent(t)
	ctx := context.Background()
	var c counter
	// Nothing listens: refused for now.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	down := mailDeliverer(s, closed, &c)
	deliverUntil(t, down, func() bool { return c.get("email/retry") >= 2 })
	if n, err := s.PendingRetries(ctx); err != nil || n != 1 {
		t.Fatalf("pending retries %d %v, want 1", n, err)
	}
	// The server answers, but refuses the sender for now.
	mp.Chaos(apitest.MailpitTrigger{ErrorCode: 451, Probability: 100}, apitest.MailpitTrigger{})
	d := mailDeliverer(s, mp.SMTP, &c)
	retries := c.get("email/retry")
	deliverUntil(t, d, func() bool { return c.get("email/retry") >= retries+2 })
	if o := emailOutcome(t, s, org.ID, r.ID, ev.ID, func(string) bool { return true }); !strings.Contains(o, "451") || !strings.Contains(o, "retrying") {
		t.Fatalf("the outcome while refused for now: %q", o)
	}
	// The server takes it again.
	mp.Chaos(apitest.MailpitTrigger{}, apitest.MailpitTrigger{})
	deliverUntil(t, d, func() bool { return c.get("email/sent") == 1 })
	if o := emailOutcome(t, s, org.ID, r.ID, ev.ID, func(string) bool { return true }); o != "sent" {
		t.Fatalf("outcome %q", o)
	}
	if msgs := mp.Messages(); len(msgs) != 1 || len(msgs[0].To) != 2 || !strings.Contains(msgs[0].Text, ev.ID) {
		t.Fatalf("Mailpit holds %+v", msgs)
	}
	if c.get("email/failed") != 0 {
		t.Fatalf("counted %v", c.n)
	}
	if failed, err := s.ListFailedDeliveries(ctx, org.ID, r.ID, 10); err != nil || len(failed) != 0 {
		t.Fatalf("failed %+v %v", failed, err)
	}
	if n, err := s.PendingRetries(ctx); err != nil || n != 0 {
		t.Fatalf("pending retries %d %v", n, err)
	}
}

// TestAlertEmailRefusedForGood: a recipient Mailpit refuses with 550 is a
// final answer: one attempt, recorded failed with the server's reply in
// the rule's failed deliveries, where "Send again" delivers it once the
// server takes it.
func TestAlertEmailRefusedForGood(t *testing.T) {
	t.Parallel()
	mp, s, org, r, ev := mailTestEvent(t)
	ctx := context.Background()
	mp.Chaos(apitest.MailpitTrigger{}, apitest.MailpitTrigger{ErrorCode: 550, Probability: 100})
	var c counter
	d := mailDeliverer(s, mp.SMTP, &c)
	deliverUntil(t, d, func() bool { return c.get("email/failed") == 1 })
	for range 5 { // nothing more is tried
		if err := d.DeliverPending(ctx); err != nil {
			t.Fatal(err)
		}
		d.Wait()
	}
	if c.get("email/retry") != 0 || c.get("email/failed") != 1 {
		t.Fatalf("counted %v", c.n)
	}
	failed, err := s.ListFailedDeliveries(ctx, org.ID, r.ID, 10)
	if err != nil || len(failed) != 1 || failed[0].EventID != ev.ID || failed[0].Attempts != 1 || !strings.Contains(failed[0].Error, "550") {
		t.Fatalf("failed %+v %v", failed, err)
	}
	if o := emailOutcome(t, s, org.ID, r.ID, ev.ID, func(string) bool { return true }); !strings.Contains(o, "550") {
		t.Fatalf("outcome %q", o)
	}
	mp.Chaos(apitest.MailpitTrigger{}, apitest.MailpitTrigger{})
	if _, err := s.ResendDelivery(ctx, &store.AuditEntry{OrgID: org.ID, Actor: "ops", Action: "alert.resend", TargetType: "alert"},
		org.ID, r.ID, failed[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	deliverUntil(t, d, func() bool { return c.get("email/sent") == 1 })
	if msgs := mp.Messages(); len(msgs) != 1 {
		t.Fatalf("Mailpit holds %d messages", len(msgs))
	}
}
