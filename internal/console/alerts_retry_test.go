package console_test

import (
	"context"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/apitest"
	"github.com/patchd/patchd/internal/store"
)

// The rule form sets webhookRetryMinutes; the rule's page lists a failed
// delivery with its error and "Send again" queues it again, audited.
func TestAlertRetryMinutesAndSendAgain(t *testing.T) {
	e := apitest.New(t)
	ctx := context.Background()
	b := adminBrowser(t, e)

	b.get("/console/alerts")
	code, loc, _ := b.post("/console/alerts", url.Values{"name": {"Retried"}, "trigger": {"NEW_ENDPOINT"},
		"webhookUrl": {"https://hooks.example.com/new"}, "webhookRetryMinutes": {"30"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create: %d %s", code, loc)
	}
	id := strings.TrimPrefix(loc, "/console/alerts/")
	if rule, err := e.Store.GetAlertRule(ctx, e.Org.ID, id); err != nil || rule.WebhookRetryMinutes != 30 {
		t.Fatalf("rule %+v %v", rule, err)
	}
	if _, body := b.get("/console/alerts/" + id); !strings.Contains(body, "for 30 minutes, with back-off") {
		t.Errorf("the page does not show the retries\n%.2000s", body)
	}
	if code, _, body := b.post("/console/alerts/"+id, url.Values{"name": {"Retried"}, "trigger": {"NEW_ENDPOINT"},
		"webhookUrl": {"https://hooks.example.com/new"}, "webhookRetryMinutes": {"5000"}}); code < 400 || code > 499 ||
		!strings.Contains(body, "Retry failed webhooks for: must be a whole number of minutes from 0") {
		t.Errorf("out of range: %d\n%.2000s", code, body)
	}

	// A rule that does not retry, to a receiver that refuses connections.
	code, loc, _ = b.post("/console/alerts", url.Values{"name": {"Once"}, "trigger": {"NEW_ENDPOINT"}, "webhookUrl": {"https://127.0.0.1:1/down"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create: %d %s", code, loc)
	}
	once := strings.TrimPrefix(loc, "/console/alerts/")
	b.get("/console/alerts/" + once)
	if code, _, _ := b.post("/console/alerts/"+once+"/test", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("test: %d", code)
	}
	var failed []store.FailedDelivery
	for deadline := time.Now().Add(time.Minute); len(failed) == 0; time.Sleep(100 * time.Millisecond) {
		var err error
		if failed, err = e.Store.ListFailedDeliveries(ctx, e.Org.ID, once, 10); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the delivery did not fail")
		}
	}
	_, body := b.get("/console/alerts/" + once)
	if !strings.Contains(body, `id="failed-deliveries"`) || !strings.Contains(body, template.HTMLEscapeString(failed[0].Error)) || !strings.Contains(body, "Send again") {
		t.Fatalf("the failed delivery is not shown\n%.3000s", body)
	}
	resend := "/console/alerts/" + once + "/deliveries/" + failed[0].ID + "/resend"
	if code, _, _ := b.post(resend, url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("send again: %d", code)
	}
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "alert.resend", Actor: "user:alice@example.com"}); len(entries) != 1 ||
		entries[0].TargetID != once {
		t.Errorf("send again not audited as the user: %+v", entries)
	}
	// Sent again once: a second press, or the delivery under another rule,
	// is refused with a message and changes nothing.
	b.post(resend, url.Values{})
	if _, body := b.get("/console/alerts/" + once); !strings.Contains(body, "That delivery was sent again already.") {
		t.Errorf("a second press is not refused\n%.3000s", body)
	}
	b.post("/console/alerts/"+id+"/deliveries/"+failed[0].ID+"/resend", url.Values{})
	if entries, _ := e.Store.ListAudit(ctx, e.Org.ID, store.AuditFilter{Action: "alert.resend"}); len(entries) != 1 {
		t.Errorf("refused presses were audited: %+v", entries)
	}
}
