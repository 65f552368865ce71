package cli

import (
	"context"
	"testing"
	"time"

	"github.com/patchd/patchd/internal/alerts"
	"github.com/patchd/patchd/internal/store"
)

func TestAdminAlerts(t *testing.T) {
	t.Parallel()
	c := newCLITest(t)
	c.neverPrints = "s3cret"
	ok, fail := c.ok, c.fail
	org := ok("", "admin", "org", "create", "--name", "Acme")
	ctx := context.Background()
	s := c.open()
	in := alerts.Rule{Name: "Offline", Trigger: alerts.EndpointOffline, EmailTo: "ops@example.com", WebhookURL: "https://hooks.example.com/x", WebhookSecret: "s3cret"}
	if err := in.Check(); err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateAlertRule(ctx, &store.AuditEntry{OrgID: org["id"].(string), Actor: "test", Action: "alert.create", TargetType: "alert"}, org["id"].(string), in, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	list := ok("", "admin", "alert", "list", "--org", "Acme")
	if list["total"].(float64) != 1 {
		t.Fatalf("list %v", list)
	}
	up := ok("", "admin", "alert", "update", "--org", "Acme", "--id", r.ID, "--threshold", "30", "--email-to", "")
	if up["threshold"].(float64) != 30 || up["emailTo"] != nil || up["hasWebhookSecret"] != true || up["name"] != "Offline" {
		t.Fatalf("update %v", up)
	}
	fail("webhookUrl", "admin", "alert", "update", "--org", "Acme", "--id", r.ID, "--webhook-url", "http://plain.example.com")
	fail("threshold", "admin", "alert", "update", "--org", "Acme", "--id", r.ID, "--threshold", "0")
	if up := ok("", "admin", "alert", "update", "--org", "Acme", "--id", r.ID, "--retry-minutes", "120"); up["webhookRetryMinutes"].(float64) != 120 || up["threshold"].(float64) != 30 {
		t.Fatalf("retry minutes %v", up)
	}
	fail("webhookRetryMinutes", "admin", "alert", "update", "--org", "Acme", "--id", r.ID, "--retry-minutes", "1441")
	if f := ok("", "admin", "alert", "failed", "--org", "Acme", "--id", r.ID); f["total"].(float64) != 0 {
		t.Fatalf("failed %v", f)
	}
	fail("not found", "admin", "alert", "resend", "--org", "Acme", "--id", r.ID, "--delivery", "nope")
	fail("--delivery", "admin", "alert", "resend", "--org", "Acme", "--id", r.ID)
	if d := ok("", "admin", "alert", "disable", "--org", "Acme", "--id", r.ID); d["enabled"] != false {
		t.Fatalf("disable %v", d)
	}
	if d := ok("", "admin", "alert", "enable", "--org", "Acme", "--id", r.ID); d["enabled"] != true {
		t.Fatalf("enable %v", d)
	}
	if ev := ok("", "admin", "alert", "test", "--org", "Acme", "--id", r.ID); ev["event"] != alerts.EventTest {
		t.Fatalf("test %v", ev)
	}
	if evs := ok("", "admin", "alert", "events", "--org", "Acme", "--id", r.ID); evs["total"].(float64) != 1 {
		t.Fatalf("events %v", evs)
	}
	if up := ok("", "admin", "alert", "update", "--org", "Acme", "--id", r.ID, "--webhook-secret", ""); up["hasWebhookSecret"] != false || up["events"].(float64) != 1 {
		t.Fatalf("secret removed: %v", up)
	}
	if d := ok("", "admin", "alert", "delete", "--org", "Acme", "--id", r.ID); d["deleted"] != true {
		t.Fatalf("delete %v", d)
	}
	fail("not found", "admin", "alert", "delete", "--org", "Acme", "--id", r.ID)
	fail("--id", "admin", "alert", "test", "--org", "Acme")
}
